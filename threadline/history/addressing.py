"""Who a turn is addressed to: the one place that decides whether an agent is being spoken to.

Used by the prompt assembler (addressed-only filtering) and by the team of agents (who answers).
Mentions are compared case-insensitively after normalizing platform markup: `<@U123>`,
`<@!123>`, `@name` and `name` all become `u123` / `123` / `name`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from threadline.history.model import StoredMessage

_MARKUP = re.compile(r"^<[@#][!&]?([^>|]+)(?:\|[^>]*)?>$")
_QUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”|`[^`]*`|^>.*$', re.MULTILINE)
_TEXT_MENTION = re.compile(r"(?:<@[!&]?([\w.-]+)(?:\|[^>]*)?>|(?<![\w@])@([\w.-]+))")
# The mentions a turn opens with ("@support, ..."), and what separates them from the rest.
_ADDRESS = re.compile(rf"^\s*(?:{_TEXT_MENTION.pattern}[\s,:;]*)+")


@lru_cache(maxsize=65_536)
def normalize_mention(raw: str) -> str:
    """One mention as a comparable key: markup and a leading @ removed, lower-cased."""
    text = raw.strip()
    match = _MARKUP.match(text)
    if match:
        text = match.group(1)
    return text.lstrip("@").strip().lower()


@lru_cache(maxsize=16_384)
def mentions_in_text(text: str) -> tuple[str, ...]:
    """Normalized mentions written in a text (`<@U1>`, `<@!1>`, `@name`), in order, once each.

    Mentions inside quotations ("...", “...”, `...`, or a line starting with `>`) are only
    quoted, not addressed: an agent quoting "@support said so" does not call on support.
    Cached: every prompt re-reads the same turns.
    """
    if "@" not in text:
        return ()
    found = (a or b for a, b in _TEXT_MENTION.findall(_QUOTED.sub(" ", text)))
    return tuple(dict.fromkeys(normalize_mention(m) for m in found))


def without_address(text: str) -> str:
    """The text without the mentions it opens with: "@support what is my cat called?" asks
    "what is my cat called?". Searching with the addressee's name finds every turn that
    names it (a bot called "support" in a chat about a support group), not the answer."""
    return _ADDRESS.sub("", text, count=1)


@dataclass(frozen=True, slots=True)
class Addressee:
    """An agent as mentions can name it: its id plus every alias (platform ids, names)."""

    agent_id: str
    aliases: frozenset[str]

    @classmethod
    def of(cls, agent_id: str, aliases: Iterable[str] = ()) -> Addressee:
        keys = {normalize_mention(agent_id), *(normalize_mention(a) for a in aliases)}
        return cls(agent_id=agent_id, aliases=frozenset(k for k in keys if k))

    def wrote(self, message: StoredMessage) -> bool:
        return message.participant.kind == "agent" and message.participant.id == self.agent_id

    def is_mentioned(self, message: StoredMessage) -> bool:
        """Mentioned in the metadata the channel resolved, or by `@alias` in the text."""
        if any(normalize_mention(m) in self.aliases for m in message.metadata.mentions):
            return True
        return any(m in self.aliases for m in mentions_in_text(message.content))

    def is_replied_to(self, message: StoredMessage) -> bool:
        replied = message.metadata.reply_to_participant_id
        return replied is not None and normalize_mention(replied) in self.aliases

    def is_addressed(self, message: StoredMessage, *, own_message_ids: frozenset[str]) -> bool:
        """Whether this turn concerns the agent: written by it, to it, in a DM, or in reply.

        `own_message_ids` are the platform ids of the agent's own turns and of the threads it
        posted in, so a reply in such a thread counts as addressed to it.
        """
        return (  # cheapest checks first: this runs for every loaded turn of every prompt
            self.wrote(message)
            or message.scope == "dm"
            or (message.metadata.thread_id is not None
                and message.metadata.thread_id in own_message_ids)
            or (message.metadata.reply_to_message_id is not None
                and message.metadata.reply_to_message_id in own_message_ids)
            or self.is_replied_to(message)
            or self.is_mentioned(message)
        )


def addressed_turns(
    turns: Iterable[StoredMessage], addressee: Addressee
) -> tuple[list[StoredMessage], list[StoredMessage]]:
    """Split turns into (kept, filtered out) for one agent; system turns, and turns said while
    the conversation was handed to people (`threadline.handoff`), are always kept."""
    turns = list(turns)
    # The platform ids of the agent's turns and of the threads it posted in: a reply to one
    # of them, or a turn in one of those threads, concerns the agent.
    own = frozenset(
        ref for m in turns if addressee.wrote(m)
        for ref in (m.metadata.message_id, m.metadata.thread_id) if ref
    )
    kept: list[StoredMessage] = []
    dropped: list[StoredMessage] = []
    for message in turns:
        said_to_people = "handoff" in message.metadata.extra
        if message.participant.kind == "system" or said_to_people or addressee.is_addressed(
            message, own_message_ids=own
        ):
            kept.append(message)
        else:
            dropped.append(message)
    return kept, dropped


@dataclass(frozen=True, slots=True)
class Listener:
    """An agent listening on a channel: how it is named, and whether it answers everything."""

    name: str
    addressee: Addressee
    respond_to_all: bool = False


def from_bot(message: StoredMessage) -> bool:
    """Written by an agent or by another bot account."""
    return message.participant.kind == "agent" or bool(message.metadata.extra.get("is_bot"))


def _addresses_bot_because(message: StoredMessage, bot_aliases: Iterable[str]) -> str | None:
    """`dm`, `mention` (of the bot account itself) or `reply` (to one of its messages)."""
    if message.scope == "dm":
        return "dm"
    bot = {normalize_mention(n) for n in bot_aliases}
    if not bot:
        return None
    mentioned = {normalize_mention(m) for m in message.metadata.mentions}
    mentioned.update(mentions_in_text(message.content))
    if bot & mentioned:
        return "mention"
    replied_to = message.metadata.reply_to_participant_id
    if replied_to is not None and normalize_mention(replied_to) in bot:
        return "reply"
    return None


def _mention_kind(listener: Listener, message: StoredMessage) -> str:
    """`mention` when the agent's own name was used, `alias` for another of its names."""
    name = normalize_mention(listener.name)
    by_name = (name in mentions_in_text(message.content)
               or any(normalize_mention(m) == name for m in message.metadata.mentions))
    return "mention" if by_name else "alias"


