"""A fake Anthropic Messages API on 127.0.0.1 that speaks the real wire format.

Point the real SDK at it (`AsyncAnthropic(base_url=fake.url, api_key="test", ...)`, or
`fake.client()`). It serves `POST /v1/messages` as JSON or as the real server-sent event stream
(message_start, content_block_start, ping, content_block_delta with text_delta /
input_json_delta, content_block_stop, message_delta, message_stop), rejects what the real API
rejects with a 400 (first turn not from the user, orphan tool_result or unanswered tool_use,
empty text blocks, more than 4 cache_control breakpoints, bad tool names, and, as for thinking
models, a tool round whose assistant turn does not start with its thinking blocks or sends them
back altered), and records every request body it received, byte for byte.

`GET /v1/models` and `/v1/models/{id}` serve the Claude models the installed SDK lists (404 for
others), for `threadline check`.

Thinking: a request with `thinking` enabled, or without `thinking` to a Claude 5 model (they
think by default), is answered with a `thinking` block first (streamed as `thinking_delta` and
`signature_delta`), signed so that any change to it is caught; `tool_use(..., thinking=...)`
scripts the thought and `redacted=True` adds a `redacted_thinking` block.

Replies are scripted per test, in order: `fake.script(text("hi"), error(529, ...), ...)`.
A streamed text can be paced like a real model (`text(..., tokens_per_second=50)`: one word a
token), and `stream_error(..., after_text=...)` breaks off after part of the reply was sent.
With nothing scripted it asks `fake.responder(body)` when one is set, else answers
"fake reply N". Usage figures are estimated (4 characters a token) and prompt caching follows
Anthropic's rules: the prefix (tools, system, messages, in that order) up to a cache_control
breakpoint is cached when it is at least `min_cacheable_tokens` long; a later request reads
it when its own prefix is byte-identical up to there (each breakpoint looks back up to 20
blocks for such an entry); an entry lives 5 minutes from its last use (`clock` may be set to
a simulated one). Reads are reported as `cache_read_input_tokens`, new entries as
`cache_creation_input_tokens`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import itertools
import json
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, get_args

import pytest
from aiohttp import web
from anthropic import AsyncAnthropic
from anthropic.types import ModelParam
from multidict import CIMultiDict

_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_CACHE_BREAKPOINTS = 4
CACHE_LOOKBACK = 20
CACHE_TTL = 300.0  # seconds an entry lives after its last use (the default "5m")
MIN_CACHEABLE_TOKENS = 1024  # Sonnet's and Opus's minimum; shorter prefixes are not cached
_SDK_MODELS = tuple(m for m in get_args(get_args(ModelParam)[0]))
_THINKS_BY_DEFAULT = re.compile(r"^claude-[a-z]+-5")
_SIGNING_KEY = b"fake-anthropic-thinking"
MIN_THINKING_BUDGET = 1024


def fake_anthropic_fixture() -> Callable[[], AsyncIterator[FakeAnthropic]]:
    """A pytest fixture serving a fresh fake per test: `fake = fake_anthropic_fixture()`."""

    @pytest.fixture
    async def fake() -> AsyncIterator[FakeAnthropic]:
        async with FakeAnthropic() as server:
            yield server

    return fake


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Build it with `text`, `tool_use`, `error`, `stream_error`,
    `cut_off` or `malformed`; `delay` holds the answer back that many seconds (for timeouts)."""

    status: int = 200
    content: tuple[dict[str, Any], ...] = ()
    stop_reason: str = "end_turn"
    usage: dict[str, int] | None = None
    error_type: str | None = None
    error_message: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    raw_body: str | None = None
    mid_stream_error: bool = False
    cut_off: bool = False
    delay: float = 0.0
    pace: float = 0.0  # seconds between streamed text pieces
    partial: str = ""  # text streamed before a mid-stream error
    thinking: str = ""  # the thought sent first when the request thinks ("" : a made-up one)
    until: asyncio.Event | None = None  # the answer waits until the test sets it


