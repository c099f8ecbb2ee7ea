"""The channel contract: what every platform adapter does, and nothing more.

A channel turns each platform event into one normalized inbound `StoredMessage` and hands it to
its `ChannelEvents` (in practice the runtime's team of agents), and posts replies back in the
platform's own terms: in the thread or reply chain the inbound message belongs to, split under
the platform's length limit, waiting out rate limits.

Normalization, shared by every adapter:
- `conversation_id` is stable and documented per platform (`slack:TEAM:CHANNEL[:THREAD_TS]`,
  `telegram:CHAT_ID[:TOPIC_ID]`, `discord:GUILD:CHANNEL[:THREAD]`, `local:NAME`).
- `id` is derived from the platform's own message id (so a redelivery is the same turn) and
  `metadata.message_id` is the platform id itself.
- `metadata.mentions` holds the platform ids and names the message mentions (`U123BOT`,
  `@support_bot`, a snowflake); `metadata.reply_to_participant_id` the platform id of the author
  of the message it replies to. The runtime matches both against each agent's aliases, which
  include the channel's `identity` ids.
- The bot's own messages are never delivered; other bots only when `allow_bots` is set.

Replies are written live where the platform allows: `open_reply` gives a `LiveReply` that
shows a status while the agent works, the text as the model writes it (when `streaming` is
on), and ends as the final text, once. The default posts once at the end with `send_reply`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, ClassVar, Protocol

import structlog

from threadline.channels.files import FileIntake
from threadline.errors import (
    ChannelError,
    ChannelPermanentError,
    ConfigError,
    InvalidMessageError,
)
from threadline.history.files import TurnFile
from threadline.history.model import MessageMetadata, StoredMessage
from threadline.history.platform_ids import id_parts
from threadline.listening import Listener
from threadline.schedules.turns import operator_wrote

if TYPE_CHECKING:
    from threadline.commands import Command, CommandChoice

log = structlog.get_logger("threadline.channels")

# The command a feedback button press sends as the person pressing it (`offer_feedback`):
# named here, where channels can read it, and answered by `threadline.feedback.command`.
FEEDBACK_COMMAND = "feedback"


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """The bot's own ids on a platform, filled in when the channel starts."""

    user_id: str
    username: str | None = None
    display_name: str | None = None
    extra_ids: tuple[str, ...] = field(default=())

    @property
    def aliases(self) -> tuple[str, ...]:
        """Every string a mention of this bot may resolve to, for agents' alias lists."""
        names = [self.user_id, self.username, self.display_name, *self.extra_ids]
        return tuple(dict.fromkeys(n for n in names if n))


class ChannelEvents(Protocol):
    """Receives normalized events from a channel (implemented by the runtime's turn pipeline).

    The acknowledgement contract: `await events.on_message(message, channel)` returns once the
    inbound turn is durably recorded as "to answer"; the answer then runs in the background,
    owned by the pipeline, which calls `channel.send_reply`. If the turn could not be recorded
    it raises `TurnNotRecordedError`. A channel tells its platform "received" (Slack's HTTP 200
    or Socket Mode ack, Telegram's polling offset or webhook 200) only after `on_message`
    returned, and when it raised, does not, so the platform delivers the message again.

    The receiver, not the channel, drops redeliveries of a message (by its stored id, which
    the channel derives from the platform id) and keeps each conversation's turns in arrival
    order; a channel may therefore hand the same message over more than once.
    """

    async def on_message(self, message: StoredMessage, channel: Channel) -> None:
        """A new inbound message: returns once it is recorded, or raises
        `TurnNotRecordedError` (see the class docstring)."""
        ...

    async def until_answered(self, message: StoredMessage, channel: Channel) -> None:
        """Like `on_message`, but returns once this process answered the turn (the local
        channel, which has no platform to acknowledge and prints the replies)."""
        ...

    async def on_edit(self, conversation_id: str, message_id: str, content: str) -> None:
        """A user edited a message; `message_id` is the stored id the channel derived. A turn
        still waiting to be answered is answered as edited; an answered one is edited."""
        ...

    async def on_delete(self, conversation_id: str, message_id: str) -> None:
        """A user deleted a message; `message_id` is the stored id the channel derived. A turn
        still waiting to be answered is not answered; a stored one leaves the history."""
        ...

    async def on_context(self, message: StoredMessage) -> None:
        """What the platform says about a conversation, as a system turn (the channel a person
        looks at beside Slack's assistant thread): recorded in its history, never answered."""
        ...

    async def last_heard(self, prefix: str, since: datetime, before: datetime | None
                         ) -> list[StoredMessage]:
        """The newest turn a person said (before `before`, when given) in each conversation
        whose id starts with `prefix` and that was active since `since`: where a channel
        whose platform never sends an event again picks up after it was away
        (`channels.catch_up`)."""
        ...


