"""The default model provider: Anthropic's Messages API through the official `AsyncAnthropic` SDK.

Requests are rendered byte for byte deterministically (the converters sort tool input, tool
schemas are sorted here) with prompt-cache breakpoints on the stable prefix, in the API's cache
order (tools, system, messages): the agent's system prompt (which caches the tools before it;
the last tool carries the mark when there is no system text), the assembled system text (the
summary), a kept recall block (a `cache_point`: it stands byte-identical just before the turn
it was made for while the topic holds, `history.kept_recall`), the end of the history before
the newest turn, and the newest turn's last block. The end of the history is what keeps a chat
warm: the newest turn travels with what changes every turn (the immediate context, a new
recall block), so the next turn's prefix matches this one only up to there, or up to the kept
recall block when it stands later, and the API finds that entry within its 20-block lookback.
The last one lets the next tool round read the whole conversation so far. Four is the API's
maximum: with a recall block the agent's own prompt gives up its mark (the summary's covers it).

Failures become Threadline errors that say what happened and what to do: still rate limited,
overloaded or unreachable after the SDK's own retries (which honour `retry-after`), or past
the total timeout -> `ModelUnavailableError`; a rejected request or key, or a reply that cannot
be read -> `ModelError`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

import httpx2
import structlog
from anthropic import (
    AnthropicError,
    APIConnectionError,
    APIStatusError,
    AsyncAnthropic,
    AuthenticationError,
    CredentialsError,
    NotFoundError,
    PermissionDeniedError,
)

from threadline.agents.call_failures import (
    Words,
    broken_reply,
    rejected_credentials,
    status_failure,
    unreachable,
    within,
)
from threadline.agents.convert import to_anthropic
from threadline.agents.llm import ModelRequest, ModelResponse, ModelUsage, TextSink, ToolSpec
from threadline.agents.providers import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    ProviderPlug,
    ProviderSettings,
)
from threadline.errors import ConfigError, ModelError, ThreadlineError
from threadline.history.model import Reasoning, ToolCall

# The model an agent uses when none is named (the newest Sonnet the SDK lists), and the cheap
# one that writes summaries (asked not to think). The Claude 5 models think by default; their
# thinking blocks travel with the tool calls they preceded and are sent back within the round.
DEFAULT_MODEL = "claude-sonnet-5-5"
DEFAULT_SUMMARY_MODEL = "claude-haiku-5-5"

log = structlog.get_logger(__name__)

_EPHEMERAL = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4  # the API rejects a request with more cache_control blocks
# Error types the API uses for "not now" (as HTTP statuses or as a stream's error event).
_UNAVAILABLE_TYPES = frozenset({"rate_limit_error", "overloaded_error", "api_error"})


class AnthropicProvider:
    """A `ModelProvider` backed by Anthropic's Messages API.

    `client` defaults to the SDK's own `AsyncAnthropic(api_key=..., base_url=...)`, so
    `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL` work as users expect when those are not
    given. `max_retries` is how often the SDK retries 429/529/5xx and connection failures with
    backoff (None keeps a given client's own setting; a default client gets 4). `timeout`
    bounds one whole `complete` call in seconds, retries included. `stream` reads replies as
    server-sent events (no server-side limit on long replies, and `stream()` hands the text
    over as it arrives); turn it off for gateways that do not pass streams through (`stream()`
    then reports no text before the reply is whole).
    """

    provider_name = "anthropic"  # `gen_ai.provider.name` on its traces

    def __init__(
        self,
        client: AsyncAnthropic | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        prompt_caching: bool = True,
        stream: bool = True,
    ) -> None:
        if client is None:
            try:
                client = AsyncAnthropic(
                    api_key=api_key, base_url=base_url, timeout=timeout,
                    max_retries=DEFAULT_MAX_RETRIES if max_retries is None else max_retries)
            except CredentialsError as exc:
                raise ConfigError(
                    f"Anthropic credentials could not be loaded ({exc}). Set ANTHROPIC_API_KEY, "
                    "or fix the profile the SDK was pointed at."
                ) from exc
        elif max_retries is not None:
            client = client.with_options(max_retries=max_retries)
        self._client = client
        self._timeout = timeout
        self._prompt_caching = prompt_caching
        self._stream = stream

    def render(self, request: ModelRequest) -> dict[str, Any]:
        """The Messages API parameters for a request; the same request renders the same bytes."""
        assembled_system, messages = to_anthropic(request.messages,
                                                  mark_cache_points=self._prompt_caching)
        parts = (request.system, assembled_system)
        system: list[dict[str, Any]] = [{"type": "text", "text": p} for p in parts if p]
        tools = [_tool_param(spec) for spec in request.tools]
        if self._prompt_caching:
            prefix = system or tools[-1:]
            points = [b for m in messages for b in m["content"] if "cache_control" in b]
            ends = [b for b in [*_last_blocks(messages[-2:-1]), *_last_blocks(messages)]
                    if "cache_control" not in b]
            # At most four: a kept recall block's point outranks the agent's own prompt, whose
            # prefix the summary's breakpoint right after it covers while the summary holds.
            surplus = max(len(prefix) + len(points) + len(ends) - MAX_BREAKPOINTS, 0)
            for block in [*prefix[surplus:], *ends]:
                block["cache_control"] = dict(_EPHEMERAL)
        params: dict[str, Any] = {"model": request.model, "max_tokens": request.max_tokens,
                                  "messages": messages}
        if request.thinking == "off":
            params["thinking"] = {"type": "disabled"}
        elif isinstance(request.thinking, int):
            # The budget comes on top of the reply's limit: max_tokens must exceed it.
            params["thinking"] = {"type": "enabled", "budget_tokens": request.thinking}
            params["max_tokens"] = request.max_tokens + request.thinking
        if system:
            params["system"] = system
        if tools:
            params["tools"] = tools
        return params

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await self._call(request, None)

    async def stream(self, request: ModelRequest, *, on_text: TextSink) -> ModelResponse:
        return await self._call(request, on_text)

    async def _call(self, request: ModelRequest, on_text: TextSink | None) -> ModelResponse:
        client = self._client
        if client.api_key is None and client.auth_token is None and client.credentials is None:
            raise ModelError(
                f"no Anthropic credentials for model {request.model!r}: set ANTHROPIC_API_KEY "
                "(or pass AsyncAnthropic(api_key=...)), or run the agents on the offline model."
            )
        params = self.render(request)
        bound = log.bind(model=request.model)
        words = _words(request.model)

        async def send_and_read() -> ModelResponse:
            return _response(await self._send(params, on_text))

        response = await within(self._timeout, send_and_read(), words=words, log=bound,
                                failure=lambda exc: self._failure(words, exc))
        bound.debug("model_replied", stop_reason=response.stop_reason,
                    input_tokens=response.usage.input_tokens,
                    cache_read=response.usage.cache_read_input_tokens)
        return response

    async def _send(self, params: dict[str, Any], on_text: TextSink | None) -> Any:
        if not self._stream:
            return await self._client.messages.create(**params, timeout=self._timeout)
        async with self._client.messages.stream(**params, timeout=self._timeout) as stream:
            if on_text is not None:
                written = ""
                async for event in stream:
                    if event.type == "text" and event.text:
                        written += event.text
                        await on_text(written)
            return await stream.get_final_message()

    def _failure(self, words: Words, exc: Exception) -> ModelError:
        """The Threadline error for a failed call (`threadline.agents.call_failures`)."""
        retries = self._client.max_retries
        if isinstance(exc, CredentialsError):
            return ModelError(
                f"Anthropic credentials for {words.model} could not be loaded ({exc}). Set "
                "ANTHROPIC_API_KEY, or fix the profile the SDK was pointed at."
            )
        if isinstance(exc, APIStatusError):
            detail = f"{exc.status_code} {exc.type or 'error'}: {exc.api_message or exc.message}"
            if isinstance(exc, AuthenticationError | PermissionDeniedError):
                return rejected_credentials(words, detail)
            return status_failure(words, status=exc.status_code, detail=detail,
                                  retries=retries, overloaded=exc.type in _UNAVAILABLE_TYPES)
        if isinstance(exc, APIConnectionError):
            return unreachable(words, detail=exc.message, retries=retries)
        return broken_reply(words, exc, transport=isinstance(exc, httpx2.TransportError))


def _words(model: str) -> Words:
    return Words(subject=f"Anthropic model {model!r}", by="Anthropic", model=f"model {model!r}",
                 credentials="Set ANTHROPIC_API_KEY to a valid key, or pass a configured "
                             "AsyncAnthropic client.",
                 reach="Check the network and ANTHROPIC_BASE_URL",
                 rejected="Check the model name and the prompt that was sent")


def _tool_param(spec: ToolSpec) -> dict[str, Any]:
    # Sorted keys, so a schema built in any order renders the same bytes (cache hits).
    schema = json.loads(json.dumps(spec.input_schema, sort_keys=True))
    return {"name": spec.name, "description": spec.description, "input_schema": schema}


def _last_blocks(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    if not messages or not messages[-1]["content"]:
        return []
    return [messages[-1]["content"][-1]]


def _response(message: Any) -> ModelResponse:
    """Our response from the SDK's message; a shape we do not know raises for `_failure`."""
    if not isinstance(message.content, list):
        raise TypeError(f"content is {type(message.content).__name__}, not a list of blocks")
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[Reasoning] = []
    before_call: list[Reasoning] = []  # thinking since the last tool_use: goes with the next
    for block in message.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type in ("thinking", "redacted_thinking"):
            thought = Reasoning("anthropic", _thinking_block(block))
            reasoning.append(thought)
            before_call.append(thought)
        elif block.type == "tool_use":
            if not isinstance(block.input, dict):
                raise TypeError(f"tool_use {block.id} input is not an object: {block.input!r}")
            calls.append(ToolCall(id=block.id, name=block.name, input=block.input,
                                  reasoning=tuple(before_call)))
            before_call.clear()
    if message.stop_reason is None:
        # A stream that ended before its message_delta: the reply may be cut short.
        raise ModelError(
            f"Anthropic's reply stream for model {message.model!r} ended before the reply was "
            "complete (no stop reason). Try again."
        )
    usage = message.usage
    return ModelResponse(
        text="".join(texts),
        tool_calls=tuple(calls),
        stop_reason=message.stop_reason,
        usage=ModelUsage(
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_read_input_tokens=usage.cache_read_input_tokens or 0,
            cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
        ),
        model=message.model,
        reasoning=tuple(reasoning),
        id=message.id or "",
    )


def _thinking_block(block: Any) -> dict[str, Any]:
    """A thinking block exactly as the API sent it (the signature covers every byte)."""
    if block.type == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.data}
    return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}


