"""A team: several agents attached to channels, sharing one store, answering when addressed.

    team = Team([support, billing])
    team.attach(slack, respond_to_all=["support"])
    await team.start()                       # starts the channels; they deliver to the team
    results = await team.handle(message)     # or hand over a message without a channel

The team says who is where (which agents listen on which channel, who answers everything);
what happens to a turn, from the moment a channel hands it over until its replies are posted
and stored, is the turn pipeline's job (`threadline.pipeline`), and who answers is decided by
`threadline.history.addressing.route`. Every agent of a team writes through one
`DurableWriter`, so a store has one outbox and one replay order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime

from threadline.agents.agent import Agent
from threadline.agents.approvals import ApprovalGate
from threadline.backends.parts import parts_of
from threadline.channels.base import Channel, ChannelEvents
from threadline.channels.catch_up import last_heard
from threadline.channels.files import FileIntake
from threadline.commands import BUILTIN_COMMANDS, CommandRegistry
from threadline.commands.stage import CommandStage
from threadline.errors import ConfigError
from threadline.history.addressing import Addressee, Listener, normalize_mention
from threadline.history.inbox import MemoryInbox, TurnInbox
from threadline.history.model import StoredMessage
from threadline.interceptors.capture import DurableWriter
from threadline.locks import ConversationLock, SingleProcessLock
from threadline.people.forget_me import FORGET_ME
from threadline.people.link_codes import UNLINK
from threadline.pipeline import TurnPipeline
from threadline.schedules.stage import ScheduleStage
from threadline.stages import Attachment, Stage, in_order
from threadline.turn import AgentResult


def default_commands() -> CommandRegistry:
    """A registry with the built-in commands (`/forget`, `/summary`, `/agents`) and a person's
    `/forget-me` and `/unlink` (`threadline.people`); `/link` is added where link codes are on
    (`threadline.people.link_codes.link_command`)."""
    return CommandRegistry((*BUILTIN_COMMANDS, FORGET_ME, UNLINK))


def _respond_to_all_names(value: bool | Iterable[str], agents: Sequence[Agent]) -> frozenset[str]:
    if isinstance(value, bool):
        return frozenset(a.name for a in agents) if value else frozenset()
    names = frozenset(value)
    unknown = names - {a.name for a in agents}
    if unknown:
        raise ConfigError(
            f"respond_to_all names {', '.join(sorted(unknown))}, which are not agents of this "
            f"channel ({', '.join(a.name for a in agents)})"
        )
    return names


def _attachment(channel: Channel | None, agents: Sequence[Agent],
                respond_to_all: bool | Iterable[str]) -> Attachment:
    everyone = _respond_to_all_names(respond_to_all, agents)
    return Attachment(channel=channel, agents=tuple(agents), listeners=tuple(
        Listener(name=a.name, addressee=Addressee.of(a.name, a.aliases),
                 respond_to_all=a.name in everyone) for a in agents))


class Team:
    """Several agents sharing one store and one or more channels; see the module docstring.

    `max_agent_turns` bounds the agent turns one inbound message may cause in total (its
    answers and every hand-off they start); `max_hops` bounds how deep hand-offs go.
    `lock` owns a conversation across worker processes (`PostgresConversationLock`); the
    default serves one process. `inbox` defaults to the store's own (`store.inbox`), or one in
    memory for stores without one. `commands` are the commands people may send (default: the
    built-in `/forget`, `/summary`, `/agents`; register more before `start`), which each channel
    offers on its platform at start. `answer_edits`: an edit of a message already answered
    is stored, and answered again only when this is on (an edit of a message still waiting is
    always answered as edited).
    `files`: where the files people send are kept and how (size limit, speech to text); every
    channel takes files in with it unless it was given its own, and every agent reads them.
    Without it a file is not taken and the turn says so.
    `stages`: the turn stages by slot (`threadline.stages`: access lists, rate limits, handoff,
    ...); commands and schedules' turns are answered unless a stage there replaces them.
    `approvals`: decides tool approvals as their button presses arrive.
    """

    def __init__(
        self,
        agents: Sequence[Agent],
        *,
        max_hops: int = 3,
        max_agent_turns: int = 4,
        answer_bots: bool = False,
        respond_to_all: bool | Iterable[str] = False,
        lock: ConversationLock | None = None,
        inbox: TurnInbox | None = None,
        writer: DurableWriter | None = None,
        scan_interval: float = 1.0,
        commands: CommandRegistry | None = None,
        answer_edits: bool = False,
        files: FileIntake | None = None,
        stages: Mapping[str, Stage] | None = None,
        approvals: ApprovalGate | None = None,
    ) -> None:
        if not agents:
            raise ConfigError("a Team needs at least one agent")
        keys = [normalize_mention(a.name) for a in agents]
        if len(set(keys)) != len(keys):
            raise ConfigError(
                f"agent names must differ (case-insensitively, as mentions are): "
                f"{', '.join(a.name for a in agents)}"
            )
        if len({id(a.store) for a in agents}) != 1:
            raise ConfigError(
                "every agent of a Team must share one conversation store (pass the same "
                "conversation_history= to each), so they all see one history"
            )
        if max_hops < 0 or max_agent_turns < 1:
            raise ConfigError(f"Team needs max_hops >= 0 and max_agent_turns >= 1, got "
                              f"{max_hops} and {max_agent_turns}")
        self.agents = tuple(agents)
        self.store = agents[0].store
        self.writer = writer or agents[0].writer
        for agent in agents:
            agent.writer = self.writer
        parts = parts_of(self.store)
        chosen = inbox or parts.inbox or MemoryInbox()
        self.lock: ConversationLock = lock or SingleProcessLock()
        self.pipeline = TurnPipeline(
            agents={a.name: a for a in agents}, inbox=chosen, writer=self.writer,
            lock=self.lock, default=_attachment(None, self.agents, respond_to_all),
            max_hops=max_hops, max_agent_turns=max_agent_turns, answer_bots=answer_bots,
            scan_interval=scan_interval, answer_edits=answer_edits,
            commands=default_commands() if commands is None else commands,
            stages=in_order({"commands": CommandStage(), "schedules": ScheduleStage(),
                             **(stages or {})}),
            approvals=approvals, together=parts.together)
        self._channels: list[Channel] = []
        self._starting: list[Channel] = []  # started (or starting) and not stopped yet
        self.files = files
        for agent in agents:
            agent.files = files.store if files is not None else None

    # -- set-up --------------------------------------------------------------------------

    def attach(
        self,
        channel: Channel,
        *,
        agents: Sequence[Agent] | None = None,
        respond_to_all: bool | Iterable[str] = False,
    ) -> None:
        """Let `agents` (default: all) listen on `channel`; the first is the bot's default."""
        chosen = tuple(agents) if agents is not None else self.agents
        strangers = [a.name for a in chosen if a not in self.agents]
        if not chosen or strangers:
            raise ConfigError(
                f"channel {channel.name!r}: attach needs agents of this team; "
                f"{', '.join(strangers) or 'none given'}"
            )
        if channel.name in self.pipeline.attachments:
            raise ConfigError(f"a channel named {channel.name!r} is already attached; channel "
                              "names must differ (turns are routed back to them by name)")
        self.pipeline.attachments[channel.name] = _attachment(channel, chosen, respond_to_all)
        self._channels.append(channel)

    async def start(self, events: ChannelEvents | None = None, *,
                    before_answering: Callable[[], Awaitable[None]] | None = None) -> None:
        """Start every attached channel, then answer: turns left from before first.

        `events` is what the channels deliver to: the team itself, or a wrapper around it
        (the runtime's, which counts inbound events for its metrics). Turns they hand over
        while others are still connecting, or while `before_answering` runs (the features
        getting ready), are recorded and answered once it is done.
        """
        for channel in self._channels:
            channel.commands = tuple(self.pipeline.commands)  # offered on its platform
            channel.file_intake = channel.file_intake or self.files
            self._starting.append(channel)  # stopped even if it fails or is cut off here
            await channel.start(events or self)
        if before_answering is not None:
            await before_answering()
        self.pipeline.start()

    async def stop(self, *, drain_timeout: float = 30.0) -> None:
        """Finish the turns being answered while channels can still send, then stop them.

        Turns still running after `drain_timeout` seconds are logged; turns recorded and not
        yet answered stay in the inbox and are answered at the next start.
        """
        await self.pipeline.stop(drain_timeout=drain_timeout)
        while self._starting:
            await self._starting.pop(0).stop()
        await self.writer.close()

    # -- ChannelEvents ---------------------------------------------------------------------

    async def on_message(self, message: StoredMessage, channel: Channel) -> None:
        """Record the turn durably (then the channel may acknowledge it); answered after."""
        await self.pipeline.receive(message, channel)

    async def until_answered(self, message: StoredMessage, channel: Channel) -> None:
        """Hand over a turn and wait until this process has answered it (the local channel)."""
        await self.pipeline.answered(message, channel)

    async def on_edit(self, conversation_id: str, message_id: str, content: str) -> None:
        """An edit: the pipeline's (a waiting turn is answered as edited)."""
        await self.pipeline.edits.edit(conversation_id, message_id, content)

    async def on_delete(self, conversation_id: str, message_id: str) -> None:
        """A deletion: the pipeline's (a waiting turn is not answered)."""
        await self.pipeline.edits.delete(conversation_id, message_id)

    async def on_context(self, message: StoredMessage) -> None:
        """Record a context turn in its conversation's history (durable: the outbox takes it
        when the store is away); nobody answers it, every agent sees it there."""
        await self.writer.record(message)

    async def last_heard(self, prefix: str, since: datetime, before: datetime | None
                         ) -> list[StoredMessage]:
        """Where a channel that was away picks up (`channels.catch_up`), read from the store."""
        return await last_heard(self.store, prefix=prefix, since=since, before=before)

    async def handle(
        self, message: StoredMessage, channel: Channel | None = None
    ) -> list[AgentResult]:
        """Hand over one inbound turn and return the results of the agents that answered it.

        With a channel, replies are posted there; without one (a script, a test) they are only
        stored and returned. A turn already received returns no results.
        """
        if channel is not None and channel.name not in self.pipeline.attachments:
            raise ConfigError(f"channel {channel.name!r} is not attached to this team")
        if not self.pipeline.started:
            self.pipeline.start()
        return await self.pipeline.answered(message, channel)
