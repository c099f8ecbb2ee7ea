"""A turn's stages: what every turn walks, in one declared order, before anyone answers it.

    access       someone a channel's or an agent's list keeps out is not answered
    rate_limit   someone over their rate is told once, then not answered
    commands     `/name` is answered by its handler, never by a model
    handoff      in a conversation handed to people nobody answers (the turn is recorded)
    schedules    a schedule's turn: its text posted as written, or its prompt answered
    backfill     a conversation new to the history: what was said before is read first
    bursts       several messages of one person in a row: answered together
    ambient      after the turn: a listening agent may decide to speak
    (answer)     everything else: the agents it addresses answer (the pipeline's own step)

A stage is middleware, as bolt's listeners and python-telegram-bot's handler groups are: it
takes the turn and `call_next`, and either claims the turn (answers it, or records it quietly,
and returns) or passes it on, perhaps narrowed (`Turn.without`). Every kind of turn (a
person's message, a command, a scheduled prompt, an edit answered again) walks the same
stages, so a policy holds for all of them. A feature names the slot its stage fills
(`threadline.features`); `STAGE_ORDER` is the order, written here once. Stages of features
from other packages run after the built-in ones, before the answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from threadline.history.model import Participant, StoredMessage
from threadline.turn import AgentResult

if TYPE_CHECKING:
    from threadline.agents.agent import Agent
    from threadline.channels.base import Channel
    from threadline.commands import Command, CommandCall, CommandReply
    from threadline.history.addressing import Listener
    from threadline.history.inbox import TurnInbox
    from threadline.history.store import ConversationStore
    from threadline.interceptors.outbox import Outbox
    from threadline.schedules.turns import ScheduledTurn

STAGE_ORDER = ("access", "rate_limit", "commands", "handoff", "schedules", "backfill",
               "bursts", "ambient")


@dataclass(frozen=True, slots=True)
class Attachment:
    """Which agents listen on a channel (None: turns handed over without one)."""

    channel: Channel | None
    agents: tuple[Agent, ...]
    listeners: tuple[Listener, ...]


@dataclass(frozen=True, slots=True)
class CommandTurn:
    """A turn that sends a registered command: the channel whose agents it is for, and those
    it names (else every agent there; the first answers)."""

    command: Command
    call: CommandCall
    attachment: Attachment
    targets: tuple[Agent, ...]


Route = tuple[str, str]  # (agent name, why it answers)


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn as the stages see it: what was said, where, and whom it is for.

    Exactly one of `command`, `scheduled` and `routes` says what kind it is: a command, a
    schedule's turn, or a message (its routes, possibly none: nobody was addressed).
    """

    message: StoredMessage
    attachment: Attachment
    retried: bool
    log: Any
    actions: TurnActions
    command: CommandTurn | None = None
    scheduled: ScheduledTurn | None = None
    routes: tuple[Route, ...] = ()
    refused: frozenset[str] = field(default_factory=frozenset)  # agents a policy kept away

    @property
    def channel_name(self) -> str | None:
        channel = self.attachment.channel
        return channel.name if channel is not None else None

    @property
    def agents(self) -> tuple[str, ...]:
        """The agents this turn is for, in the order they would answer."""
        if self.command is not None:
            return tuple(a.name for a in self.command.targets)
        if self.scheduled is not None:
            return (self.scheduled.agent,)
        return tuple(name for name, _ in self.routes)

    @property
    def author(self) -> StoredMessage | None:
        """The turn as the person behind it said it, for the policies; None when nobody is
        (a schedule from the config file). A schedule's turn speaks for whoever set it."""
        if self.scheduled is None:
            return self.message
        if self.scheduled.by is None:
            return None
        return replace(self.message, participant=Participant(
            kind="user", id=self.scheduled.by, display_name=self.scheduled.by_name))

    def without(self, agents: frozenset[str]) -> Turn:
        """The same turn, no longer for `agents` (a policy refused them)."""
        command = self.command
        if command is not None:
            command = replace(command, targets=tuple(
                a for a in command.targets if a.name not in agents))
        return replace(self, command=command, refused=self.refused | agents,
                       routes=tuple(r for r in self.routes if r[0] not in agents))


Next = Callable[[Turn], Awaitable[list[AgentResult]]]


class Stage(Protocol):
    """One step every turn walks; see the module docstring.

    A stage that does nothing once `call_next` returned says so with a class attribute
    `acts_after_answer = False` (see `answer_ends_walk`)."""

    async def __call__(self, turn: Turn, call_next: Next) -> list[AgentResult]: ...


def answer_ends_walk(stages: Sequence[Stage]) -> bool:
    """Whether a turn is done once its answer step is: no stage acts after it (speaks,
    posts, marks turns answered), so the pipeline marks the turn answered with its last
    reply, in the same write (`threadline.after_delivery`). A stage that does not say
    `acts_after_answer = False` is taken to act after: its turns are marked answered once
    the walk is done, as every turn's promise asks ("answered" after every reply)."""
    return not any(getattr(stage, "acts_after_answer", True) for stage in stages)


class TurnActions(Protocol):
    """What the turn pipeline does for a stage: its one way to record, answer and post."""

    @property
    def agents(self) -> Mapping[str, Agent]: ...

    @property
    def store(self) -> ConversationStore: ...

    @property
    def inbox(self) -> TurnInbox: ...

    @property
    def outbox(self) -> Outbox | None: ...

    async def record(self, message: StoredMessage) -> StoredMessage | None:
        """Store the turn taken, as its author left it (None: they deleted it meanwhile)."""
        ...

    async def answer(self, turn: Turn, responder: Agent, answer: CommandReply, *,
                     stop_reason: str, command: str | None = None,
                     reply_id: str | None = None) -> AgentResult:
        """An answer written without a model, posted once through the reply ledger and
        recorded (taken from the ledger when an earlier attempt posted it)."""
        ...

    async def settle(self, turn_ids: Sequence[str], results: list[AgentResult]) -> None:
        """Mark turns answered by `results` together with the turn walking the stages (a
        burst, `threadline.bursts`), in their order; whoever waits on one is told."""
        ...

    @property
    def attachments(self) -> Mapping[str, Attachment]:
        """Each channel's agents, by the channel's name."""
        ...

    async def run_agent(self, agent: Agent, inbound: StoredMessage, turn: Turn, *,
                        reason: str, whole: bool = False) -> AgentResult | None:
        """The agent's answer to `inbound`, posted and recorded (None when it failed)."""
        ...


async def walk(stages: Sequence[Stage], turn: Turn, answer: Next) -> list[AgentResult]:
    """Run `turn` through `stages` in order, then `answer` unless a stage claimed it."""

    async def step(index: int, current: Turn) -> list[AgentResult]:
        if index == len(stages):
            return await answer(current)
        return await stages[index](current, lambda onward: step(index + 1, onward))

    return await step(0, turn)


def in_order(named: Mapping[str, Stage]) -> list[Stage]:
    """The stages `named` holds, built-in slots in `STAGE_ORDER`, then the others."""
    return [*(named[n] for n in STAGE_ORDER if n in named),
            *(stage for n, stage in named.items() if n not in STAGE_ORDER)]
