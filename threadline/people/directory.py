"""Who is who: persons, their linked platform identities, and one-time link codes.

Identities are linked by an operator (`threadline people link`) or by the person with a code
the bot gave them on another platform, once the code's owner agreed
(`threadline.people.link_requests`); never by matching names. An identity nobody linked is a
person of its own: `person_of` answers None and every caller treats it alone; `unlink` makes an
identity alone again.

A link code is kept only as a hash, with where it was given (`origin`, so its owner can be asked
there), lives `CODE_MINUTES`, and works once: taking it deletes it, so two redemptions of one
code reach its owner at most once.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from threadline.errors import ConfigError
from threadline.history.beside import parts_beside
from threadline.history.model import StoredMessage, utc_now
from threadline.history.speakers import identity_of
from threadline.history.store import ConversationStore

CODE_MINUTES = 10
# No 0/O, 1/I/L: a code is read on one screen and typed on another.
_CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_PREFIX = "TL-"


def new_code() -> str:
    """A fresh code people can type: `TL-` and eight characters in two groups."""
    body = "".join(secrets.choice(_CODE_ALPHABET) for _ in range(8))
    return f"{CODE_PREFIX}{body[:4]}-{body[4:]}"


def code_hash(code: str) -> str:
    return hashlib.sha256(code.strip().upper().encode()).hexdigest()[:32]


def new_person_id() -> str:
    return "person-" + uuid.uuid4().hex[:12]


@dataclass(frozen=True, slots=True)
class IssuedCode:
    """A live link code taken for redemption: whose it is, where it was given, until when."""

    identity: str
    origin: str | None
    expires: datetime


@dataclass(frozen=True, slots=True)
class Person:
    """A person: an id and the platform identities linked to it (one, when never linked)."""

    person_id: str
    identities: tuple[str, ...]


@dataclass(slots=True)
class Batch:
    """One batch of a person's turns and what hangs on them."""

    turns: list[StoredMessage]
    replies: list[StoredMessage] = field(default_factory=list)
    summaries: list[StoredMessage] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    inbox: list[dict[str, Any]] = field(default_factory=list)
    deliveries: list[dict[str, Any]] = field(default_factory=list)
    last_row: int = 0

    def counts(self) -> dict[str, int]:
        return {"turns": len(self.turns), "replies": len(self.replies),
                "summaries": len(self.summaries), "reply_records": len(self.records),
                "inbox": len(self.inbox), "deliveries": len(self.deliveries)}



class PeopleDirectory(Protocol):
    """Persons and their identities; see the module docstring."""

    async def link(self, identities: Sequence[str], *, linked_by: str) -> str:
        """Put these identities under one person (merging persons they belong to); its id."""
        ...

    async def person_of(self, identity: str) -> Person | None:
        """The person an identity is linked to, None when it was never linked."""
        ...

    async def find(self, reference: str) -> Person | None:
        """A person by id, or by any of its identities."""
        ...

    async def remove(self, person_id: str) -> int:
        """Forget a person and its identities (the turns are the caller's); identities gone."""
        ...

    async def unlink(self, identity: str) -> bool:
        """Make `identity` a person alone again; False when it was not linked to anyone."""
        ...

    async def issue_code(self, identity: str, *, minutes: float = CODE_MINUTES,
                         origin: str | None = None) -> str:
        """A one-time code for `identity`, given at `origin` (where to ask its owner)."""
        ...

    async def take_code(self, hashed: str) -> IssuedCode | None:
        """The live code with this hash (`code_hash`), deleted as it is taken; None when it
        is unknown, used or expired."""
        ...

    def kept(self, person: Person) -> AsyncIterator[Batch]:
        """Everything kept about a person, batch by batch (memory stays bounded)."""
        ...

    def forget(self, person: Person, totals: dict[str, int]) -> AsyncIterator[dict[str, int]]:
        """Delete what is kept about a person batch by batch, yielding each batch's counts;
        then the person itself, leaving an audit line of `totals` (the caller's running
        counts, never content) where the backend keeps one."""
        ...


# -- in memory ------------------------------------------------------------------------------


