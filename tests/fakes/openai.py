"""A fake OpenAI-compatible Chat Completions API on 127.0.0.1 that speaks the real JSON.

Point the real SDK at it (`AsyncOpenAI(base_url=fake.url, api_key="test", ...)`, or
`fake.client()`). It serves `POST /v1/chat/completions` and `GET /v1/models`, rejects what the
real API rejects with a 400 (a `tool` message that answers no preceding `tool_calls`, tool
calls left unanswered, a missing model or messages), wants a bearer key, and records every
request body it received, byte for byte.

Replies are scripted per test, in order: `fake.script(text("hi"), error(429, ...), ...)`. With
nothing scripted it answers "fake reply N". A request with `"stream": true` is answered as
server-sent `chat.completion.chunk` events in the shape of the server the fake was started as
(`FakeOpenAI(server=...)`), as each really sends them:

- "openai": `usage: null` on every chunk, the finish reason on an empty last delta, then (with
  `stream_options.include_usage`) a chunk with no choices carrying the usage;
- "vllm": running usage totals on every chunk (continuous usage stats), `reasoning_content`
  deltas, and the same usage chunk at the end;
- "llamacpp": the finish reason on the last content chunk, then a chunk without choices with
  the usage and llama.cpp's `timings`;
- "ollama": `reasoning` deltas, and the usage on the chunk that carries the finish reason (no
  chunk of its own).

Text streams a word a chunk; `text(..., hold=event)` stops after the first half until the
event is set (so a test can see partial text before the model finishes, without timing).

Usage figures are estimated (4 characters a token)
and prompt caching is simulated as OpenAI does it, automatically: the longest run of leading
messages seen in an earlier request is reported as `cached_tokens`.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import re
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal

import pytest
from aiohttp import web
from multidict import CIMultiDict
from openai import AsyncOpenAI


def fake_openai_fixture() -> Callable[[], AsyncIterator[FakeOpenAI]]:
    """A pytest fixture serving a fresh fake per test: `fake = fake_openai_fixture()`."""

    @pytest.fixture
    async def fake() -> AsyncIterator[FakeOpenAI]:
        async with FakeOpenAI() as server:
            yield server

    return fake


@dataclass(frozen=True)
class Reply:
    """One scripted answer; build it with `text`, `tool_calls`, `error` or `malformed`."""

    status: int = 200
    content: str | None = None
    tool_calls: tuple[dict[str, Any], ...] = ()
    finish_reason: str = "stop"
    usage: dict[str, Any] | None = None
    error_type: str = ""
    error_code: str | None = None
    error_message: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    raw_body: str | None = None
    reasoning: str = ""
    hold: asyncio.Event | None = None
    pace: float = 0.0  # seconds between streamed pieces


def text(reply: str, *, usage: dict[str, Any] | None = None, reasoning: str = "",
         hold: asyncio.Event | None = None, tokens_per_second: float | None = None) -> Reply:
    """A plain text answer (after `reasoning`, for servers that send it), streamed at
    `tokens_per_second` (a word a token) when given."""
    pace = 1 / tokens_per_second if tokens_per_second else 0.0
    return Reply(content=reply, usage=usage, reasoning=reasoning, hold=hold, pace=pace)


def tool_call(name: str, arguments: dict[str, Any] | str, *, id: str | None = None,
              content: str | None = None, reasoning: str = "",
              more: tuple[tuple[str, dict[str, Any]], ...] = ()) -> Reply:
    """The model asks for one tool (and the `more` after it); `arguments` may be a raw string
    (to send broken JSON)."""
    encoded = arguments if isinstance(arguments, str) else json.dumps(arguments)
    calls = [{"id": id or f"call_fake_{name}", "type": "function",
              "function": {"name": name, "arguments": encoded}}]
    calls += [{"id": f"call_fake_{n}", "type": "function",
               "function": {"name": n, "arguments": json.dumps(a)}} for n, a in more]
    return Reply(content=content, tool_calls=tuple(calls), finish_reason="tool_calls",
                 reasoning=reasoning)


def error(status: int, error_type: str, message: str, *, code: str | None = None,
          retry_after: float | None = None) -> Reply:
    """An HTTP error with the real error body, e.g. `error(429, "requests", ...)`."""
    headers = (("retry-after", f"{retry_after:g}"),) if retry_after is not None else ()
    return Reply(status=status, error_type=error_type, error_code=code, error_message=message,
                 headers=headers)


def malformed(body: str = '{"id": "chatcmpl-broken", "object": "chat.completion", "choi') -> Reply:
    """A 200 whose JSON body is cut short."""
    return Reply(raw_body=body)


@dataclass(frozen=True)
class RecordedRequest:
    """What crossed the wire: path, headers (case-insensitive), exact bytes and parsed body."""

    path: str
    headers: CIMultiDict[str]
    raw: bytes
    body: Any


Server = Literal["openai", "vllm", "llamacpp", "ollama"]


class FakeOpenAI:
    """The fake server; use as `async with FakeOpenAI() as fake:`."""

    def __init__(self, *, models: tuple[str, ...] = ("fake-model",),
                 server: Server = "openai") -> None:
        self.requests: list[RecordedRequest] = []
        self.models = models
        self.server = server
        self.chunks_sent = 0  # stream chunks written, over all requests
        self._replies: deque[Reply] = deque()
        self._ids = itertools.count(1)
        self._seen_prefixes: set[str] = set()
        self._arrived = asyncio.Condition()
        self._clients: list[AsyncOpenAI] = []
        self._runner: web.AppRunner | None = None
        self.url = ""
        self.transcript = "this is what the voice note says"
        self.heard: list[tuple[str, bytes]] = []  # (model, audio) of each transcription
        self.transcription_status = 200  # anything else: the speech route answers that error

    async def __aenter__(self) -> FakeOpenAI:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/audio/transcriptions", self._transcriptions)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for client in self._clients:
            await client.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def client(self, *, max_retries: int = 0, timeout: float = 10.0) -> AsyncOpenAI:
        """The real SDK client pointed here (closed with the fake)."""
        client = AsyncOpenAI(base_url=self.url, api_key="test-key", max_retries=max_retries,
                             timeout=timeout)
        self._clients.append(client)
        return client

    def script(self, *replies: Reply) -> None:
        """Queue answers for the next requests, in order."""
        self._replies.extend(replies)

    @property
    def bodies(self) -> list[Any]:
        """The parsed bodies of every chat completion request received, in order."""
        return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    async def wait_for_requests(self, count: int) -> None:
        """Wait until `count` requests have arrived; fails after 5 s rather than hanging."""
        async with asyncio.timeout(5.0), self._arrived:
            await self._arrived.wait_for(lambda: len(self.requests) >= count)

    async def _record(self, request: web.Request) -> Any:
        raw = await request.read()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        self.requests.append(RecordedRequest(request.path, CIMultiDict(request.headers), raw, body))
        async with self._arrived:
            self._arrived.notify_all()
        return body

    async def _transcriptions(self, request: web.Request) -> web.Response:
        """The speech-to-text route: multipart `file` and `model`; answers `transcript`."""
        form = await request.post()
        upload = form.get("file")
        audio = upload.file.read() if hasattr(upload, "file") else b""
        self.heard.append((str(form.get("model")), audio))
        if self.transcription_status != 200:
            return _error_response(self.transcription_status, "server_error",
                                   "the speech model is unavailable")
        if form.get("response_format") == "text":
            return web.Response(text=self.transcript)
        return web.json_response({"text": self.transcript})

    async def _models(self, request: web.Request) -> web.Response:
        await self._record(request)
        if not request.headers.get("authorization", "").startswith("Bearer "):
            return _error_response(401, "invalid_request_error", "You didn't provide an API key.")
        return web.json_response({"object": "list", "data": [
            {"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.models]})

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        body = await self._record(request)
        if not request.headers.get("authorization", "").startswith("Bearer "):
            return _error_response(401, "invalid_request_error", "You didn't provide an API key.",
                                   code="invalid_api_key")
        problem = "We could not parse the JSON body" if body is None else validation_problem(body)
        if problem is not None:
            return _error_response(400, "invalid_request_error", problem)
        reply = (self._replies.popleft() if self._replies
                 else text(f"fake reply {len(self.requests)}"))
        if reply.status != 200:
            return _error_response(reply.status, reply.error_type, reply.error_message,
                                   code=reply.error_code, headers=dict(reply.headers))
        if reply.raw_body is not None:
            return web.Response(text=reply.raw_body, content_type="application/json")
        completion_id = f"chatcmpl-fake{next(self._ids)}"
        message: dict[str, Any] = {"role": "assistant", "content": reply.content,
                                   "refusal": None}
        if reply.tool_calls:
            message["tool_calls"] = [dict(c) for c in reply.tool_calls]
        if reply.reasoning and self.server != "openai":
            message["reasoning" if self.server == "ollama" else "reasoning_content"] = (
                reply.reasoning)
        output = _estimate(json.dumps(message, sort_keys=True))
        if body.get("stream") is True:
            usage = reply.usage or self._usage(body["messages"], output)
            return await self._stream(request, body, completion_id, reply, usage)
        return web.json_response({
            "id": completion_id, "object": "chat.completion", "created": 1_700_000_000,
            "model": body["model"], "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": reply.finish_reason}],
            "usage": reply.usage or self._usage(body["messages"], output),
        }, headers={"x-request-id": f"req_{completion_id}"})

    async def _stream(self, request: web.Request, body: dict[str, Any], completion_id: str,
                      reply: Reply, usage: dict[str, Any]) -> web.StreamResponse:
        """The reply as this server's chunks; see the module docstring for the shapes."""
        response = web.StreamResponse(headers={"content-type": "text/event-stream",
                                               "x-request-id": f"req_{completion_id}"})
        await response.prepare(request)
        server = self.server
        wants_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        pieces: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        field = "reasoning" if server == "ollama" else "reasoning_content"
        if reply.reasoning and server != "openai":
            pieces += [{field: w} for w in _words(reply.reasoning)]
        words = _words(reply.content or "")
        held_at = len(pieces) + len(words) // 2 if reply.hold is not None else -1
        pieces += [{"content": w} for w in words]
        for index, call in enumerate(reply.tool_calls):
            pieces.append({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                           "function": {"name": call["function"]["name"],
                                                        "arguments": ""}}]})
            arguments = call["function"]["arguments"]
            pieces += [{"tool_calls": [{"index": index, "function": {
                "arguments": arguments[i:i + 8]}}]} for i in range(0, len(arguments), 8)]
        sent_tokens = 0

        async def send(choices: list[dict[str, Any]], chunk_usage: Any = None,
                       **extra: Any) -> None:
            chunk = {"id": completion_id, "object": "chat.completion.chunk",
                     "created": 1_700_000_000, "model": body["model"],
                     "system_fingerprint": "fp_fake", "choices": choices, **extra}
            if (wants_usage and server in ("openai", "vllm")) or chunk_usage is not None:
                chunk["usage"] = chunk_usage  # OpenAI and vLLM send `usage: null` until then
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.chunks_sent += 1

        def running() -> dict[str, Any] | None:
            if server != "vllm" or not wants_usage:
                return None
            return {"prompt_tokens": usage["prompt_tokens"], "completion_tokens": sent_tokens,
                    "total_tokens": usage["prompt_tokens"] + sent_tokens}

        finish = reply.finish_reason
        for number, delta in enumerate(pieces):
            if number == held_at and reply.hold is not None:
                await reply.hold.wait()
            if reply.pace and number:
                await asyncio.sleep(reply.pace)
            sent_tokens += 1
            last = number == len(pieces) - 1
            choice: dict[str, Any] = {"index": 0, "delta": delta, "logprobs": None,
                                      "finish_reason": finish if last and server == "llamacpp"
                                      else None}
            await send([choice], running())
        if server != "llamacpp":
            closing = {"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish}
            await send([closing], usage if server == "ollama" else running())
        if wants_usage and server in ("openai", "vllm"):
            await send([], usage)
        elif server == "llamacpp":
            await send([], usage if wants_usage else None,
                       timings={"prompt_n": usage["prompt_tokens"], "predicted_n": sent_tokens,
                                "predicted_per_second": 42.0})
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    def _usage(self, messages: list[Any], output: int) -> dict[str, Any]:
        running = hashlib.sha256()
        cached = total = 0
        for message in messages:
            encoded = json.dumps(message, sort_keys=True)
            running.update(encoded.encode())
            total += _estimate(encoded)
            key = running.hexdigest()
            if key in self._seen_prefixes:
                cached = total
            self._seen_prefixes.add(key)
        return {"prompt_tokens": total, "completion_tokens": output,
                "total_tokens": total + output,
                "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0}}


def validation_problem(body: Any) -> str | None:
    """What the real API would reject in this body with a 400, or None."""
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "[] is too short - 'messages'"
    unanswered: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', ..."
        if role == "tool":
            if message.get("tool_call_id") not in unanswered:
                return (f"Invalid parameter: messages with role 'tool' must be a response to a "
                        f"preceeding message with 'tool_calls' (messages[{index}])")
            unanswered.discard(message["tool_call_id"])
            continue
        if unanswered:
            return ("An assistant message with 'tool_calls' must be followed by tool messages "
                    "responding to each 'tool_call_id'. The following tool_call_ids did not "
                    f"have response messages: {', '.join(sorted(unanswered))}")
        if role == "assistant":
            unanswered = {c["id"] for c in message.get("tool_calls") or ()}
        elif not isinstance(message.get("content"), str):
            return f"Invalid type for 'messages[{index}].content': expected a string"
    if unanswered:
        return f"tool_call_ids did not have response messages: {', '.join(sorted(unanswered))}"
    if body.get("stream_options") is not None and body.get("stream") is not True:
        return "The 'stream_options' parameter is only allowed when 'stream' is enabled."
    for tool in body.get("tools") or ():
        if tool.get("type") != "function" or "name" not in tool.get("function", {}):
            return "Missing required parameter: 'tools[0].function.name'"
    return None


def _error_response(status: int, error_type: str, message: str, *, code: str | None = None,
                    headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(
        {"error": {"message": message, "type": error_type, "param": None, "code": code}},
        status=status, headers={"x-request-id": "req_fake_error", **(headers or {})})


def _estimate(text: str) -> int:
    return max(1, len(text) // 4)


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"\S*\s*", text) if w]