# -- the plug -----------------------------------------------------------------------------------


class AnthropicSettings(ProviderSettings):
    """`provider: anthropic`: the key defaults to ANTHROPIC_API_KEY; `stream` and
    `prompt_caching` as in `AnthropicProvider`."""

    type: Literal["anthropic"] = "anthropic"
    """anthropic: this entry is an anthropic provider."""
    stream: bool = True
    """Stream replies from the API (shown as they are written where the channel streams)."""
    prompt_caching: bool = True
    """Mark the stable prompt prefix (tools, system prompt, summary) for the prompt cache."""


def _build(settings: AnthropicSettings) -> AnthropicProvider:
    return AnthropicProvider(api_key=settings.api_key, base_url=settings.base_url,
                             max_retries=settings.max_retries, timeout=settings.timeout,
                             stream=settings.stream, prompt_caching=settings.prompt_caching)


async def _check(settings: AnthropicSettings) -> str:
    """Looks up the model (or lists one, when none is named) with the key: proves the key, the
    address and the model name, and costs no tokens."""
    try:
        client = AsyncAnthropic(api_key=settings.api_key, base_url=settings.base_url,
                                max_retries=0)
    except CredentialsError as exc:
        raise ThreadlineError(f"Anthropic credentials could not be loaded ({exc})") from exc
    if client.api_key is None and client.auth_token is None and client.credentials is None:
        raise ThreadlineError("no Anthropic key: set ANTHROPIC_API_KEY")
    try:
        if settings.model:
            await client.models.retrieve(settings.model)
        else:
            await client.models.list(limit=1)
    except AuthenticationError as exc:
        raise ThreadlineError("the Anthropic API refused the key (401); check "
                              "ANTHROPIC_API_KEY") from exc
    except NotFoundError as exc:
        raise ThreadlineError(f"the Anthropic API does not serve model {settings.model!r}; "
                              "check the agent's model name") from exc
    except AnthropicError as exc:
        raise ThreadlineError(f"the Anthropic API could not be reached: {exc}") from exc
    finally:
        await client.close()
    return "Anthropic API key accepted" + (
        f"; model {settings.model} served" if settings.model else "")


PLUG = ProviderPlug(
    name="anthropic", settings=AnthropicSettings, build=_build, check=_check,
    key_variable="ANTHROPIC_API_KEY", default_model=DEFAULT_MODEL,
    summary_model=DEFAULT_SUMMARY_MODEL, key_required=True)
