"""The local channel: a chat room inside the process, for the demo, tests and a terminal.

    local = LocalChannel(name="local", room="main", on_reply=print_reply)
    team.attach(local)
    await team.start()
    await local.say("@support where is my order?", user="ada")   # returns once answered

Conversation ids are `local:ROOM`. A message addresses agents with `@name`, parsed by the same
mention rules as every platform (`threadline.history.addressing`). Replies are handed to
`on_reply` and kept in `sent`; nothing leaves the process. Given `typed_input`, the room reads
the lines typed on a terminal (or piped in) and asks the runtime to stop when they end. It
reads the next line once the last one is answered, or as soon as an answer asks the person
something (an approval's Approve/Deny, typed as `/approve ID`): the turn that asked waits for
that line, which the pipeline decides on as soon as it is recorded.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TextIO

import structlog

from threadline.channels.base import BotIdentity, Channel, ChannelEvents
from threadline.channels.platform import ChannelContext, ChannelSettings, Platform
from threadline.commands import CommandChoice
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


@dataclass(frozen=True, slots=True)
class TypedInput:
    """Lines a person types into the room as `user`; `on_end` runs when the input ends."""

    source: TextIO
    user: str
    on_end: Callable[[], None]
    greeting: str | None = None  # shown first, on a terminal
    agents: tuple[str, ...] = ()  # named in the hint after a line nobody answered


def nobody_addressed(agents: Sequence[str]) -> str:
    """The hint after a line no agent answered (in a terminal room and in the demo)."""
    names = " or ".join(f"@{agent}" for agent in agents)
    return f"    (nobody was addressed: start with {names})"


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
        typed_input: TypedInput | None = None,
    ) -> None:
        super().__init__(name=name, allow_bots=allow_bots)
        self.room = room
        self.on_reply = on_reply
        self.sent: list[LocalReply] = []
        self._events: ChannelEvents | None = None
        self._in_flight: set[asyncio.Task[None]] = set()
        self._typed_input = typed_input
        self._reader: asyncio.Task[None] | None = None
        self._asked = asyncio.Event()  # an answer asked the person to choose: read on

    @property
    def reads_terminal(self) -> bool:
        """Whether a person types into this room on this process's terminal."""
        return self._typed_input is not None and self._typed_input.source.isatty()

    @property
    def conversation_id(self) -> str:
        return f"{CHANNEL_TYPE}:{self.room}"

    async def start(self, events: ChannelEvents) -> None:
        await self.check()
        self._events = events
        if self._typed_input is not None:
            self._reader = asyncio.ensure_future(self._read(self._typed_input))
        log.info("channel.started", channel=self.name, conversation_id=self.conversation_id)

    async def check(self) -> list[str]:
        """Nothing can be wrong with a room in this process; it learns its own identity."""
        self.identity = BotIdentity(user_id=f"{self.name}-bot", username=self.name)
        return []

    async def stop(self) -> None:
        """Stop taking lines; lines already being answered are finished first."""
        if self._reader is not None:
            self._reader.cancel()  # a line being answered finishes (say is shielded)
            self._reader = None
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

    async def send_choices(
        self, inbound: StoredMessage, text: str, choices: Sequence[CommandChoice], *,
        agent_name: str | None = None,
    ) -> list[str]:
        """The text alone (it says what to type); the room then reads the person's choice."""
        posted = await self.send_reply(inbound, text, agent_name=agent_name)
        self._asked.set()
        return posted

    async def _read(self, typed: TypedInput) -> None:
        """Typed lines go to the room; end of input asks the runtime to stop."""
        terminal = typed.source.isatty()
        if terminal and typed.greeting:
            print(typed.greeting, flush=True)
        async for line in typed_lines(typed.source, prompt=TERMINAL_PROMPT if terminal else "",
                                      echo=sys.stdout):
            if not line.strip():
                continue
            self._asked.clear()
            answering = asyncio.ensure_future(self._say_typed(line.strip(), typed, terminal))
            self._in_flight.add(answering)  # stop() finishes it; the loop holds tasks weakly
            answering.add_done_callback(self._in_flight.discard)
            asked = asyncio.ensure_future(self._asked.wait())
            try:
                await asyncio.wait({answering, asked}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                asked.cancel()
        if terminal:
            print(flush=True)  # Ctrl-D leaves the cursor after the prompt
        typed.on_end()

    async def _say_typed(self, line: str, typed: TypedInput, terminal: bool) -> None:
        try:
            message = await self.say(line, user=typed.user)
        except Exception as exc:  # the room keeps reading: the next line may be answered
            log.error("local.line_not_answered", conversation_id=self.conversation_id,
                      channel=self.name, error=str(exc))
            return
        answered = any(reply.in_reply_to == message.id for reply in self.sent)
        if terminal and not answered and typed.agents:
            print(nobody_addressed(typed.agents), flush=True)


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


class LocalSettings(ChannelSettings):
    """The in-process room; `threadline run` reads the lines typed on its standard input there
    and prints the replies: always (`true`), never (`false`, for services), or when it is
    attached to a terminal (`auto`). `threadline run --no-input` turns it off too."""

    type: Literal["local"]
    """local: this entry is a local channel."""
    room: str = "main"
    """The room's name; its conversation id is local:ROOM."""
    stdin: bool | Literal["auto"] = "auto"
    """Read the lines typed on standard input into the room and print the replies: true, false
    (services), or auto (when run in a terminal)."""
    user: str = "you"
    """The name the person typing in the terminal has in the history."""


def print_reply(reply: LocalReply) -> None:
    print(f"{reply.agent_name}> {reply.text}", flush=True)


def build(name: str, settings: LocalSettings, context: ChannelContext) -> LocalChannel:
    """The room; it reads this process's standard input when the settings and `run` allow."""
    reads = context.interactive and (
        settings.stdin is True or (settings.stdin == "auto" and sys.stdin.isatty()))
    if not reads:
        return LocalChannel(name=name, room=settings.room, allow_bots=settings.allow_bots)
    names = [f"@{agent}" for agent in context.agents] or ["@agent"]
    greeting = (f"Talk to {', '.join(names)} here, for example: {names[0]} hello. "
                "Leave with Ctrl-D (or Ctrl-C).")
    return LocalChannel(name=name, room=settings.room, allow_bots=settings.allow_bots,
                        on_reply=print_reply, typed_input=TypedInput(
                            source=sys.stdin, user=settings.user, greeting=greeting,
                            on_end=context.request_stop, agents=context.agents))


STARTER = """\
  local:
    type: local        # in-process room, for trying agents out
    # auto: when `threadline run` is started in a terminal, type messages there and read the
    # replies. false for services (or `threadline run --no-input`); true reads piped input too.
    stdin: auto
"""

PLATFORM = Platform(name="local", settings=LocalSettings, build=build, starter=STARTER)
