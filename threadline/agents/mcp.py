"""Tools from MCP servers: each configured server kept connected, its tools offered to agents.

    mcp_servers:
      files:                       # a local server Threadline starts and restarts
        command: python
        args: [files_server.py]
        env: {ROOT: /srv/files}
      search:                      # remote: Streamable HTTP (`transport: sse` for old servers)
        url: https://search.example.com/mcp
        token: ${SEARCH_TOKEN}     # sent as a bearer token; or `oauth:` (see docs/mcp.md)

An `McpServer` owns one connection through the official SDK and supervises it: a server that is
down at start, or dies later, is retried with backoff (the bot keeps running; `problem` says
why it is down, for the log and `threadline check`). Its tool list is read on connect and again
when the server sends `notifications/tools/list_changed`. An `McpToolset` is one agent's view:
the servers' tools filtered by its allow and deny lists, so a denied tool is never offered to
the model. A call has a timeout and is sent once: a call cut off by a dying server is reported
to the model as an error, never repeated (a tool may have side effects).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass
from typing import Any, Literal, TextIO

import httpx
import structlog
from pydantic import BaseModel, ConfigDict, Field, model_validator

from threadline.errors import ToolReportedError, ToolServerUnavailable

log = structlog.get_logger("threadline.mcp")

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
_BACKOFF_FIRST, _BACKOFF_MAX = 0.5, 30.0
_PING_EVERY = 15.0
_STOP_SECONDS = 8.0  # the SDK gives a local server 2 s after stdin closes, then signals
# A failure names the server's last stderr line (this long at most), read until it ends.
_STDERR_CHARS, _STDERR_DRAIN = 300, 1.0


class McpOAuth(BaseModel):
    """An operator's OAuth 2.1 client credential for a remote server (client_credentials)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    client_id: str
    """The OAuth client id."""
    client_secret: str
    """The OAuth client secret."""
    scopes: str | None = None
    """Scopes asked for, space-separated (default: the server's)."""
    issuer: str | None = None
    """The authorization server the credential belongs to (default: found from the server)."""


class McpServerSettings(BaseModel):
    """One `mcp_servers:` entry: a command to start (stdio) or a URL to reach, never both."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    command: str | None = None
    """The command that starts a local server (stdio)."""
    args: list[str] = Field(default_factory=list)
    """The command's arguments."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables for the command; every value is treated as a secret (redacted
    from records, the console, exports and traces), so pass plain settings in `args`."""
    cwd: str | None = None
    """The folder the command starts in."""
    url: str | None = None
    """The address of a remote server."""
    transport: Literal["streamable_http", "sse"] = "streamable_http"
    """How a remote server is spoken to: "streamable_http" or "sse"."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers sent to a remote server; every value is treated as a secret (redacted
    like `env`)."""
    token: str | None = None
    """A bearer token, sent as `Authorization: Bearer <token>`."""
    oauth: McpOAuth | None = None
    """An OAuth client credential instead of a token (the keys below)."""
    timeout: float = Field(default=30.0, gt=0)
    """Seconds for one tool call."""
    connect_timeout: float = Field(default=10.0, gt=0)
    """Seconds to connect and list the tools."""
    require_approval: bool = False
    """Every tool of this server waits for a person's approval in the channel."""

    @model_validator(mode="after")
    def _one_way_in(self) -> McpServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError("set `command:` (a local server) or `url:` (a remote one)")
        if self.command is not None and (self.headers or self.token or self.oauth):
            raise ValueError("headers, token and oauth are for `url:` servers")
        if self.url is not None and (self.args or self.env or self.cwd):
            raise ValueError("args, env and cwd are for `command:` servers")
        if self.token and self.oauth:
            raise ValueError("set `token:` or `oauth:`, not both")
        return self


def model_tool_name(server: str, tool: str) -> str:
    """The name the model sees: the server's name and the tool's, safe for every provider."""
    return _UNSAFE.sub("_", f"{server}__{tool}")[:64]