ALL_CONVERSATIONS = 1_000_000_000


class MemoryPeopleDirectory:
    """The memory backend's directory, in process memory like its history; what is kept
    about a person is found through the history protocol, a conversation at a time."""

    def __init__(self, history: ConversationStore) -> None:
        self.history = history
        self._owner: dict[str, str] = {}
        self._codes: dict[str, IssuedCode] = {}

    def _person(self, person_id: str) -> Person | None:
        identities = sorted(i for i, p in self._owner.items() if p == person_id)
        return Person(person_id, tuple(identities)) if identities else None

    async def link(self, identities: Sequence[str], *, linked_by: str) -> str:
        owners = sorted({self._owner[i] for i in identities if i in self._owner})
        person_id = owners[0] if owners else new_person_id()
        for identity, owner in list(self._owner.items()):
            if owner in owners:
                self._owner[identity] = person_id
        for identity in identities:
            self._owner[identity] = person_id
        return person_id

    async def person_of(self, identity: str) -> Person | None:
        owner = self._owner.get(identity)
        return self._person(owner) if owner else None

    async def find(self, reference: str) -> Person | None:
        return self._person(reference) or await self.person_of(reference)

    async def remove(self, person_id: str) -> int:
        doomed = [i for i, p in self._owner.items() if p == person_id]
        for identity in doomed:
            del self._owner[identity]
        return len(doomed)

    async def unlink(self, identity: str) -> bool:
        owner = self._owner.get(identity)
        if owner is None:
            return False
        person = self._person(owner)
        if person is not None and len(person.identities) <= 2:
            await self.remove(owner)
        else:
            del self._owner[identity]
        return True

    async def issue_code(self, identity: str, *, minutes: float = CODE_MINUTES,
                         origin: str | None = None) -> str:
        code = new_code()
        self._codes = {c: v for c, v in self._codes.items() if v.identity != identity}
        self._codes[code_hash(code)] = IssuedCode(identity, origin,
                                                  utc_now() + timedelta(minutes=minutes))
        return code

    async def take_code(self, hashed: str) -> IssuedCode | None:
        found = self._codes.pop(hashed, None)
        return None if found is None or found.expires < utc_now() else found

    async def kept(self, person: Person) -> AsyncIterator[Batch]:
        identities = set(person.identities)
        for info in await self.history.list_conversations(limit=ALL_CONVERSATIONS):
            turns = await self.history.get(info.conversation_id, include_summaries=True)
            said = [m for m in turns if identity_of(m) in identities]
            if not said:
                continue
            asked = {m.id for m in said}
            first = min(m.sequence or 0 for m in said)
            yield Batch(
                turns=said,
                replies=[m for m in turns
                         if m.id.split(">", 1)[0] in asked and m.id not in asked],
                summaries=[m for m in turns if _summarizes_from(m, first)])

    async def forget(self, person: Person, totals: dict[str, int]
                     ) -> AsyncIterator[dict[str, int]]:
        async for batch in self.kept(person):
            conversation_id = batch.turns[0].conversation_id
            counts: dict[str, int] = {}
            for name, messages in (("turns", batch.turns), ("replies", batch.replies),
                                   ("summaries", batch.summaries)):
                counts[name] = await self.history.delete_messages(
                    conversation_id, [m.id for m in messages])
            yield counts
        await self.remove(person.person_id)


def _summarizes_from(message: StoredMessage, first: int) -> bool:
    """A summary that covers turns from sequence `first` on (it carries them forward)."""
    return message.is_summary and (
        message.metadata.summary_of is None or message.metadata.summary_of[1] >= first)


def people_for(history: ConversationStore) -> PeopleDirectory:
    """The people directory kept beside a history; a `ConfigError` says when its backend keeps
    none (linking, export and forgetting a person need one)."""
    parts = parts_beside(history)
    if parts.people is None:
        raise ConfigError(f"backend {parts.name} keeps no people directory: linking, export "
                          "and forgetting a person need a backend that does (sqlite or "
                          "postgresql)")
    people: PeopleDirectory = parts.people
    return people