class LiveReply(ABC):
    """One reply on a platform while it is written: a status, the text so far, the final text.

    `working` and `show` never wait for the platform (they hand work to the reply's own pace,
    within the platform's rate limits), so a slow platform never slows the model. `finish` is
    called once and leaves the platform showing exactly the final text, status cleared;
    `close` clears the status and stops without posting (a turn with nothing to say). Both
    are safe to call after the other.
    """

    async def working(self, activity: str | None = None) -> None:
        """Show that the agent is thinking (None) or running the tool `activity`; by default
        nothing is shown."""
        return None

    def show(self, text: str) -> None:
        """The reply so far, whole (it may start over after a tool round); by default it is
        not shown before it is finished."""
        return None

    @abstractmethod
    async def finish(self, text: str) -> list[str]:
        """Make the reply read `text` exactly; the platform ids of every message it occupies.

        Raises `ChannelError` (`ChannelPermanentError` when retrying cannot help) as
        `send_reply` does.
        """

    async def close(self) -> None:
        """Clear the status and stop background work without posting anything more (by
        default there is none)."""
        return None


class Post(Protocol):
    """Posts a reply's text where `inbound` was said: `Channel.send_reply`'s shape."""

    async def __call__(self, inbound: StoredMessage, text: str, *,
                       agent_name: str | None = None) -> list[str]: ...


class PostedOnce(LiveReply):
    """The reply posted whole through `post` when it is finished: for channels and settings
    without streaming, and for answers that are never streamed (a command's)."""

    def __init__(self, post: Post, inbound: StoredMessage, agent_name: str | None) -> None:
        self._post, self._inbound, self._agent_name = post, inbound, agent_name

    async def finish(self, text: str) -> list[str]:
        return await self._post(self._inbound, text, agent_name=self._agent_name)


def thread_opening(message: StoredMessage, *, thread_conversation_id: str) -> StoredMessage:
    """A channel post as the first turn of the thread under it (its own conversation), so
    whoever answers in the thread sees what started it. One id per thread and post: storing
    it twice stores it once."""
    root = message.metadata.message_id
    return replace(message, id=f"{thread_conversation_id}:{root}",
                   conversation_id=thread_conversation_id, scope="thread",
                   metadata=replace(message.metadata, thread_id=root),
                   sequence=None, token_count=None)