class McpServer:
    """One supervised connection to an MCP server, with its current tool list."""

    def __init__(self, name: str, settings: McpServerSettings, *, retry: bool = True) -> None:
        self.name = name
        self.settings = settings
        self.tools: dict[str, Any] = {}  # remote name -> mcp.types.Tool
        self.problem: str | None = "not connected yet"
        # False for `threadline check`: one attempt, its problem reported, nothing retried.
        self.retry = retry
        self._session: Any = None
        self._up = asyncio.Event()
        self._gave_up = asyncio.Event()
        self._broken = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._log = log.bind(mcp_server=name)

    def start(self) -> None:
        """Connect in the background; the caller never waits for a server to come up."""
        if self._task is None:
            self._task = asyncio.create_task(self._supervise(), name=f"mcp:{self.name}")

    async def stop(self) -> None:
        """Close the connection (a local server gets the SDK's stdin-close, SIGTERM, SIGKILL
        sequence); a stop that outlives `_STOP_SECONDS` is logged and left, never awaited
        forever (a process stopping must end)."""
        if self._task is not None:
            self._task.cancel()
            done, _ = await asyncio.wait({self._task}, timeout=_STOP_SECONDS)
            for finished in done:
                with suppress(asyncio.CancelledError):
                    finished.exception()  # a failure while closing is not re-raised here
            if not done:
                self._log.error("mcp.stop_timeout", seconds=_STOP_SECONDS,
                                detail="the server's connection did not close in time")
            self._task = None

    async def wait_up(self, within: float) -> bool:
        """True once connected (within `within` seconds); False at once when a server that is
        not retried failed its one attempt."""
        waits = [asyncio.ensure_future(self._up.wait()), asyncio.ensure_future(
            self._gave_up.wait())]
        try:
            await asyncio.wait(waits, timeout=within, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
        return self._up.is_set()

    async def call(self, tool: str, arguments: dict[str, Any]) -> str:
        """Run a tool once and return its text; `ToolReportedError` when the tool failed."""
        if not await self.wait_up(self.settings.connect_timeout):
            raise ToolServerUnavailable(f"MCP server {self.name!r} is unavailable "
                                        f"({self.problem}); it is being retried")
        session = self._session
        try:
            async with asyncio.timeout(self.settings.timeout):
                result = await session.call_tool(tool, arguments)
        except TimeoutError:
            raise TimeoutError(f"MCP server {self.name!r} did not answer {tool!r} within "
                               f"{self.settings.timeout:g} s") from None
        except Exception as exc:
            if not _is_tool_level(exc):
                self._mark_broken(f"call to {tool!r} failed: {exc!r}")
            raise
        text = _result_text(result)
        if result.isError:
            raise ToolReportedError(text)
        return text

    # -- supervision ---------------------------------------------------------------------

    async def _supervise(self) -> None:
        delay = _BACKOFF_FIRST
        while True:
            try:
                await self._connected_once()
                delay = _BACKOFF_FIRST
            except Exception as exc:  # an ExceptionGroup from the SDK's task groups too
                self.problem = _short(exc)
                if not self.retry:
                    self._gave_up.set()
                    return
                self._log.warning("mcp.server_down", problem=self.problem, retry_in=delay)
            finally:
                self._up.clear()
                self._session = None
            await asyncio.sleep(delay)
            delay = min(delay * 2, _BACKOFF_MAX)

    async def _connected_once(self) -> None:
        from mcp import ClientSession

        async with AsyncExitStack() as stack:
            stderr = await stack.enter_async_context(ServerStderr(self._log))
            stack.push_async_exit(stderr.explain)  # after the transport has ended the server
            try:
                read, write = await stack.enter_async_context(self._transport(stderr))
            finally:
                stderr.started()
            session = await stack.enter_async_context(
                ClientSession(read, write, message_handler=self._on_message))
            async with asyncio.timeout(self.settings.connect_timeout):
                await session.initialize()
                self._session = session
                await self._refresh()
            self._broken.clear()
            self.problem = None
            self._up.set()
            self._log.info("mcp.server_up", tools=sorted(self.tools))
            while not self._broken.is_set():
                with suppress(TimeoutError):
                    async with asyncio.timeout(_PING_EVERY):
                        await self._broken.wait()
                if not self._broken.is_set():
                    try:
                        async with asyncio.timeout(self.settings.connect_timeout):
                            await session.send_ping()
                    except Exception as exc:
                        self._mark_broken(f"ping failed: {exc!r}")
            raise ConnectionError(self.problem or "connection lost")

    def _transport(self, stderr: ServerStderr) -> Any:
        from mcp.client.sse import sse_client
        from mcp.client.stdio import StdioServerParameters, stdio_client
        from mcp.client.streamable_http import streamable_http_client

        settings = self.settings
        if settings.command is not None:
            return _two_streams(stdio_client(StdioServerParameters(
                command=settings.command, args=settings.args, env=settings.env or None,
                cwd=settings.cwd), errlog=stderr.writer))
        assert settings.url is not None
        headers = dict(settings.headers)
        if settings.token:
            headers["Authorization"] = f"Bearer {settings.token}"
        auth = self._oauth()
        if settings.transport == "sse":
            return _two_streams(sse_client(settings.url, headers=headers, auth=auth))
        from mcp.shared._httpx_utils import create_mcp_http_client

        client = create_mcp_http_client(headers=headers, auth=auth)
        return _two_streams(streamable_http_client(settings.url, http_client=client),
                            closing=client)

    def _oauth(self) -> httpx.Auth | None:
        oauth = self.settings.oauth
        if oauth is None or self.settings.url is None:
            return None
        from mcp.client.auth.extensions.client_credentials import (
            ClientCredentialsOAuthProvider,
        )

        # Tokens live in memory: a restart asks for a new one with the same credential, and
        # the SDK refreshes (or asks again) on a 401 instead of giving up on the server.
        return ClientCredentialsOAuthProvider(
            server_url=self.settings.url, storage=_MemoryTokens(), client_id=oauth.client_id,
            client_secret=oauth.client_secret, scopes=oauth.scopes, issuer=oauth.issuer)

    async def _refresh(self) -> None:
        tools: dict[str, Any] = {}
        cursor: str | None = None
        while True:
            from mcp.types import PaginatedRequestParams

            page = await self._session.list_tools(
                params=PaginatedRequestParams(cursor=cursor) if cursor else None)
            tools.update({t.name: t for t in page.tools})
            cursor = page.nextCursor
            if not cursor:
                break
        self.tools = tools

    async def _on_message(self, message: Any) -> None:
        from mcp.types import ServerNotification, ToolListChangedNotification

        if isinstance(message, ServerNotification) and isinstance(
                message.root, ToolListChangedNotification):
            # Not awaited here: the session's reader is what delivers the list's answer.
            asyncio.get_running_loop().create_task(self._refresh_logged())

    async def _refresh_logged(self) -> None:
        try:
            await self._refresh()
            self._log.info("mcp.tools_changed", tools=sorted(self.tools))
        except Exception as exc:
            self._log.warning("mcp.tools_refresh_failed", error=repr(exc))

    def _mark_broken(self, problem: str) -> None:
        self.problem = problem
        self._up.clear()
        self._broken.set()


@dataclass(frozen=True, slots=True)
class McpTool:
    """One MCP tool as a Threadline `Tool` (the agent loop runs it like any other)."""

    server: McpServer
    remote_name: str
    name: str
    description: str
    input_schema: Mapping[str, Any]
    held: bool = False  # named in the agent's `require_approval`

    @property
    def requires_approval(self) -> bool:
        return self.held or self.server.settings.require_approval

    async def run(self, input: dict[str, Any]) -> str:
        return await self.server.call(self.remote_name, input)


@dataclass(frozen=True, slots=True)
class McpToolset:
    """One agent's MCP tools: the servers' current tools through its allow and deny lists.

    An entry is a server name (all its tools) or `server/tool`. An empty allow list allows
    every tool of every server given; deny wins over allow. `approval` lists the tools whose
    calls wait for a person: by the tool's own name, as `server/tool`, or by the name the
    model sees (`server__tool`); one name means the tool whichever way it is written.
    """

    servers: Sequence[McpServer]
    allow: Sequence[str] = ()
    deny: Sequence[str] = ()
    approval: Sequence[str] = ()

    def allowed(self, server: str, tool: str) -> bool:
        def listed(entries: Sequence[str]) -> bool:
            return server in entries or f"{server}/{tool}" in entries
        return (not self.allow or listed(self.allow)) and not listed(self.deny)

    def tools(self) -> list[McpTool]:
        offered: list[McpTool] = []
        for server in self.servers:
            for remote in sorted(server.tools):
                if not self.allowed(server.name, remote):
                    continue
                spec = server.tools[remote]
                schema = dict(spec.inputSchema or {})
                schema.setdefault("type", "object")
                name = model_tool_name(server.name, remote)
                offered.append(McpTool(
                    server=server, remote_name=remote, name=name,
                    description=spec.description or f"{remote} (from MCP server {server.name})",
                    input_schema=schema, held=bool({remote, f"{server.name}/{remote}", name}
                                                   & set(self.approval))))
        return offered


def check_lists(servers: Mapping[str, Any], entries: Sequence[str]) -> list[str]:
    """Problems with allow/deny entries naming servers that are not configured."""
    return [f"{entry!r} names no configured MCP server (servers: "
            f"{', '.join(sorted(servers)) or 'none'})"
            for entry in entries if entry.partition("/")[0] not in servers]


async def probe(name: str, settings: McpServerSettings, within: float = 10.0) -> str:
    """Connect once and list the tools (`threadline check`); `ToolServerUnavailable` if not."""
    tools = await tool_names(name, settings, within)
    return f"{len(tools)} tool(s): {', '.join(tools)}"


async def tool_names(name: str, settings: McpServerSettings, within: float = 10.0
                     ) -> list[str]:
    """The server's tools by their own names, from one connection; `ToolServerUnavailable`
    when it cannot be reached within `within` seconds."""
    server = McpServer(name, settings, retry=False)
    server.start()
    try:
        if not await server.wait_up(within):
            raise ToolServerUnavailable(server.problem or f"no answer within {within:g} s")
        return sorted(server.tools)
    finally:
        await server.stop()


class ServerStderr:
    """A local server's stderr, kept off the terminal (`check`'s output, the terminal chat):
    each line is logged at debug, and the last one joins the reason the connection failed."""

    def __init__(self, log: Any) -> None:
        self._log = log
        self._last = ""
        self._reader: asyncio.Task[None] | None = None
        read_fd, write_fd = os.pipe()
        self.writer: TextIO = os.fdopen(write_fd, "w", encoding="utf-8")  # the server's end
        self._read_end = os.fdopen(read_fd, "rb")

    async def __aenter__(self) -> ServerStderr:
        stream = asyncio.StreamReader()
        transport, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(stream), self._read_end)
        self._reader = asyncio.create_task(self._read(stream, transport))
        return self

    def started(self) -> None:
        """The server was started (or failed to be) with its copy of the pipe: close ours, so
        the reader sees the end when the server exits."""
        if not self.writer.closed:
            self.writer.close()

    async def _read(self, stream: asyncio.StreamReader, transport: asyncio.BaseTransport
                    ) -> None:
        try:
            while line := await stream.readline():
                text = line.decode("utf-8", "replace").rstrip()
                if text:
                    self._last = text[:_STDERR_CHARS]
                    self._log.debug("mcp.server_stderr", line=text)
        finally:
            transport.close()

    async def explain(self, kind: type[BaseException] | None, exc: BaseException | None,
                      tb: Any) -> bool:
        """On the way out: a failure carries the server's last stderr line, if it said one."""
        self.started()
        if self._reader is not None:
            with suppress(TimeoutError):  # a grandchild may hold the pipe open
                async with asyncio.timeout(_STDERR_DRAIN):
                    await asyncio.shield(self._reader)
            self._reader.cancel()
        if exc is not None and self._last and not isinstance(exc, asyncio.CancelledError):
            raise ConnectionError(f"{_short(exc)} (the server's stderr said: "
                                  f"{self._last})") from exc
        return False

    async def __aexit__(self, *exc: Any) -> None:
        self.started()
        if self._reader is not None:
            self._reader.cancel()
        self._read_end.close()


