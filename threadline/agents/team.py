"""A team: several agents attached to channels, sharing one store, answering when addressed.

    team = Team([support, billing])
    team.attach(slack, respond_to_all=["support"])
    await team.start()                       # starts the channels; they deliver to the team
    results = await team.handle(message)     # or deliver a message without a channel

Who answers a message (a human's, or another bot's when `answer_bots` is set):
- every agent it names: `@support`, an alias, or a platform mention of the agent's own ids;
- the agent whose reply it answers (the reply's platform id is remembered when sent);
- otherwise, when it addresses the bot itself (a mention of the channel's identity, a DM, a
  reply to the bot), the channel's first agent: agents sharing one bot are told apart by name;
- every agent set to `respond_to_all` in that channel, addressed or not.
An agent's reply that names another agent is handed to it in-process (not through the platform
echo), for at most `max_hops` agent-to-agent turns in a row. No agent answers its own messages.

Turns of one conversation are handled one at a time, in arrival order (a FIFO lock per
conversation); different conversations run concurrently. Across worker processes on PostgreSQL,
`PostgresConversationLock` serializes a conversation with `pg_advisory_lock`.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import structlog

from threadline.agents.agent import Agent, AgentResult
from threadline.channels.base import Channel, ChannelEvents
from threadline.errors import ConfigError, StoreError
from threadline.history.addressing import Addressee, mentions_in_text, normalize_mention
from threadline.history.model import StoredMessage
from threadline.interceptors.base import Deliver
from threadline.interceptors.capture import DurableWriter
from threadline.locks import ConversationLock, LocalConversationLock

log = structlog.get_logger("threadline.team")
T = TypeVar("T")

MAX_REMEMBERED_REPLIES = 10_000


# -- the team ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Attachment:
    """Which agents listen on a channel; the first answers whatever addresses the bot itself."""

    channel: Channel | None
    agents: tuple[Agent, ...]
    respond_to_all: frozenset[str]


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


def _from_bot(message: StoredMessage) -> bool:
    return message.participant.kind == "agent" or bool(message.metadata.extra.get("is_bot"))


class Team:
    """Several agents sharing one store and one or more channels; see the module docstring."""

    def __init__(
        self,
        agents: Sequence[Agent],
        *,
        max_hops: int = 3,
        answer_bots: bool = False,
        respond_to_all: bool | Iterable[str] = False,
        lock: ConversationLock | None = None,
    ) -> None:
        if not agents:
            raise ConfigError("a Team needs at least one agent")
        keys = [normalize_mention(a.name) for a in agents]
        if len(set(keys)) != len(keys):
            raise ConfigError(
                f"agent names must differ (case-insensitively, as mentions are): "
                f"{', '.join(a.name for a in agents)}"
            )
        stores = {id(a.store) for a in agents}
        if len(stores) != 1:
            raise ConfigError(
                "every agent of a Team must share one conversation store (pass the same "
                "conversation_history= to each), so they all see one history"
            )
        if max_hops < 0:
            raise ConfigError(f"Team max_hops must be >= 0, got {max_hops}")
        self.agents = tuple(agents)
        self.store = agents[0].store
        self.max_hops = max_hops
        self.answer_bots = answer_bots
        self.lock: ConversationLock = lock or LocalConversationLock()
        self._default = _Attachment(None, self.agents,
                                    _respond_to_all_names(respond_to_all, self.agents))
        self._attachments: dict[int, _Attachment] = {}
        self._addressees = {a.name: Addressee.of(a.name, a.aliases) for a in agents}
        self._arrival = LocalConversationLock()
        self._in_flight: set[asyncio.Task[Any]] = set()
        # (conversation, platform message id) -> agent name, so a reply to a reply reaches
        # the agent that wrote it even when several agents share one bot account.
        self._reply_authors: OrderedDict[tuple[str, str], str] = OrderedDict()

    @property
    def writer(self) -> DurableWriter:
        return self.agents[0].writer

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
        self._attachments[id(channel)] = _Attachment(
            channel, chosen, _respond_to_all_names(respond_to_all, chosen))

    async def start(self, events: ChannelEvents | None = None) -> None:
        """Replay any leftover outbox, then start every attached channel.

        `events` is what the channels deliver to: the team itself, or a wrapper around it
        (the runtime's, which counts inbound events for its metrics).
        """
        self.writer.start()
        for attachment in self._attachments.values():
            assert attachment.channel is not None
            await attachment.channel.start(events or self)

    async def stop(self, *, drain_timeout: float = 30.0) -> None:
        """Finish the turns in flight while channels can still send, then stop them.

        Turns still running after `drain_timeout` seconds are logged and left to the
        channels' own shutdown; what they stored is kept, what they had not yet posted is not.
        """
        pending = self._in_flight - {asyncio.current_task()}
        if pending:
            _, late = await asyncio.wait(pending, timeout=drain_timeout)
            if late:
                log.warning("team.shutdown_timeout", in_flight=len(late),
                            drain_timeout=drain_timeout)
        for attachment in self._attachments.values():
            assert attachment.channel is not None
            await attachment.channel.stop()
        await self.writer.close()

    # -- ChannelEvents ---------------------------------------------------------------------

    async def on_message(self, message: StoredMessage, channel: Channel) -> None:
        try:
            await self.handle(message, channel)
        except Exception:
            log.exception("team.message_failed", conversation_id=message.conversation_id,
                          channel=channel.name, message_id=message.id)

    async def on_edit(self, conversation_id: str, message_id: str, content: str) -> None:
        await self._in_order(conversation_id, lambda: self._change(
            "edit", conversation_id, self.store.edit_message(conversation_id, message_id,
                                                             content)))

    async def on_delete(self, conversation_id: str, message_id: str) -> None:
        await self._in_order(conversation_id, lambda: self._change(
            "delete", conversation_id, self.store.delete_messages(conversation_id,
                                                                  [message_id])))

    async def _change(self, action: str, conversation_id: str, work: Awaitable[object]) -> None:
        try:
            await work
        except StoreError as exc:
            log.error("team.change_failed", action=action, conversation_id=conversation_id,
                      error=str(exc))

    # -- delivery --------------------------------------------------------------------------

    async def handle(
        self, message: StoredMessage, channel: Channel | None = None
    ) -> list[AgentResult]:
        """Store one inbound turn, let the addressed agents answer, return their results.

        With a channel, replies are posted there; without one (a local channel, a demo, a
        test) they are only stored and returned.
        """
        attachment = self._attachments.get(id(channel), self._default) if channel else (
            self._default)
        return await self._in_order(message.conversation_id,
                                    lambda: self._process(message, attachment))

    async def _in_order(self, conversation_id: str, work: Callable[[], Awaitable[T]]) -> T:
        """Run `work` after everything that arrived earlier for this conversation.

        The in-process lock is FIFO, so turns go in arrival order; `self.lock` then holds the
        conversation across worker processes (on PostgreSQL an advisory lock, which is not
        FIFO by itself, hence both).
        """
        task = asyncio.current_task()
        if task is not None:
            self._in_flight.add(task)
        try:
            async with self._arrival.hold(conversation_id), self.lock.hold(conversation_id):
                return await work()
        finally:
            if task is not None:
                self._in_flight.discard(task)

    async def _process(self, message: StoredMessage, attachment: _Attachment) -> list[AgentResult]:
        bound = log.bind(conversation_id=message.conversation_id,
                         channel=attachment.channel.name if attachment.channel else None)
        if self._own_bot(message):
            bound.debug("team.own_echo_ignored", message_id=message.id)
            return []
        if await self.writer.record(message) == "duplicate":
            bound.info("team.redelivery_ignored", message_id=message.id)
            return []
        results: list[AgentResult] = []
        await self._answer(message, attachment, hops=0, results=results, bound=bound)
        return results

    async def _answer(
        self,
        message: StoredMessage,
        attachment: _Attachment,
        *,
        hops: int,
        results: list[AgentResult],
        bound: Any,
    ) -> None:
        replied_author = await self._author_of_replied(message) if hops == 0 else None
        answering = self._addressed(message, attachment, hops=hops,
                                    author_of_replied=replied_author)
        if answering and hops == 0:
            message = await self._in_reply_thread(message, attachment)
        for agent, reason in answering.items():
            deliver = (self._delivery(attachment.channel, message, agent.name)
                       if attachment.channel is not None else None)
            try:
                result = await agent.invoke(message, aliases=self._identity_aliases(
                    agent, attachment), inbound_recorded=True, deliver=deliver,
                    addressed_because=reason)
            except Exception:
                bound.exception("team.agent_failed", agent=agent.name, message_id=message.id)
                continue
            results.append(result)
            if result.outbound is None:
                continue
            self._remember_reply(message, result)
            if not self._names_an_agent(result.outbound, attachment, author=agent):
                continue
            if hops + 1 > self.max_hops:
                bound.warning("team.hop_limit", agent=agent.name, hops=hops,
                              max_hops=self.max_hops)
                continue
            await self._answer(result.outbound, attachment, hops=hops + 1, results=results,
                               bound=bound)

    async def _in_reply_thread(
        self, message: StoredMessage, attachment: _Attachment
    ) -> StoredMessage:
        """The turn as it stands in the conversation the reply will live in.

        When the platform answers in a new thread (Slack, under a channel post), the post is
        also recorded as the first turn of that thread's conversation, so the reply and every
        follow-up in the thread see what started it.
        """
        channel = attachment.channel
        if channel is None:
            return message
        home = channel.reply_conversation_id(message)
        if home == message.conversation_id:
            return message
        root = message.metadata.message_id
        opening = replace(message, id=f"{home}:{root}", conversation_id=home, scope="thread",
                          metadata=replace(message.metadata, thread_id=root),
                          sequence=None, token_count=None)
        await self.writer.record(opening)
        return opening

    @staticmethod
    def _delivery(channel: Channel, inbound: StoredMessage, agent_name: str) -> Deliver:
        """Posts an agent's reply where `inbound` was said (capture stores it afterwards)."""

        async def deliver(text: str) -> list[str]:
            return await channel.send_reply(inbound, text, agent_name=agent_name)

        return deliver

    def _remember_reply(self, inbound: StoredMessage, result: AgentResult) -> None:
        """Which agent wrote the posted parts (and answers in the thread), for replies to them."""
        thread = inbound.metadata.thread_id
        for platform_id in [*result.delivered_ids, *([thread] if thread else [])]:
            self._reply_authors[(inbound.conversation_id, platform_id)] = result.agent_name
        while len(self._reply_authors) > MAX_REMEMBERED_REPLIES:
            self._reply_authors.popitem(last=False)

    # -- routing ---------------------------------------------------------------------------

    def _own_bot(self, message: StoredMessage) -> bool:
        """A message posted by one of our own bot accounts (seen by another of our channels)."""
        author = normalize_mention(message.participant.id)
        return any(
            a.channel is not None and a.channel.identity is not None
            and author in {normalize_mention(n) for n in a.channel.identity.aliases}
            for a in self._attachments.values()
        )

    def _identity_aliases(self, agent: Agent, attachment: _Attachment) -> tuple[str, ...]:
        """The bot's platform ids count as the agent's own names when it is the default."""
        channel = attachment.channel
        if channel is None or channel.identity is None or attachment.agents[0] is not agent:
            return ()
        return channel.identity.aliases

    def _names_an_agent(self, message: StoredMessage, attachment: _Attachment, *,
                        author: Agent) -> bool:
        return any(self._addressees[a.name].is_mentioned(message)
                   for a in attachment.agents if a is not author)

    async def _author_of_replied(self, message: StoredMessage) -> str | None:
        """The agent that wrote the message this one replies to (memory first, then store)."""
        replied = message.metadata.reply_to_message_id
        if replied is None:
            return None
        known = self._reply_authors.get((message.conversation_id, replied))
        if known is not None:
            return known
        try:
            stored = await self.store.find_by_platform_id(message.conversation_id, replied)
        except StoreError as exc:
            log.warning("team.reply_author_unknown", conversation_id=message.conversation_id,
                        error=str(exc))
            return None
        if stored is not None and stored.participant.kind == "agent":
            return stored.participant.id
        return None

    def _addressed(
        self, message: StoredMessage, attachment: _Attachment, *, hops: int,
        author_of_replied: str | None = None,
    ) -> dict[Agent, str]:
        """The agents that answer `message`, in the channel's order, each with why.

        The reason is one of mention, alias, agent_mention (named in another agent's reply),
        reply, thread, dm and respond_to_all; see the module docstring for the rules.
        """
        author = message.participant
        if hops == 0 and _from_bot(message) and not self.answer_bots:
            return {}
        candidates = [a for a in attachment.agents
                      if not (author.kind == "agent" and author.id == a.name)]
        named = {a: self._mention_kind(a, message, hops=hops) for a in candidates
                 if self._addressees[a.name].is_mentioned(message)}
        if hops > 0:
            return named  # an agent's reply reaches only the agents it names
        for agent in candidates:
            if agent.name == author_of_replied and agent not in named:
                thread = message.metadata.thread_id
                named[agent] = ("thread" if thread is not None
                                and message.metadata.reply_to_message_id == thread else "reply")
        default = attachment.agents[0]
        if not named and default in candidates:
            reason = self._addresses_bot(message, attachment)
            if reason is not None:
                named[default] = reason
        for agent in candidates:
            if agent.name in attachment.respond_to_all and agent not in named:
                named[agent] = "respond_to_all"
        return {a: named[a] for a in sorted(named, key=attachment.agents.index)}

    @staticmethod
    def _mention_kind(agent: Agent, message: StoredMessage, *, hops: int) -> str:
        """`mention` when the agent's own name was used, `alias` for another of its names."""
        if hops > 0:
            return "agent_mention"
        name = normalize_mention(agent.name)
        by_name = (name in mentions_in_text(message.content)
                   or any(normalize_mention(m) == name for m in message.metadata.mentions))
        return "mention" if by_name else "alias"

    @staticmethod
    def _addresses_bot(message: StoredMessage, attachment: _Attachment) -> str | None:
        """Why the message addresses the bot itself (dm, mention, reply), or None."""
        if message.scope == "dm":
            return "dm"
        channel = attachment.channel
        if channel is None or channel.identity is None:
            return None
        bot = {normalize_mention(n) for n in channel.identity.aliases}
        mentioned = {normalize_mention(m) for m in message.metadata.mentions}
        mentioned.update(mentions_in_text(message.content))
        if bot & mentioned:
            return "mention"
        replied_to = message.metadata.reply_to_participant_id
        if replied_to is not None and normalize_mention(replied_to) in bot:
            return "reply"
        return None