def text(reply: str, *, usage: dict[str, int] | None = None, delay: float = 0.0,
         tokens_per_second: float | None = None, until: asyncio.Event | None = None) -> Reply:
    """A plain text answer; streamed at `tokens_per_second` (a word a token) when given; held
    back until `until` is set, when given (the model is busy as long as the test wants)."""
    pace = 1 / tokens_per_second if tokens_per_second else 0.0
    return Reply(content=({"type": "text", "text": reply},), usage=usage, delay=delay, pace=pace,
                 until=until)


def tool_use(
    name: str, input: dict[str, Any], *, id: str | None = None, text: str = "",
    usage: dict[str, int] | None = None, thinking: str = "", redacted: bool = False,
    then: tuple[tuple[str, dict[str, Any], str], ...] = (),
) -> Reply:
    """The model asks for one tool (optionally after some text); stop_reason is tool_use.

    `then` asks for more tools in the same reply, each `(name, input, thought)`: a request
    that thinks gets each thought as a thinking block just before its tool_use (interleaved
    thinking); `redacted` adds a `redacted_thinking` block after the first thought.
    """
    blocks: list[dict[str, Any]] = []
    if redacted:
        blocks.append(redacted_thinking())
    if text:
        blocks.append({"type": "text", "text": text})
    blocks.append({"type": "tool_use", "id": id or f"toolu_fake_{name}", "name": name,
                   "input": input})
    for more, more_input, thought in then:
        if thought:
            blocks.append(thinking_block(thought))
        blocks.append({"type": "tool_use", "id": f"toolu_fake_{more}", "name": more,
                       "input": more_input})
    return Reply(content=tuple(blocks), stop_reason="tool_use", usage=usage, thinking=thinking)


def _signature(thought: str) -> str:
    return base64.b64encode(hmac.digest(_SIGNING_KEY, thought.encode(), "sha256")).decode()


def thinking_block(thought: str) -> dict[str, Any]:
    """A thinking block as the API signs it: the signature covers the thought's every byte."""
    return {"type": "thinking", "thinking": thought, "signature": _signature(thought)}


def redacted_thinking(seed: str = "redacted") -> dict[str, Any]:
    """A redacted_thinking block: opaque data the API can check (here: signed)."""
    return {"type": "redacted_thinking", "data": f"{seed}.{_signature(seed)}"}


def thinks(body: dict[str, Any]) -> bool:
    """Whether this request has the model think: enabled, or the Claude 5 default."""
    setting = body.get("thinking")
    if isinstance(setting, dict):
        return setting.get("type") in ("enabled", "adaptive")
    return bool(_THINKS_BY_DEFAULT.match(str(body.get("model", ""))))


def error(
    status: int, error_type: str, message: str, *, retry_after: float | None = None
) -> Reply:
    """An HTTP error with the real error body, e.g. `error(529, "overloaded_error", ...)`."""
    headers = (("retry-after", f"{retry_after:g}"),) if retry_after is not None else ()
    return Reply(status=status, error_type=error_type, error_message=message, headers=headers)


def stream_error(error_type: str, message: str, *, after_text: str = "",
                 tokens_per_second: float | None = None) -> Reply:
    """A 200 stream that breaks off with an `error` event, as the real API does when it is
    overloaded mid-reply (after streaming `after_text`, when given). Non-streaming requests
    get the matching HTTP status instead."""
    pace = 1 / tokens_per_second if tokens_per_second else 0.0
    return Reply(error_type=error_type, error_message=message, mid_stream_error=True,
                 partial=after_text, pace=pace)


def cut_off() -> Reply:
    """The connection drops after the first stream event (or before any JSON reply)."""
    return Reply(cut_off=True)


def malformed(body: str = '{"id": "msg_broken", "type": "message", "content": [') -> Reply:
    """A 200 whose body (or first stream event's data) is not what the API promises."""
    return Reply(raw_body=body)


@dataclass(frozen=True)
class RecordedRequest:
    """What crossed the wire: the path, headers (case-insensitive), exact body bytes and the
    parsed body."""

    path: str
    headers: CIMultiDict[str]
    raw: bytes
    body: Any


@dataclass
class _CacheState:
    expires: dict[str, float] = field(default_factory=dict)  # prefix key -> when it expires