class Channel(ABC):
    """One connection to one platform (one bot token)."""

    channel_type: ClassVar[str]
    max_message_chars: ClassVar[int]
    # Why the platform cannot give a bot the messages sent before it heard them (None: it
    # can, `earlier_messages`); said to whoever asks.
    no_earlier_messages: ClassVar[str | None] = (
        "this platform gives a bot no messages sent before it heard them")

    def __init__(self, *, name: str, allow_bots: bool = False, streaming: bool = True,
                 broadcasters: Iterable[str] = ()) -> None:
        self.name = name
        self.allow_bots = allow_bots
        self.streaming = streaming
        self.broadcasters = frozenset(broadcasters)
        self.identity: BotIdentity | None = None
        # Where a person adds this bot to a server, when the platform has such a link (Discord's
        # OAuth2 invite); learned by `check()`, printed by `threadline check`.
        self.invite_url: str | None = None
        # Where the app is installed, one line per workspace, when one channel serves many
        # (Slack's OAuth installs); learned by `check()`, printed by `threadline check`.
        self.installations: tuple[str, ...] = ()
        # The commands people may send here (`/forget`), set by the team that attaches the
        # channel; a platform with a command menu is told them at start. A command arrives as
        # an ordinary turn whose text is the command as typed (`/forget confirm`).
        self.commands: tuple[Command, ...] = ()
        # Where the files people send are kept and how large they may be (set by the team;
        # None: files are not taken, and a turn that brings one says so).
        self.file_intake: FileIntake | None = None
        # Platform events that could not be read and were skipped (`skip_event`).
        self.skipped_events = 0

    @abstractmethod
    async def start(self, events: ChannelEvents) -> None:
        """Connect, learn `identity`, and begin delivering events; returns once ready."""

    @abstractmethod
    async def stop(self) -> None:
        """Stop taking events and close connections; safe to call twice."""

    async def earlier_messages(self, message: StoredMessage, *, limit: int
                               ) -> list[StoredMessage]:
        """Up to `limit` messages said before `message` in its thread (or channel), oldest
        first, as turns with their platform ids, for a bot that joins a conversation late.
        Raises `ChannelError` when the platform cannot give them (`no_earlier_messages`)."""
        raise ChannelError(f"channel {self.name}: {self.no_earlier_messages}")

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[None]:
        """Connected enough for `earlier_messages`, taking no events: an operator's
        `threadline history backfill`, beside (or without) the running bot."""
        why = self.no_earlier_messages or "its earlier messages are read by the running bot only"
        raise ChannelError(f"channel {self.name}: {why}")
        yield  # an async generator, as asynccontextmanager needs

    @abstractmethod
    async def send_reply(
        self, inbound: StoredMessage, text: str, *, agent_name: str | None = None
    ) -> list[str]:
        """Post `text` where `inbound` was said (thread, topic, reply); returns platform ids.

        Long text is split under `max_message_chars`; rate limits are waited out; a permanent
        failure raises `ChannelPermanentError` naming the conversation.
        """

    async def send_files(self, inbound: StoredMessage, files: Sequence[TurnFile]) -> list[str]:
        """Upload files an agent's tools made where `inbound` was said, after the reply's
        text; the platform ids. Each platform uploads in its own way (`_upload`)."""
        store = self.file_intake.store if self.file_intake is not None else None
        ids: list[str] = []
        for file in files:
            data = await store.get(file.sha256) if store is not None else None
            if data is None:
                raise ChannelPermanentError(
                    f"{self.channel_type} channel {self.name!r} cannot send {file.name!r} to "
                    f"{inbound.conversation_id!r}: its bytes are not kept (files not set up, "
                    "or forgotten)")
            ids += await self._upload(inbound, file, data)
        return ids

    async def _upload(self, inbound: StoredMessage, file: TurnFile, data: bytes) -> list[str]:
        """Post one file on the platform; a platform that cannot says so."""
        raise ChannelPermanentError(f"{self.channel_type} channel {self.name!r} cannot upload "
                                    f"files; {file.name!r} was not sent")

    def open_reply(self, inbound: StoredMessage, *, agent_name: str | None = None) -> LiveReply:
        """A reply to `inbound` written live (see `LiveReply`); the default posts it once."""
        return PostedOnce(self.send_reply, inbound, agent_name)

    async def send_choices(
        self, inbound: StoredMessage, text: str, choices: Sequence[CommandChoice], *,
        agent_name: str | None = None,
    ) -> list[str]:
        """`send_reply` with buttons: pressing one sends its command as the person pressing.

        A platform without buttons posts the text alone (it says what to type instead).
        """
        return await self.send_reply(inbound, text, agent_name=agent_name)

    async def offer_feedback(self, reply: StoredMessage, platform_ids: Sequence[str],
                             choices: Sequence[CommandChoice]) -> bool:
        """Put `choices` (a reply's 👍 and 👎) under the last message of an agent's posted
        `reply` (`platform_ids`, as posted); whether they are shown. A platform without
        buttons shows none (people can type the command)."""
        return False

    def delivered_here(self, inbound: StoredMessage) -> str:
        """The platform channel id of a message this platform delivered; a reply to another
        platform's message is refused the same way on every platform (`InvalidMessageError`)."""
        meta = inbound.metadata
        if meta.channel_type != self.channel_type or not meta.channel_id:
            raise InvalidMessageError(
                f"{self.channel_type} channel {self.name!r} cannot reply to {inbound.id!r} in "
                f"{inbound.conversation_id!r}: it came from channel_type "
                f"{meta.channel_type!r} with channel_id {meta.channel_id!r}; it needs a "
                "message this channel delivered")
        return meta.channel_id

    def reply_conversation_id(self, inbound: StoredMessage) -> str:
        """The conversation a reply to `inbound` will belong to.

        The inbound's own, unless the platform opens a new thread for the reply (Slack answers
        a channel post in a thread under it): then the thread's conversation, so the reply and
        the follow-ups in that thread share one history.
        """
        return inbound.conversation_id

    def metadata_for(self, conversation_id: str) -> MessageMetadata:
        """Where a post to `conversation_id` goes, with nothing to reply to (a schedule the
        YAML keeps). The default reads `TYPE:CHANNEL`; platforms with workspaces or
        threads read their own shape (`_conversation_parts`)."""
        channel_id, thread_id = self._conversation_parts(conversation_id)
        return MessageMetadata(channel_type=self.channel_type, channel_name=self.name,
                               channel_id=channel_id, thread_id=thread_id)

    def _conversation_parts(self, conversation_id: str, *, workspace: bool = False
                            ) -> tuple[str, str | None]:
        """(channel id, thread id or None) of `TYPE[:WORKSPACE]:CHANNEL[:THREAD]`."""
        parts = id_parts(conversation_id)
        wanted = 3 if workspace else 2
        if parts[0] != self.channel_type or len(parts) not in (wanted, wanted + 1) or not all(
                parts):
            shape = ":WORKSPACE" if workspace else ""
            raise ConfigError(f"{conversation_id!r} is not a conversation of {self.channel_type} "
                              f"channel {self.name!r}; write {self.channel_type}{shape}:CHANNEL"
                              f"[:THREAD]")
        return parts[wanted - 1], parts[wanted] if len(parts) > wanted else None

    def may_broadcast(self, inbound: StoredMessage, agent_name: str | None) -> bool:
        """Whether a post answering `inbound` may notify the whole channel: the operator's
        own words (a fixed message of a schedule the YAML keeps), or an agent allowed to
        (`agents.NAME.broadcast`). Nothing a member or another agent wrote may."""
        return operator_wrote(inbound) or (agent_name is not None
                                           and agent_name in self.broadcasters)

    def link_to(self, message: StoredMessage) -> str | None:
        """A link people can open to `message` on the platform (a handoff notice carries
        it), or None where the platform has none (a private chat)."""
        return None

    async def person_timezone(self, message: StoredMessage) -> str | None:
        """The IANA time zone the platform gives for the message's author (None: unknown),
        for reading "tomorrow 9:00" in their time."""
        return None

    async def check(self) -> list[str]:
        """Start-up problems that would make the bot silent (privacy mode, intents)."""
        return []

    @property
    def reads_terminal(self) -> bool:
        """Whether a person chats through this process's terminal (the local room); the
        command then keeps its log lines out of the conversation."""
        return False

    def listeners(self) -> list[Listener]:
        """The ports `start()` will listen on (an HTTP events endpoint, a webhook), each named
        by its setting; `threadline check` tries them. None for a channel that only dials out."""
        return []

    def receiving(self) -> str | None:
        """None while the channel receives events; otherwise what keeps it deaf (read by
        `/readyz` and `threadline check`). By default a started channel receives; a channel
        whose listener can end on its own says so (see `channels.supervise`)."""
        return None if self.identity is not None else "not connected"

    def holding(self) -> dict[str, object] | None:
        """The part of the platform this replica serves when replicas split it (a Discord
        channel's shards, for `/readyz`); None: all of it."""
        return None

    def skip_event(self, event_id: object, error: BaseException | str) -> None:
        """A platform event that cannot be read or handled: logged with its platform id,
        counted (`threadline_skipped_events_total`), and left behind so the channel goes on
        with the next one. One bad event must never stop a channel from listening."""
        self.skipped_events += 1
        log.warning("channel.event_skipped", channel=self.name, platform=self.channel_type,
                    event_id=str(event_id), error=repr(error)[:500],
                    outcome="skipped; the channel goes on with the next event")
