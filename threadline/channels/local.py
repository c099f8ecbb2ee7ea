"""The local channel: a chat room inside the process, for the demo, tests and a terminal.

    local = LocalChannel(name="local", room="main", on_reply=print_reply)
    team.attach(local)
    await team.start()
    await local.say("@support where is my order?", user="ada")   # returns once answered

Conversation ids are `local:ROOM`. A message addresses agents with `@name`, parsed by the same
mention rules as every platform (`threadline.history.addressing`). Replies are handed to
`on_reply` and kept in `sent`; nothing leaves the process.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TextIO

import structlog

from threadline.channels.base import BotIdentity, Channel, ChannelEvents
from threadline.errors import ChannelError
from threadline.history.addressing import mentions_in_text
from threadline.history.model import (
    MessageMetadata,
    Participant,
    StoredMessage,
    new_message_id,
)

log = structlog.get_logger("threadline.channels.local")
CHANNEL_TYPE = "local"
# What a person typing into the local channel in a terminal sees before each line.
TERMINAL_PROMPT = "you> "


@dataclass(frozen=True, slots=True)
class LocalReply:
    """One reply an agent posted in the local room."""

    conversation_id: str
    agent_name: str | None
    text: str
    in_reply_to: str
    message_id: str


ReplyHandler = Callable[[LocalReply], Awaitable[None] | None]


class LocalChannel(Channel):
    """An in-process room: `say` delivers a user's line, replies go to `on_reply`."""

    channel_type = CHANNEL_TYPE
    max_message_chars = 4000

    def __init__(
        self,
        *,
        name: str = "local",
        room: str = "main",
        on_reply: ReplyHandler | None = None,
        allow_bots: bool = False,
    ) -> None:
        super().__init__(name=name, allow_bots=allow_bots)
        self.room = room
        self.on_reply = on_reply
        self.sent: list[LocalReply] = []
        self._events: ChannelEvents | None = None
        self._in_flight: set[asyncio.Task[None]] = set()

    @property
    def conversation_id(self) -> str:
        return f"{CHANNEL_TYPE}:{self.room}"

    async def start(self, events: ChannelEvents) -> None:
        self.identity = BotIdentity(user_id=f"{self.name}-bot", username=self.name)
        self._events = events
        log.info("channel.started", channel=self.name, conversation_id=self.conversation_id)

    async def stop(self) -> None:
        """Stop taking lines; lines already being answered are finished first."""
        self._events = None
        if self._in_flight:
            await asyncio.gather(*self._in_flight, return_exceptions=True)

    def message(self, text: str, *, user: str = "you", message_id: str | None = None
                ) -> StoredMessage:
        """The normalized inbound turn for one line a user typed."""
        platform_id = message_id or new_message_id()
        return StoredMessage(
            conversation_id=self.conversation_id,
            id=f"{CHANNEL_TYPE}:{self.room}:{platform_id}",
            participant=Participant(kind="user", id=user, display_name=user),
            content=text,
            metadata=MessageMetadata(
                channel_type=CHANNEL_TYPE, channel_name=self.name, channel_id=self.room,
                message_id=platform_id, mentions=tuple(mentions_in_text(text)),
            ),
        )

    async def say(self, text: str, *, user: str = "you", message_id: str | None = None
                  ) -> StoredMessage:
        """Deliver one user line and return once every reply to it was handed over."""
        events = self._events
        if events is None:
            raise ChannelError(f"local channel {self.name!r} is not started (or was stopped); "
                               "call start() before say()")
        message = self.message(text, user=user, message_id=message_id)
        task = asyncio.ensure_future(events.until_answered(message, self))
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)
        # Shielded: a caller that stops waiting does not abandon a turn half answered.
        await asyncio.shield(task)
        return message

    async def send_reply(
        self, inbound: StoredMessage, text: str, *, agent_name: str | None = None
    ) -> list[str]:
        reply = LocalReply(conversation_id=inbound.conversation_id, agent_name=agent_name,
                           text=text, in_reply_to=inbound.id, message_id=new_message_id())
        self.sent.append(reply)
        if self.on_reply is not None:
            outcome = self.on_reply(reply)
            if inspect.isawaitable(outcome):
                await outcome
        return [reply.message_id]


async def typed_lines(source: TextIO, *, prompt: str = "", echo: TextIO | None = None
                      ) -> AsyncIterator[str]:
    """Lines a person types (or a pipe holds), without the newline, until end of input.

    Read in a daemon thread rather than the loop's executor: a read blocked on a terminal must
    not keep the process alive after Ctrl-C or SIGTERM. `prompt` is written to `echo` before
    each line is read.
    """
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    wanted = threading.Event()  # the next prompt waits until the previous line was handled

    def read() -> None:
        while True:
            wanted.wait()
            wanted.clear()
            if prompt and echo is not None:
                echo.write(prompt)
                echo.flush()
            line = source.readline()
            loop.call_soon_threadsafe(lines.put_nowait, line.rstrip("\n") if line else None)
            if not line:
                return

    threading.Thread(target=read, name="threadline-input", daemon=True).start()
    while True:
        wanted.set()
        line = await lines.get()
        if line is None:
            return
        yield line