_ERROR_STATUS = {"invalid_request_error": 400, "authentication_error": 401,
                 "rate_limit_error": 429, "api_error": 500, "overloaded_error": 529}


class FakeAnthropic:
    """The fake server; use as `async with FakeAnthropic() as fake:`."""

    def __init__(self, *, min_cacheable_tokens: int = 0) -> None:
        self.requests: list[RecordedRequest] = []
        # 0 caches any prefix (most tests' prompts are short); benchmarks pass the real minimum.
        self.min_cacheable_tokens = min_cacheable_tokens
        self.clock: Callable[[], float] = time.monotonic
        # What `GET /v1/models` lists: the Claude models the installed SDK knows.
        self.models: tuple[str, ...] = _SDK_MODELS
        self.stream_ends: list[float] = []  # time.monotonic() of each stream's last event
        self._replies: deque[Reply] = deque()
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self._ids = itertools.count(1)
        self._cache = _CacheState()
        self._closing = asyncio.Event()
        self._arrived = asyncio.Condition()
        self._clients: list[AsyncAnthropic] = []
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def __aenter__(self) -> FakeAnthropic:
        app = web.Application()
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/v1/models/{model}", self._model)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closing.set()
        for client in self._clients:
            await client.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def client(self, *, max_retries: int = 0, timeout: float = 10.0) -> AsyncAnthropic:
        """The real SDK client pointed here (closed with the fake)."""
        client = AsyncAnthropic(base_url=self.url, api_key="test-key", max_retries=max_retries,
                                timeout=timeout)
        self._clients.append(client)
        return client

    def script(self, *replies: Reply) -> None:
        """Queue answers for the next requests, in order."""
        self._replies.extend(replies)

    @property
    def bodies(self) -> list[Any]:
        """The parsed bodies of every request received, in order."""
        return [r.body for r in self.requests]

    async def wait_for_requests(self, count: int) -> None:
        """Wait until `count` requests have arrived; fails after 5 s rather than hanging."""
        async with asyncio.timeout(5.0), self._arrived:
            await self._arrived.wait_for(lambda: len(self.requests) >= count)

    async def _models(self, request: web.Request) -> web.Response:
        await self._record_get(request)
        return web.json_response({"data": [_model_info(m) for m in self.models],
                                  "has_more": False, "first_id": self.models[0],
                                  "last_id": self.models[-1]})

    async def _model(self, request: web.Request) -> web.Response:
        await self._record_get(request)
        model = request.match_info["model"]
        if model not in self.models:
            return _error_response(404, "not_found_error", f"model: {model}")
        return web.json_response(_model_info(model))

    async def _record_get(self, request: web.Request) -> None:
        self.requests.append(RecordedRequest(request.path, CIMultiDict(request.headers), b"",
                                             None))

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = None
        self.requests.append(RecordedRequest(request.path, CIMultiDict(request.headers), raw, body))
        async with self._arrived:
            self._arrived.notify_all()
        if not (request.headers.get("x-api-key") or request.headers.get("authorization")):
            return _error_response(401, "authentication_error", "x-api-key header is required")
        if not request.headers.get("anthropic-version"):
            return _error_response(400, "invalid_request_error",
                                   "anthropic-version: header is required")
        problem = "body: not valid JSON" if body is None else validation_problem(body)
        if problem is not None:
            return _error_response(400, "invalid_request_error", problem)
        if self._replies:
            reply = self._replies.popleft()
        elif self.responder is not None:
            reply = self.responder(body)
        else:
            reply = text(f"fake reply {len(self.requests)}")
        if reply.until is not None:
            await reply.until.wait()
        if reply.delay:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), reply.delay)
            if self._closing.is_set():
                return _error_response(503, "api_error", "fake server shutting down")
        streaming = body.get("stream") is True
        if reply.error_type is not None and not (reply.mid_stream_error and streaming):
            status = reply.status if reply.status != 200 else _ERROR_STATUS[reply.error_type]
            return _error_response(status, reply.error_type, reply.error_message,
                                   headers=dict(reply.headers))
        message = self._message(body, reply)
        if reply.cut_off and not streaming:
            assert request.transport is not None
            request.transport.close()
            return web.Response()
        if streaming:
            return await self._stream(request, message, reply)
        if reply.raw_body is not None:
            return web.Response(text=reply.raw_body, content_type="application/json")
        return web.json_response(message, headers={"request-id": f"req_fake_{message['id']}"})

    def _message(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        number = next(self._ids)
        content = [dict(b) for b in reply.content]
        if thinks(body):
            content.insert(0, thinking_block(reply.thinking or f"Working out reply {number}."))
        else:
            content = [b for b in content if "thinking" not in b["type"]]
        output = sum(_estimate(json.dumps(b, sort_keys=True)) for b in content) or 1
        usage = {**self._usage(body), "output_tokens": output, **(reply.usage or {})}
        return {"id": f"msg_fake_{number}", "type": "message", "role": "assistant",
                "model": body["model"], "content": content,
                "stop_reason": reply.stop_reason, "stop_sequence": None, "usage": usage}

    def _usage(self, body: dict[str, Any]) -> dict[str, Any]:
        """Input, cache-read and cache-write tokens, with prompt caching simulated.

        As the real API does, each breakpoint looks back up to 20 blocks for a prefix cached
        earlier (so a conversation that grew by a turn still reads its old prefix); the prefix
        up to the last breakpoint is then written to the cache.
        """
        segments = _prefix_segments(body)
        running = hashlib.sha256()
        keys: list[str] = []
        tokens: list[int] = []
        for segment, _ in segments:
            running.update(segment.encode())
            keys.append(running.hexdigest())
            tokens.append((tokens[-1] if tokens else 0) + _estimate(segment))
        now = self.clock()
        live = self._cache.expires
        for key in [k for k, until in live.items() if until <= now]:
            del live[key]
        breakpoints = [i for i, (_, marked) in enumerate(segments) if marked
                       and tokens[i] >= self.min_cacheable_tokens]
        hit_at = [p for b in breakpoints for p in range(max(b - CACHE_LOOKBACK, 0), b + 1)
                  if keys[p] in live]
        read = max((tokens[p] for p in hit_at), default=0)
        written = max(tokens[breakpoints[-1]] - read, 0) if breakpoints else 0
        for position in (*hit_at, *breakpoints):  # used or written: lives 5 more minutes
            live[keys[position]] = now + CACHE_TTL
        total = tokens[-1] if tokens else 0
        return {"input_tokens": total - read - written, "cache_read_input_tokens": read,
                "cache_creation_input_tokens": written, "service_tier": "standard"}

    async def _stream(
        self, request: web.Request, message: dict[str, Any], reply: Reply
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={
            "content-type": "text/event-stream", "cache-control": "no-cache",
            "request-id": f"req_fake_{message['id']}"})
        await response.prepare(request)

        async def send(event: str, data: dict[str, Any] | str) -> None:
            payload = data if isinstance(data, str) else json.dumps(data)
            await response.write(f"event: {event}\ndata: {payload}\n\n".encode())

        if reply.raw_body is not None:
            await send("message_start", reply.raw_body)
            await response.write_eof()
            return response
        usage = message["usage"]
        start = {**message, "content": [], "stop_reason": None, "stop_sequence": None,
                 "usage": {**usage, "output_tokens": 1}}
        await send("message_start", {"type": "message_start", "message": start})
        if reply.cut_off:
            assert request.transport is not None
            request.transport.close()
            return response
        if reply.mid_stream_error:
            if reply.partial:
                await _stream_block(send, 0, {"type": "text", "text": reply.partial},
                                    pace=reply.pace, close=False)
            await send("error", {"type": "error", "error": {
                "type": reply.error_type, "message": reply.error_message}})
            self.stream_ends.append(time.monotonic())
            await response.write_eof()
            return response
        for index, block in enumerate(message["content"]):
            await _stream_block(send, index, block, pace=reply.pace)
            if index == 0:
                await send("ping", {"type": "ping"})
        await send("message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]}})
        await send("message_stop", {"type": "message_stop"})
        self.stream_ends.append(time.monotonic())
        await response.write_eof()
        return response


async def _stream_block(send: Any, index: int, block: dict[str, Any], *, pace: float = 0.0,
                        close: bool = True) -> None:
    """One content block as start, deltas in small pieces (as the real API chunks), stop;
    `pace` seconds between text pieces."""
    if block["type"] == "text":
        await send("content_block_start", {"type": "content_block_start", "index": index,
                                           "content_block": {"type": "text", "text": ""}})
        for piece in re.findall(r"\S*\s*", block["text"]):
            if piece:
                if pace:
                    await asyncio.sleep(pace)
                await send("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "text_delta", "text": piece}})
        if not close:
            return
    elif block["type"] == "thinking":
        await send("content_block_start", {"type": "content_block_start", "index": index,
                                           "content_block": {"type": "thinking", "thinking": "",
                                                             "signature": ""}})
        for piece in re.findall(r"\S*\s*", block["thinking"]):
            if piece:
                await send("content_block_delta", {
                    "type": "content_block_delta", "index": index,
                    "delta": {"type": "thinking_delta", "thinking": piece}})
        await send("content_block_delta", {
            "type": "content_block_delta", "index": index,
            "delta": {"type": "signature_delta", "signature": block["signature"]}})
    elif block["type"] == "redacted_thinking":
        await send("content_block_start", {"type": "content_block_start", "index": index,
                                           "content_block": block})
    else:
        await send("content_block_start", {"type": "content_block_start", "index": index,
                                           "content_block": {**block, "input": {}}})
        encoded = json.dumps(block["input"])
        for offset in range(0, len(encoded), 8):
            await send("content_block_delta", {
                "type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": encoded[offset:offset + 8]}})
    await send("content_block_stop", {"type": "content_block_stop", "index": index})


def _model_info(model: str) -> dict[str, Any]:
    return {"type": "model", "id": model, "display_name": model,
            "created_at": "2026-01-01T00:00:00Z"}


def _error_response(
    status: int, error_type: str, message: str, *, headers: dict[str, str] | None = None
) -> web.Response:
    return web.json_response(
        {"type": "error", "error": {"type": error_type, "message": message},
         "request_id": "req_fake_error"},
        status=status, headers={"request-id": "req_fake_error", **(headers or {})})


def _estimate(text: str) -> int:
    return max(1, len(text) // 4)


def _prefix_segments(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """The request in cache order (tools, system, messages) as canonical pieces, each marked
    when it carries a breakpoint; markers themselves are not part of the cached text."""
    def piece(block: Any) -> tuple[str, bool]:
        if isinstance(block, dict):
            unmarked = {k: v for k, v in block.items() if k != "cache_control"}
            return json.dumps(unmarked, sort_keys=True), "cache_control" in block
        return json.dumps(block, sort_keys=True), False

    segments = [piece(t) for t in body.get("tools") or []]
    system = body.get("system")
    segments += [piece(system)] if isinstance(system, str) else [piece(b) for b in system or []]
    for message in body["messages"]:
        content = message["content"]
        blocks = [content] if isinstance(content, str) else content
        segments.append((message["role"], False))
        segments += [piece(b) for b in blocks]
    return segments


def validation_problem(body: Any) -> str | None:
    """What the real API would answer with a 400 for this body, or None."""
    if not isinstance(body, dict):
        return "body: Input should be an object"
    for key, kind in (("model", str), ("max_tokens", int), ("messages", list)):
        if not isinstance(body.get(key), kind):
            return f"{key}: Field required"
    if body["max_tokens"] < 1:
        return "max_tokens: Input should be greater than or equal to 1"
    messages = body["messages"]
    if not messages:
        return "messages: at least one message is required"
    if messages[0].get("role") != "user":
        return 'messages: first message must use the "user" role'
    for number, message in enumerate(messages):
        problem = _message_problem(number, message, messages)
        if problem:
            return problem
    for number, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict) or not _TOOL_NAME.match(str(tool.get("name", ""))):
            return f"tools.{number}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
        if not isinstance(tool.get("input_schema"), dict):
            return f"tools.{number}.input_schema: Field required"
    system = body.get("system")
    if system is not None and not isinstance(system, str | list):
        return "system: Input should be a valid string or a list of text blocks"
    problem = _thinking_problem(body)
    if problem:
        return problem
    marked = sum(marked for _, marked in _prefix_segments(body))
    if marked > MAX_CACHE_BREAKPOINTS:
        return (f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be "
                f"provided. Found {marked}.")
    return None


def _thinking_problem(body: dict[str, Any]) -> str | None:
    """What the API says about thinking: a budget out of range, a thinking block altered
    anywhere, or (when the request thinks) a tool round whose assistant turn does not start
    with its thinking."""
    setting = body.get("thinking")
    if isinstance(setting, dict) and setting.get("type") == "enabled":
        budget = setting.get("budget_tokens")
        if not isinstance(budget, int) or budget < MIN_THINKING_BUDGET:
            return (f"thinking.enabled.budget_tokens: Input should be greater than or equal "
                    f"to {MIN_THINKING_BUDGET}")
        if budget >= body["max_tokens"]:
            return "`max_tokens` must be greater than `thinking.budget_tokens`."
    messages = body["messages"]
    for number, message in enumerate(messages):
        content = message.get("content")
        for position, block in enumerate(content if isinstance(content, list) else ()):
            kind = block.get("type")
            if kind == "thinking" and block.get("signature") != _signature(
                    str(block.get("thinking"))):
                return (f"messages.{number}.content.{position}: Invalid `signature` in "
                        "`thinking` block")
            if kind == "redacted_thinking":
                seed, _, signed = str(block.get("data")).partition(".")
                if signed != _signature(seed):
                    return (f"messages.{number}.content.{position}: Invalid `data` in "
                            "`redacted_thinking` block")
    last = messages[-1]
    in_round = last.get("role") == "user" and isinstance(last.get("content"), list) and any(
        b.get("type") == "tool_result" for b in last["content"])
    if thinks(body) and in_round and len(messages) > 1:
        number = len(messages) - 2
        first = messages[number]["content"][0] if isinstance(
            messages[number]["content"], list) else {"type": "text"}
        if first.get("type") not in ("thinking", "redacted_thinking"):
            return (f"messages.{number}.content.0.type: Expected `thinking` or "
                    f"`redacted_thinking`, but found `{first.get('type')}`. When `thinking` is "
                    "enabled, a final `assistant` message must start with a thinking block "
                    "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
                    "recommend you include thinking blocks from previous turns. To avoid this "
                    "requirement, disable `thinking`.")
    return None


def _message_problem(number: int, message: Any, messages: list[Any]) -> str | None:
    if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
        return f"messages.{number}.role: Input should be 'user' or 'assistant'"
    content = message.get("content")
    if isinstance(content, str):
        return None if content else f"messages.{number}: text content blocks must be non-empty"
    if not isinstance(content, list) or not content:
        return f"messages.{number}.content: Input should be a non-empty string or list"
    for block in content:
        if block.get("type") == "text" and not block.get("text"):
            return f"messages.{number}: text content blocks must be non-empty"
    results = [b["tool_use_id"] for b in content if b.get("type") == "tool_result"]
    previous = messages[number - 1] if number else None
    previous_uses = _tool_use_ids(previous) if previous and previous["role"] == "assistant" else []
    orphans = [r for r in results if r not in previous_uses]
    if orphans:
        return (f"messages.{number}.content: unexpected `tool_use_id` found in `tool_result` "
                f"blocks: {', '.join(orphans)}. Each `tool_result` block must have a "
                "corresponding `tool_use` block in the previous message.")
    uses = _tool_use_ids(message) if message["role"] == "assistant" else []
    if uses:
        following = messages[number + 1] if number + 1 < len(messages) else None
        answered = {b.get("tool_use_id") for b in following["content"]
                    if isinstance(b, dict)} if following and isinstance(
                        following.get("content"), list) else set()
        unanswered = [u for u in uses if u not in answered]
        if unanswered:
            return (f"messages.{number}: `tool_use` ids were found without `tool_result` "
                    f"blocks immediately after: {', '.join(unanswered)}. Each `tool_use` block "
                    "must have a corresponding `tool_result` block in the next message.")
    return None


def _tool_use_ids(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b["id"] for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
