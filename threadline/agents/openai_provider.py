"""A model provider for any OpenAI-compatible Chat Completions API, through the `openai` SDK.

OpenAI itself, or anything that speaks its wire format at another `base_url`: Ollama, vLLM,
llama.cpp's server, LM Studio, OpenRouter. Requests are rendered deterministically (sorted
tool schemas and arguments), so servers that cache prompt prefixes see the same bytes.

Failures become Threadline errors, as in the Anthropic provider: still rate limited,
overloaded or unreachable after the SDK's own retries (429, 408, 409 and 5xx with backoff that
honours `retry-after`), or past the total timeout -> `ModelUnavailableError`; a rejected key,
an exhausted quota, a rejected request or a reply that cannot be read -> `ModelError`.

Replies stream as server-sent events by default (`stream`), so `stream()` hands the text over
as it is written: tool calls are assembled from their deltas, the usage comes from the chunk
that carries it (OpenAI: a last chunk without choices; vLLM: every chunk, running totals;
llama.cpp: a last chunk beside its `timings`; Ollama: the chunk with the finish reason), and
reasoning (`reasoning_content`, or Ollama's `reasoning`) is kept with the tool calls it
preceded, to be sent back within the round.

Usage figures follow the Anthropic convention the rest of Threadline reads: `input_tokens` are
the prompt tokens not read from or written to the cache; `cache_read_input_tokens` are the
cached ones (`prompt_tokens_details.cached_tokens`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx2
import structlog
from openai import (
    APIConnectionError,
    APIStatusError,
    AsyncOpenAI,
    AuthenticationError,
    DefaultAsyncHttpxClient,
    OpenAIError,
    PermissionDeniedError,
)

from threadline.agents.call_failures import (
    Words,
    broken_reply,
    rejected_credentials,
    short,
    status_failure,
    unreachable,
    within,
)
from threadline.agents.convert import to_openai
from threadline.agents.llm import ModelRequest, ModelResponse, ModelUsage, TextSink, ToolSpec
from threadline.agents.providers import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    ProviderPlug,
    ProviderSettings,
)
from threadline.errors import ConfigError, ModelError, ThreadlineError
from threadline.history.model import Reasoning, ToolCall
from threadline.tracing import spans as tracing

log = structlog.get_logger(__name__)

# Local servers want no key, but the SDK refuses to start without one.
NO_KEY = "no-key"
TokenLimitParameter = Literal["max_tokens", "max_completion_tokens"]
_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use",
                 "function_call": "tool_use"}


class OpenAIProvider:
    """A `ModelProvider` backed by an OpenAI-compatible Chat Completions API.

    `client` defaults to `AsyncOpenAI(api_key=..., base_url=...)`, which falls back to
    `OPENAI_BASE_URL` and `OPENAI_API_KEY`; but a `base_url` given here is another vendor's
    server, which never gets `OPENAI_API_KEY`: it gets `api_key`, or a placeholder (a local
    server needs none). `max_retries` is how often the SDK retries with backoff (None
    keeps a given client's own setting; a default client gets 4). `timeout` bounds one whole
    `complete` call, retries included. `token_limit_parameter` names the reply limit field:
    OpenAI's own API wants `max_completion_tokens` (its reasoning models refuse `max_tokens`),
    most other servers know only `max_tokens`; by default the first is sent to OpenAI and the
    second to any other `base_url`. `stream` reads replies as server-sent events, asking for
    the usage in the stream; turn it off for servers or gateways that do not stream (`stream()`
    then reports no text before the reply is whole).
    """

    provider_name = "openai"  # `gen_ai.provider.name` on its traces

    def __init__(
        self,
        client: AsyncOpenAI | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        token_limit_parameter: TokenLimitParameter | None = None,
        stream: bool = True,
    ) -> None:
        if client is None:
            if api_key is None and base_url:
                api_key = NO_KEY
            try:
                client = AsyncOpenAI(
                    api_key=api_key, base_url=base_url, timeout=timeout,
                    max_retries=DEFAULT_MAX_RETRIES if max_retries is None else max_retries,
                    # The SDK traces nothing itself: each attempt (a retried 429) is an event
                    # on the call's span when tracing is on.
                    http_client=DefaultAsyncHttpxClient(
                        event_hooks={"response": [tracing.http_attempt]}))
            except OpenAIError as exc:
                raise ConfigError(
                    f"the OpenAI client could not start ({exc}). Set OPENAI_API_KEY (or the "
                    "provider's api_key), or give a base_url for a server that needs no key."
                ) from exc
        elif max_retries is not None:
            client = client.with_options(max_retries=max_retries)
        self._client = client
        self._timeout = timeout
        self._stream = stream
        official = client.base_url.host == "api.openai.com"
        self._token_limit: TokenLimitParameter = token_limit_parameter or (
            "max_completion_tokens" if official else "max_tokens")

    @property
    def client(self) -> AsyncOpenAI:
        return self._client

    @property
    def base_url(self) -> str:
        return str(self._client.base_url)

    def render(self, request: ModelRequest) -> dict[str, Any]:
        """The Chat Completions parameters for a request; the same request renders the same
        bytes."""
        params: dict[str, Any] = {
            "model": request.model,
            "messages": to_openai(request.messages, system=request.system),
            self._token_limit: request.max_tokens,
        }
        if request.tools:
            params["tools"] = [_tool_param(spec) for spec in request.tools]
        return params

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await self._call(request, None)

    async def stream(self, request: ModelRequest, *, on_text: TextSink) -> ModelResponse:
        return await self._call(request, on_text)

    async def _call(self, request: ModelRequest, on_text: TextSink | None) -> ModelResponse:
        params = self.render(request)
        bound = log.bind(model=request.model, base_url=self.base_url)
        words = self._words(request.model)
        response = await within(self._timeout, self._send(params, on_text), words=words,
                                log=bound, failure=lambda exc: self._failure(words, exc))
        bound.debug("model_replied", stop_reason=response.stop_reason,
                    input_tokens=response.usage.input_tokens,
                    cache_read=response.usage.cache_read_input_tokens)
        return response

    async def _send(self, params: dict[str, Any], on_text: TextSink | None) -> ModelResponse:
        create = self._client.chat.completions.create
        if not self._stream:
            return _response(await create(**params, timeout=self._timeout))
        chunks = await create(**params, stream=True, stream_options={"include_usage": True},
                              timeout=self._timeout)
        reply = _StreamedReply()
        async for chunk in chunks:
            if reply.add(chunk) and on_text is not None:
                await on_text(reply.text)
        return reply.response()

    def _words(self, model: str) -> Words:
        where = f"model {model!r} at {self.base_url}"
        return Words(subject=where, by="the server", model=where,
                     credentials="Set OPENAI_API_KEY (or the provider's api_key) to a valid "
                                 "key.",
                     reach="Check that the server runs and the base_url",
                     rejected="Check the model name and that the server supports tools")

    def _failure(self, words: Words, exc: Exception) -> ModelError:
        """The Threadline error for a failed call (`threadline.agents.call_failures`)."""
        retries = self._client.max_retries
        if isinstance(exc, APIStatusError):
            detail = f"{exc.status_code} {exc.code or exc.type or 'error'}: {_api_message(exc)}"
            if isinstance(exc, AuthenticationError | PermissionDeniedError):
                return rejected_credentials(words, detail)
            if exc.code == "insufficient_quota":
                return ModelError(
                    f"the account behind {words.model} has no quota left ({detail}). Add "
                    "credit or raise the limit; retrying will not help."
                )
            return status_failure(words, status=exc.status_code, detail=detail,
                                  retries=retries)
        if isinstance(exc, APIConnectionError):
            return unreachable(words, detail=exc.message, retries=retries)
        return broken_reply(words, exc, transport=isinstance(exc, httpx2.TransportError))


def _tool_param(spec: ToolSpec) -> dict[str, Any]:
    # Sorted keys, so a schema built in any order renders the same bytes.
    schema = json.loads(json.dumps(spec.input_schema, sort_keys=True))
    return {"type": "function", "function": {
        "name": spec.name, "description": spec.description, "parameters": schema}}


def _response(completion: Any) -> ModelResponse:
    """Our response from the SDK's completion; a shape we do not know raises for `_failure`."""
    if not completion.choices:
        raise TypeError("the completion has no choices")
    choice = completion.choices[0]
    message = choice.message
    calls = [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or ()]
    return _reply(model=completion.model, text=message.content or "", calls=calls,
                  finish_reason=choice.finish_reason, usage=completion.usage,
                  reasoning=_reasoning_text(message), response_id=completion.id)


def _reasoning_text(part: Any) -> str:
    """The reasoning a message or delta carries: `reasoning_content` (vLLM, llama.cpp,
    DeepSeek) or `reasoning` (Ollama), both fields beyond OpenAI's own."""
    value = getattr(part, "reasoning_content", None) or getattr(part, "reasoning", None)
    return value if isinstance(value, str) else ""


@dataclass(slots=True)
class _StreamedReply:
    """A reply assembled from its stream's chunks, whichever server's shape they have."""

    text: str = ""
    reasoning: str = ""
    model: str = ""
    id: str = ""
    finish_reason: str | None = None
    usage: Any = None
    calls: dict[int, list[str]] = field(default_factory=dict)  # index -> [id, name, arguments]

    def add(self, chunk: Any) -> bool:
        """Take one chunk in; True when the reply's text grew."""
        self.model = chunk.model or self.model
        self.id = getattr(chunk, "id", None) or self.id
        if chunk.usage is not None:  # the last one wins: vLLM sends running totals
            self.usage = chunk.usage
        grew = False
        for choice in chunk.choices or ():
            delta = choice.delta
            if delta is not None:
                if delta.content:
                    self.text += delta.content
                    grew = True
                self.reasoning += _reasoning_text(delta)
                for piece in delta.tool_calls or ():
                    call = self.calls.setdefault(piece.index, ["", "", ""])
                    call[0] = piece.id or call[0]
                    if piece.function is not None:
                        call[1] = piece.function.name or call[1]
                        call[2] += piece.function.arguments or ""
            self.finish_reason = choice.finish_reason or self.finish_reason
        return grew

    def response(self) -> ModelResponse:
        if self.finish_reason is None and not self.text and not self.calls:
            raise TypeError("the stream ended before any reply or finish reason")
        calls = [(c[0], c[1], c[2]) for _, c in sorted(self.calls.items())]
        return _reply(model=self.model, text=self.text, calls=calls,
                      finish_reason=self.finish_reason, usage=self.usage,
                      reasoning=self.reasoning, response_id=self.id)


def _reply(*, model: str | None, text: str, calls: Sequence[tuple[str, str, str | None]],
           finish_reason: str | None, usage: Any, reasoning: str,
           response_id: str | None) -> ModelResponse:
    """The response from a reply's parts, streamed or not; the reasoning goes with the first
    tool call (OpenAI's format writes all of it before the calls)."""
    thought = (Reasoning("openai", {"reasoning_content": reasoning}),) if reasoning else ()
    tool_calls: list[ToolCall] = []
    for number, (call_id, name, raw) in enumerate(calls):
        try:
            arguments = json.loads(raw or "{}")
        except ValueError as exc:
            raise ModelError(
                f"model {model!r} asked for tool {name!r} with arguments that are not JSON "
                f"({short(raw or '')!r}). Local models do this when they do not support tools "
                "well; try another model."
            ) from exc
        if not isinstance(arguments, dict):
            raise TypeError(f"tool call {call_id} arguments are not an object: {arguments!r}")
        if not call_id or not name:
            raise TypeError(f"tool call {number} came without an id or a name")
        tool_calls.append(ToolCall(id=call_id, name=name, input=arguments,
                                   reasoning=thought if number == 0 else ()))
    stop_reason = "tool_use" if tool_calls else _STOP_REASONS.get(
        finish_reason or "", finish_reason or "end_turn")
    return ModelResponse(text=text, tool_calls=tuple(tool_calls), stop_reason=stop_reason,
                         usage=_usage(usage), model=model or "", reasoning=thought,
                         id=response_id or "")


def _usage(usage: Any) -> ModelUsage:
    if usage is None:  # some servers leave it out
        return ModelUsage()
    details = usage.prompt_tokens_details
    cached = (details.cached_tokens or 0) if details is not None else 0
    written = (getattr(details, "cache_write_tokens", None) or 0) if details is not None else 0
    return ModelUsage(input_tokens=max((usage.prompt_tokens or 0) - cached - written, 0),
                      output_tokens=usage.completion_tokens or 0,
                      cache_read_input_tokens=cached, cache_creation_input_tokens=written)


def _api_message(exc: APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return short(body["message"])
    return short(exc.message)


# -- the plug -----------------------------------------------------------------------------------


class OpenAISettings(ProviderSettings):
    """`provider: openai`: any OpenAI-compatible server at `base_url` (OpenAI's own when
    unset); the key defaults to OPENAI_API_KEY, and a local server needs none."""

    type: Literal["openai"] = "openai"
    """openai: this entry is an openai provider."""
    token_limit_parameter: TokenLimitParameter | None = None
    """How the reply limit is sent: max_tokens or max_completion_tokens (default:
    max_completion_tokens for OpenAI's own API, max_tokens for other servers)."""
    stream: bool = True
    """Stream replies (server-sent events): text reaches the platform as it is written, tool
    calls are assembled from deltas; off for a server that cannot stream."""


def _build(settings: OpenAISettings) -> OpenAIProvider:
    return OpenAIProvider(api_key=settings.api_key, base_url=settings.base_url,
                          max_retries=settings.max_retries, timeout=settings.timeout,
                          token_limit_parameter=settings.token_limit_parameter,
                          stream=settings.stream)


async def _check(settings: OpenAISettings) -> str:
    """Lists the server's models with the key: proves the key and the address, costs nothing."""
    provider = OpenAIProvider(api_key=settings.api_key, base_url=settings.base_url,
                              max_retries=0)
    client = provider.client
    try:
        models = [m.id async for m in client.models.list()]
    except AuthenticationError as exc:
        raise ThreadlineError(f"{provider.base_url} refused the key (401); check "
                              "OPENAI_API_KEY or the provider's api_key") from exc
    except OpenAIError as exc:
        raise ThreadlineError(f"{provider.base_url} could not be reached: {exc}") from exc
    finally:
        await client.close()
    if settings.model and models and settings.model not in models:
        raise ThreadlineError(f"{provider.base_url} does not serve model {settings.model!r} "
                              f"(it serves {', '.join(models[:10])})")
    return f"{provider.base_url} answered; {len(models)} model(s) served"


PLUG = ProviderPlug(name="openai", settings=OpenAISettings, build=_build, check=_check,
                    key_variable="OPENAI_API_KEY", key_variable_follows_base_url=False)
