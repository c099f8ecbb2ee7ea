"""A platform that lives outside threadline, as a third-party package's would: a room whose
inbound lines are appended to one file and whose replies are appended to another.

It registers through the `threadline.platforms` entry point group (`registered_in`), so config,
runtime and CLI find it without naming it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Literal

from tests.cli.helpers import entry_point_package
from threadline.channels.base import BotIdentity, Channel, ChannelEvents
from threadline.channels.platform import ChannelContext, ChannelSettings, Platform
from threadline.history.addressing import mentions_in_text
from threadline.history.model import MessageMetadata, Participant, StoredMessage

TYPE = "files"


class FilesSettings(ChannelSettings):
    type: Literal["files"]
    inbox: str
    outbox: str
    poll_seconds: float = 0.05


class FilesChannel(Channel):
    """Each new line of `inbox` is a user's message; each reply is a line of `outbox`."""

    channel_type = TYPE
    max_message_chars = 2000

    def __init__(self, *, name: str, inbox: Path, outbox: Path, poll_seconds: float) -> None:
        super().__init__(name=name)
        self.inbox, self.outbox, self.poll_seconds = inbox, outbox, poll_seconds
        self._reader: asyncio.Task[None] | None = None

    async def check(self) -> list[str]:
        self.identity = BotIdentity(user_id=f"{self.name}-bot", username=self.name)
        return [] if self.inbox.exists() else [f"{self.inbox} does not exist yet"]

    async def start(self, events: ChannelEvents) -> None:
        await self.check()
        self._reader = asyncio.create_task(self._read(events))

    async def stop(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            self._reader = None

    async def _read(self, events: ChannelEvents) -> None:
        seen = 0
        while True:
            lines = self.inbox.read_text(encoding="utf-8").splitlines() \
                if self.inbox.exists() else []
            for number, text in enumerate(lines[seen:], start=seen + 1):
                await events.on_message(self._message(number, text), self)
            seen = len(lines)
            await asyncio.sleep(self.poll_seconds)

    def _message(self, number: int, text: str) -> StoredMessage:
        return StoredMessage(
            conversation_id=f"{TYPE}:{self.name}", id=f"{TYPE}:{self.name}:{number}",
            participant=Participant(kind="user", id="reader", display_name="reader"),
            content=text,
            metadata=MessageMetadata(channel_type=TYPE, channel_name=self.name,
                                     channel_id=self.name, message_id=str(number),
                                     mentions=tuple(mentions_in_text(text))))

    async def send_reply(self, inbound: StoredMessage, text: str, *,
                         agent_name: str | None = None) -> list[str]:
        with self.outbox.open("a", encoding="utf-8") as out:
            out.write(f"{agent_name}> {text}\n")
        return [inbound.id + ":reply"]


def build(name: str, settings: FilesSettings, context: ChannelContext) -> FilesChannel:
    return FilesChannel(name=name, inbox=Path(settings.inbox), outbox=Path(settings.outbox),
                        poll_seconds=settings.poll_seconds)


PLATFORM = Platform(name=TYPE, settings=FilesSettings, build=build, starter="""\
  files:
    type: files
    inbox: inbox.txt     # lines people write
    outbox: outbox.txt   # the agents' replies
""")


def registered_in(site: Path) -> Path:
    """A distribution in `site` (a folder to put on the path) that registers this platform."""
    return entry_point_package(site, distribution="threadline-files-platform",
                               group="threadline.platforms", name=TYPE,
                               value=f"{__name__}:PLATFORM")
