"""The web channel under test: `threadline run`'s config with a `web` channel, served in this
process or as a subprocess, and a visitor speaking the widget's protocol with aiohttp (a cookie
jar per visitor, Server-Sent Events read line by line)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from tests.ports import free_port
from tests.runtime.platforms import run_config_head
from threadline.config import load_settings
from threadline.runtime import Runtime

SESSION_SECRET = "web-session-secret-for-tests-0123456789"
IDENTITY_SECRET = "shop-identity-secret-0123456789abcdef"
SHOP = "http://127.0.0.1:1"  # a site allowed to embed the widget (its page is never fetched)


def write_web_config(tmp_path: Path, model_url: str, *, port: int, origins: list[str],
                     more_channel_yaml: str = "", more_yaml: str = "",
                     agent_channels: str = "web", more_env: str = "") -> Path:
    """One support agent on a web channel, a SQLite file in `tmp_path`, JSON logs."""
    config = tmp_path / "threadline.yaml"
    config.write_text(run_config_head(tmp_path, model_url) + f"""\
  web:
    type: web
    listen: 127.0.0.1
    port: {port}
    origins: {json.dumps(origins)}
    session_secret: ${{WEB_SESSION_SECRET}}
    identity_secret: ${{WEB_IDENTITY_SECRET}}
{more_channel_yaml}agents:
  support:
    system_prompt: You help.
    channels: [{agent_channels}]
{more_yaml}""", encoding="utf-8")
    (tmp_path / ".env").write_text(
        f"ANTHROPIC_API_KEY=test-key\nWEB_SESSION_SECRET={SESSION_SECRET}\n"
        f"WEB_IDENTITY_SECRET={IDENTITY_SECRET}\n{more_env}", encoding="utf-8")
    return config


@asynccontextmanager
async def web_runtime(tmp_path: Path, model_url: str, *, origins: list[str] | None = None,
                      more_channel_yaml: str = "", more_yaml: str = "",
                      agent_channels: str = "web", more_env: str = "", port: int | None = None
                      ) -> AsyncIterator[tuple[Runtime, str]]:
    """The runtime serving the web channel in this process, and the widget server's URL."""
    port = port or free_port()
    config = write_web_config(tmp_path, model_url, port=port, origins=origins or [SHOP],
                              more_channel_yaml=more_channel_yaml, more_yaml=more_yaml,
                              agent_channels=agent_channels, more_env=more_env)
    runtime = Runtime.build(load_settings(config), interactive=False)
    await runtime.start()
    try:
        yield runtime, f"http://127.0.0.1:{port}"
    finally:
        await runtime.stop()


@dataclass
class Event:
    kind: str
    data: dict[str, Any]
    event_id: str | None = None


@dataclass
class Visitor:
    """A browser's side of the protocol: its own cookies, as the page at `origin`."""

    base: str
    origin: str = SHOP
    session: aiohttp.ClientSession = field(init=False)
    visitor_id: str = ""

    def __post_init__(self) -> None:
        self.session = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))

    async def close(self) -> None:
        await self.session.close()

    async def open(self, identity: str | None = None) -> tuple[int, dict[str, Any]]:
        body = {"identity": identity} if identity else {}
        async with self.session.post(f"{self.base}/api/session", json=body,
                                     headers={"Origin": self.origin}) as response:
            answer = await response.json()
            if response.status == 200:
                self.visitor_id = answer["visitor"]
            return response.status, answer

    async def send(self, text: str, *, message_id: str | None = None,
                   files: list[tuple[str, bytes]] = ()) -> tuple[int, dict[str, Any]]:
        form = aiohttp.FormData()
        form.add_field("id", message_id or uuid.uuid4().hex)
        form.add_field("text", text)
        for name, data in files:
            form.add_field("file", data, filename=name, content_type="application/octet-stream")
        async with self.session.post(f"{self.base}/api/messages", data=form,
                                     headers={"Origin": self.origin}) as response:
            return response.status, await response.json()

    @asynccontextmanager
    async def events(self, *, last_event_id: str | None = None
                     ) -> AsyncIterator[asyncio.Queue[Event]]:
        """The stream's events, parsed, in a queue, while the block runs."""
        headers = {"Origin": self.origin}
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        queue: asyncio.Queue[Event] = asyncio.Queue()
        response = await self.session.get(f"{self.base}/api/events", headers=headers)
        assert response.status == 200, await response.text()

        async def read() -> None:
            kind, data, event_id = "message", "", None
            async for raw in response.content:
                line = raw.decode().rstrip("\n")
                if not line:
                    if data:
                        queue.put_nowait(Event(kind, json.loads(data), event_id))
                    kind, data, event_id = "message", "", None
                elif line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    data += line[6:]
                elif line.startswith("id: "):
                    event_id = line[4:]

        reader = asyncio.ensure_future(read())
        try:
            yield queue
        finally:
            reader.cancel()
            response.close()


async def next_event(queue: asyncio.Queue[Event], kind: str, *, within: float = 20.0
                     ) -> Event:
    """The next event of `kind` (others before it are dropped; "" takes any)."""
    async with asyncio.timeout(within):
        while True:
            event = await queue.get()
            if kind in ("", event.kind):
                return event