def route(
    message: StoredMessage,
    listeners: Sequence[Listener],
    *,
    bot_aliases: Iterable[str] = (),
    author_of_replied: str | None = None,
    handoff: bool = False,
    answer_bots: bool = False,
) -> list[tuple[str, str]]:
    """Which listeners answer `message`, in channel order, each with the reason why
    (`mention`, `alias`, `reply`, `thread`, `dm`, `respond_to_all`, `agent_mention`).

    - An agent named in the message (mention or alias) answers, and then only the named ones:
      an explicit `@billing` inside a thread `support` answered reaches billing alone.
    - Otherwise the agent whose message it replies to (`author_of_replied`, which includes the
      agent that answered in this thread); otherwise, when it addresses the bot account (a DM,
      a mention of the bot, a reply to it), the channel's first listener.
    - Listeners set to `respond_to_all` answer whatever else happens.
    - A `handoff` (an agent's reply) reaches only the agents it names. Nobody answers its own
      message; other bots' messages only with `answer_bots`.
    """
    author = message.participant
    if not handoff and from_bot(message) and not answer_bots:
        return []
    candidates = [listener for listener in listeners
                  if not (author.kind == "agent" and author.id == listener.name)]
    reasons = {c.name: ("agent_mention" if handoff else _mention_kind(c, message))
               for c in candidates if c.addressee.is_mentioned(message)}
    if handoff:
        return list(reasons.items())
    names = [c.name for c in candidates]
    if not reasons and author_of_replied in names:
        thread = message.metadata.thread_id
        reasons[author_of_replied] = ("thread" if thread is not None
                                      and message.metadata.reply_to_message_id == thread
                                      else "reply")
    elif not reasons and listeners and listeners[0].name in names:
        why = _addresses_bot_because(message, bot_aliases)
        if why is not None:
            reasons[listeners[0].name] = why
    for candidate in candidates:
        if candidate.respond_to_all:
            reasons.setdefault(candidate.name, "respond_to_all")
    return [(name, reasons[name]) for name in names if name in reasons]