class _two_streams:
    """The SDK's transports yield two or three values; the session needs the first two."""

    def __init__(self, inner: Any, closing: httpx.AsyncClient | None = None) -> None:
        self.inner = inner
        self.closing = closing

    async def __aenter__(self) -> tuple[Any, Any]:
        streams = await self.inner.__aenter__()
        return streams[0], streams[1]

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self.inner.__aexit__(*exc)
        finally:
            if self.closing is not None:
                await self.closing.aclose()


class _MemoryTokens:
    """The SDK's `TokenStorage`, in memory (one process's tokens for one server)."""

    def __init__(self) -> None:
        self._tokens: Any = None
        self._client: Any = None

    async def get_tokens(self) -> Any:
        return self._tokens

    async def set_tokens(self, tokens: Any) -> None:
        self._tokens = tokens

    async def get_client_info(self) -> Any:
        return self._client

    async def set_client_info(self, client_info: Any) -> None:
        self._client = client_info


def _result_text(result: Any) -> str:
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource" and hasattr(block.resource, "text"):
            parts.append(block.resource.text)
        else:
            parts.append(f"[{kind} content: {getattr(block, 'mimeType', 'unknown type')}]")
    if not parts and result.structuredContent is not None:
        return json.dumps(result.structuredContent, sort_keys=True, ensure_ascii=False)
    return "\n".join(parts)


def _is_tool_level(exc: Exception) -> bool:
    """An error the server sent back (the connection is fine), as opposed to a broken pipe."""
    from mcp.shared.exceptions import McpError

    lost = ("closed", "session terminated")  # what the SDK says when the connection is gone
    return isinstance(exc, McpError) and not any(w in str(exc).lower() for w in lost)


def _short(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"[:300]

