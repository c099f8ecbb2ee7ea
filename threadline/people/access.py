"""Who may ask what: allow and deny lists of people per channel and per agent, and admins.

Anyone who can post in a channel could otherwise address every agent and every command. An
entry names a platform identity (`slack:T1:U2`, `telegram:42`) or a person (`person-...`, from
`threadline people link`); a linked person is matched by any of their identities, so allowing
someone on Slack allows them on Telegram too once they linked the two.

A turn from someone a list keeps out is still stored (the channel's history stays whole) but
never answered, and the log says so (`turn.not_allowed`, with the list that refused it). Admins
are the only ones who may use a command that acts on other people's conversation (`/forget`,
`/bot on`) once an admin list is set; with no admin list anyone may, as before. The `access`
stage (`threadline.people.stages`) holds every kind of turn to these lists.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from threadline.history.model import StoredMessage
from threadline.history.speakers import identity_of
from threadline.history.store import ConversationStore
from threadline.people.directory import people_for


@dataclass(frozen=True, slots=True)
class PeopleList:
    """Who is let in: everyone when `allow` is empty, and never anyone `deny` names."""

    allow: frozenset[str] = frozenset()
    deny: frozenset[str] = frozenset()

    @classmethod
    def of(cls, allow: Iterable[str] = (), deny: Iterable[str] = ()) -> PeopleList:
        return cls(frozenset(allow), frozenset(deny))

    def admits(self, names: frozenset[str]) -> bool:
        return (not self.allow or bool(names & self.allow)) and not names & self.deny


@dataclass(frozen=True, slots=True)
class Access:
    """The deployment's lists: by channel name, by agent name, and its admins."""

    channels: Mapping[str, PeopleList] = field(default_factory=dict)
    agents: Mapping[str, PeopleList] = field(default_factory=dict)
    admins: frozenset[str] = frozenset()

    async def names_of(self, store: ConversationStore, message: StoredMessage) -> frozenset[str]:
        """Every name the author goes by: the identity, and their person's id and identities."""
        identity = identity_of(message)
        if identity is None:
            return frozenset()
        person = await people_for(store).person_of(identity)
        if person is None:
            return frozenset({identity})
        return frozenset({identity, person.person_id, *person.identities})

    async def refusal(self, store: ConversationStore, message: StoredMessage, *,
                      channel: str | None, agent: str) -> str | None:
        """Which list keeps this author from asking this agent here, or None when none does."""
        if message.participant.kind != "user":
            return None  # agents and bots are bounded by the team's hop limits
        lists = [(f"channel {channel}", self.channels.get(channel or "")),
                 (f"agent {agent}", self.agents.get(agent))]
        if not any(found is not None for _, found in lists):
            return None
        names = await self.names_of(store, message)
        for where, found in lists:
            if found is not None and not found.admits(names):
                return where
        return None

    async def is_admin(self, store: ConversationStore, message: StoredMessage) -> bool:
        """True when no admin list is set, or the author is on it."""
        if not self.admins:
            return True
        return bool(await self.names_of(store, message) & self.admins)
