"""Commands people send to the bots (`/forget`, `/summary`, `/agents`): data, not model turns.

A command is a name, a description (what platforms show in their command menus) and an async
handler. Registering one more (`/forget-me`, say) is one `CommandRegistry.register` call: the
turn pipeline finds it in each inbound turn, the channels offer it on their platform at start
(Telegram's command list, Discord's application commands; Slack's slash commands are declared
in the app's settings and all reach the same request URL).

Names are lowercase letters, digits, `-` and `_`, at most 32 characters (what Telegram and
Discord accept). Telegram does not allow `-` in a command, so `-` and `_` are the same letter
here: `/forget_me` is `/forget-me`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from threadline.errors import ConfigError
from threadline.history.assembler import AssemblerOptions
from threadline.history.model import StoredMessage
from threadline.history.store import ConversationStore
from threadline.interceptors.outbox import Outbox

_NAME = re.compile(r"^[a-z0-9_-]{1,32}$")
# `/name`, `/name@bot` (Telegram in groups), then the arguments.
_CALL = re.compile(r"^/([A-Za-z0-9_-]{1,32})(?:@(\S+))?(?:\s+(.*))?$", re.DOTALL)


def command_key(name: str) -> str:
    """The name a command is known by: lowercase, `_` read as `-` (see the module docstring)."""
    return name.lower().replace("_", "-")


@dataclass(frozen=True, slots=True)
class CommandCall:
    """A command as written: `/forget@support_bot confirm` -> ("forget", "support_bot",
    "confirm")."""

    name: str
    target: str | None
    args: str

    @classmethod
    def parse(cls, text: str) -> CommandCall | None:
        """The command a message opens with, or None when it is not written as one."""
        match = _CALL.match(text.strip())
        if match is None:
            return None
        return cls(name=command_key(match.group(1)), target=match.group(2),
                   args=(match.group(3) or "").strip())


class CommandAgent(Protocol):
    """What a command handler may read of an agent (`threadline.agents.Agent` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def aliases(self) -> tuple[str, ...]: ...

    @property
    def assembler_options(self) -> AssemblerOptions: ...


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a turn was said: the channel (by its configured name), conversation, turn id."""

    channel: str
    conversation_id: str
    turn_id: str

    @classmethod
    def of(cls, message: StoredMessage, channel: str | None) -> Origin | None:
        """Where `message` was said, on the channel named `channel` (None: no channel)."""
        return cls(channel, message.conversation_id, message.id) if channel else None

    def to_json(self) -> str:
        return json.dumps([self.channel, self.conversation_id, self.turn_id])

    @classmethod
    def from_json(cls, text: str | None) -> Origin | None:
        if not text:
            return None
        channel, conversation_id, turn_id = json.loads(text)
        return cls(str(channel), str(conversation_id), str(turn_id))


class Notify(Protocol):
    """Posts a command's message where an earlier turn was said (another conversation, even
    another channel), recorded there like any answer; whether it could be posted."""

    async def __call__(self, origin: Origin, text: str, *,
                       choices: tuple[CommandChoice, ...] = (), tag: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class CommandRequest:
    """One command as its handler sees it.

    `message` is the command turn as recorded (its `sequence` filled in). `present` are the
    agents on the channel it was sent in (the channel's default first); `targets` those it is
    for: the agents named in the arguments, else every agent present. `bot` is the bot's own
    name on that channel's platform and `channel` that channel's name (both None without a
    channel).
    """

    call: CommandCall
    message: StoredMessage
    present: tuple[CommandAgent, ...]
    targets: tuple[CommandAgent, ...]
    bot: str | None
    store: ConversationStore
    outbox: Outbox | None = None  # turns waiting on disk for the store (erasing purges them)
    channel: str | None = None  # the name of the channel it came through, if any
    # Tells someone elsewhere (`/link` asks a code's owner in their own direct message);
    # None where no channel can post (turns handed over without one).
    notify: Notify | None = None

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(self.call.args.lower().split())


@dataclass(frozen=True, slots=True)
class CommandChoice:
    """A button under a command's answer: pressing it sends `command` as the person pressing."""

    label: str
    command: str


@dataclass(frozen=True, slots=True)
class CommandReply:
    """A command's answer; `detail` is kept with the stored answer (a later command reads it:
    `/forget confirm` finds the `/forget` it confirms). `choices` are shown as buttons where
    the platform has them; their commands can always be typed instead."""

    text: str
    detail: Mapping[str, Any] = field(default_factory=dict)
    choices: tuple[CommandChoice, ...] = ()
    # What is posted instead of `text` when the answer holds a secret for its reader alone
    # (a link code): `text` is the same with the secret masked, and only `text` is kept.
    private_text: str | None = None


CommandHandler = Callable[[CommandRequest], Awaitable[CommandReply]]


@dataclass(frozen=True, slots=True)
class Command:
    """A name, what it does (shown in the platforms' command menus), and its handler."""

    name: str
    description: str
    handler: CommandHandler
    usage: str = ""  # the arguments it takes, as people should type them
    # A whole message that sends this command in a direct message without the slash
    # ("link my account"); its text is the call's arguments.
    plain: re.Pattern[str] | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ConfigError(f"command name {self.name!r} must be 1-32 lowercase letters, "
                              "digits, '-' or '_' (what Telegram and Discord accept)")
        if not 1 <= len(self.description) <= 100:
            raise ConfigError(f"command /{self.name}: the description must be 1-100 characters "
                              f"(Discord's and Telegram's limit), got {len(self.description)}")


class CommandRegistry:
    """The commands a team answers, by name; see the module docstring."""

    def __init__(self, commands: Iterable[Command] = ()) -> None:
        self._commands: dict[str, Command] = {}
        for command in commands:
            self.register(command)

    def register(self, command: Command) -> None:
        key = command_key(command.name)
        if key in self._commands:
            raise ConfigError(f"a command named /{command.name} is already registered")
        self._commands[key] = command

    def get(self, name: str) -> Command | None:
        return self._commands.get(command_key(name))

    def __iter__(self) -> Iterator[Command]:
        return iter(self._commands.values())

    def __len__(self) -> int:
        return len(self._commands)

    def find(self, message: StoredMessage) -> tuple[Command, CommandCall] | None:
        """The registered command `message` opens with, if any."""
        if not message.content.startswith("/"):
            return self._plain(message)
        call = CommandCall.parse(message.content)
        if call is None:
            return None
        command = self.get(call.name)
        return (command, call) if command is not None else None

    def _plain(self, message: StoredMessage) -> tuple[Command, CommandCall] | None:
        if message.scope != "dm":
            return None
        for command in self._commands.values():
            if command.plain is not None and command.plain.match(message.content):
                return command, CommandCall(command.name, None, message.content.strip())
        return None
