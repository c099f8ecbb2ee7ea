"""Who a turn is for: the channel's agents it addresses, the command it sends, and which of
our own bots wrote it.

Decided once per turn, from what the channels say of themselves (each attachment: a channel
and the agents listening there) and `history.addressing.route`. A reply to a reply reaches
the agent that wrote it even when several agents share one bot account: the agents' posted
messages are remembered (the store is asked for older ones).
"""

from __future__ import annotations

from collections import OrderedDict

import structlog

from threadline.commands import CommandRegistry
from threadline.errors import StoreError
from threadline.history.addressing import normalize_mention, route
from threadline.history.model import StoredMessage
from threadline.history.store import ConversationStore
from threadline.stages import Attachment, CommandTurn, Route
from threadline.turn import AgentResult

log = structlog.get_logger("threadline.pipeline")

MAX_REMEMBERED_REPLIES = 10_000


class Routing:
    """The channels' attachments and what routing remembers; see the module docstring."""

    def __init__(self, *, store: ConversationStore, commands: CommandRegistry,
                 default: Attachment, answer_bots: bool = False) -> None:
        self.store = store
        self.commands = commands
        self.default = default
        self.answer_bots = answer_bots
        self.attachments: dict[str, Attachment] = {}
        # (conversation, platform message id) -> agent name.
        self._reply_authors: OrderedDict[tuple[str, str], str] = OrderedDict()

    def attachment(self, channel_name: str | None) -> Attachment:
        """The agents listening on the channel a turn came through (the default: none)."""
        return self.attachments.get(channel_name or "", self.default)

    async def routes(self, message: StoredMessage, attachment: Attachment
                     ) -> tuple[Route, ...]:
        """Who answers a message, and why (`history.addressing.route`), decided once."""
        return tuple(route(message, attachment.listeners,
                           bot_aliases=self.bot_aliases(attachment),
                           author_of_replied=await self._author_of_replied(message),
                           answer_bots=self.answer_bots))

    def command_in(self, message: StoredMessage, attachment: Attachment
                   ) -> CommandTurn | None:
        """The registered command this turn sends, the channel whose agents it is for, and
        the agents it names (else all of them).

        `/name@bot` is for the bot named (another of our channels, perhaps); a bot we do not
        run makes it someone else's command, an ordinary turn here.
        """
        if message.participant.kind != "user":
            return None
        found = self.commands.find(message)
        if found is None:
            return None
        command, call = found
        chosen: Attachment | None = attachment
        if call.target is not None:
            target = normalize_mention(call.target)
            chosen = next((c for c in (attachment, *self.attachments.values())
                           if target in {normalize_mention(a) for a in self.bot_aliases(c)}),
                          None)
        if chosen is None:
            return None
        named = {normalize_mention(word) for word in call.args.split()}
        targets = tuple(a for a in chosen.agents if normalize_mention(a.name) in named)
        return CommandTurn(command, call, chosen, targets or chosen.agents)

    def is_own_bot(self, message: StoredMessage) -> bool:
        """A message posted by one of our own bot accounts (seen by another of our channels)."""
        author = normalize_mention(message.participant.id)
        return any(author in {normalize_mention(a) for a in self.bot_aliases(attachment)}
                   for attachment in self.attachments.values())

    @staticmethod
    def bot_aliases(attachment: Attachment) -> tuple[str, ...]:
        channel = attachment.channel
        return channel.identity.aliases if channel is not None and channel.identity else ()

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
            log.warning("pipeline.reply_author_unknown", conversation_id=message.conversation_id,
                        error=str(exc))
            return None
        if stored is not None and stored.participant.kind == "agent":
            return stored.participant.id
        return None

    def answering(self, inbound: StoredMessage, agent_name: str) -> None:
        """`agent_name` is about to answer in `inbound`'s thread: a follow-up there reaches it,
        even one that comes as soon as the reply shows, before its turn is done."""
        thread = inbound.metadata.thread_id
        if thread and (inbound.conversation_id, thread) not in self._reply_authors:
            self._remember(inbound.conversation_id, thread, agent_name)

    def remember_reply(self, inbound: StoredMessage, result: AgentResult) -> None:
        """Which agent wrote the posted parts (and answers in the thread), for replies to them."""
        thread = inbound.metadata.thread_id
        for platform_id in [*result.delivered_ids, *([thread] if thread else [])]:
            self._remember(inbound.conversation_id, platform_id, result.agent_name)

    def _remember(self, conversation_id: str, platform_id: str, agent_name: str) -> None:
        self._reply_authors[(conversation_id, platform_id)] = agent_name
        while len(self._reply_authors) > MAX_REMEMBERED_REPLIES:
            self._reply_authors.popitem(last=False)
