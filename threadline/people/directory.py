"""Who is who: persons, their linked platform identities, and one-time link codes.

Identities are linked by an operator (`threadline people link`) or by the person with a code
the bot gave them on another platform; never by matching names. An identity nobody linked is
a person of its own: `person_of` answers None and every caller treats it alone.

A link code is kept only as a hash, lives `CODE_MINUTES`, and works once: redeeming it deletes
it in the same transaction that links, so two redemptions of one code link at most once.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Protocol

from threadline.backends.sql.operations import SqlRunner
from threadline.backends.sql.schema import to_micros
from threadline.backends.sql.store import SqlConversationStore
from threadline.history.model import utc_now
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


def _new_person_id() -> str:
    return "person-" + uuid.uuid4().hex[:12]


@dataclass(frozen=True, slots=True)
class Person:
    """A person: an id and the platform identities linked to it (one, when never linked)."""

    person_id: str
    identities: tuple[str, ...]


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

    async def issue_code(self, identity: str, *, minutes: float = CODE_MINUTES) -> str:
        """A one-time code that links whoever says it (elsewhere) to `identity`."""
        ...

    async def redeem_code(self, code: str, identity: str) -> str | None:
        """Link `identity` with the code's issuer; the person id, None if no live code."""
        ...


# -- SQL ------------------------------------------------------------------------------------


def _person_of(conn: SqlRunner, identity: str) -> Person | None:
    rows = conn.rows("SELECT person_id FROM threadline_person_identities WHERE identity = :i",
                     {"i": identity})
    return _person(conn, rows[0][0]) if rows else None


def _person(conn: SqlRunner, person_id: str) -> Person | None:
    rows = conn.rows("SELECT identity FROM threadline_person_identities WHERE person_id = :p "
                     "ORDER BY identity", {"p": person_id})
    return Person(person_id, tuple(r[0] for r in rows)) if rows else None


def _find(conn: SqlRunner, reference: str) -> Person | None:
    return _person(conn, reference) or _person_of(conn, reference)


def _link(conn: SqlRunner, identities: Sequence[str], linked_by: str, now_us: int) -> str:
    owners = sorted({p.person_id for i in identities if (p := _person_of(conn, i)) is not None})
    person_id = owners[0] if owners else _new_person_id()
    if not owners:
        conn.rowcount("INSERT INTO threadline_people (person_id, created_us) VALUES (:p, :now)",
                      {"p": person_id, "now": now_us})
    for other in owners[1:]:  # a link between two known persons merges them
        conn.rowcount("UPDATE threadline_person_identities SET person_id = :p "
                      "WHERE person_id = :o", {"p": person_id, "o": other})
        conn.rowcount("DELETE FROM threadline_people WHERE person_id = :o", {"o": other})
    for identity in identities:
        conn.rowcount(
            "INSERT INTO threadline_person_identities (identity, person_id, linked_by, "
            "linked_us) VALUES (:i, :p, :by, :now) ON CONFLICT (identity) DO UPDATE "
            "SET person_id = :p", {"i": identity, "p": person_id, "by": linked_by,
                                   "now": now_us})
    return person_id


def _remove(conn: SqlRunner, person_id: str) -> int:
    gone = conn.rowcount("DELETE FROM threadline_person_identities WHERE person_id = :p",
                         {"p": person_id})
    conn.rowcount("DELETE FROM threadline_people WHERE person_id = :p", {"p": person_id})
    return gone


def _issue(conn: SqlRunner, hashed: str, identity: str, now_us: int, expires_us: int) -> None:
    conn.rowcount("DELETE FROM threadline_link_codes WHERE expires_us < :now OR identity = :i",
                  {"now": now_us, "i": identity})
    conn.rowcount("INSERT INTO threadline_link_codes (code, identity, expires_us) "
                  "VALUES (:c, :i, :e)", {"c": hashed, "i": identity, "e": expires_us})


def _redeem(conn: SqlRunner, hashed: str, identity: str, now_us: int) -> str | None:
    rows = conn.rows("SELECT identity, expires_us FROM threadline_link_codes WHERE code = :c",
                     {"c": hashed})
    if not rows:
        return None
    issuer, expires_us = rows[0]
    if conn.rowcount("DELETE FROM threadline_link_codes WHERE code = :c", {"c": hashed}) != 1:
        return None  # another redemption took it first
    if expires_us < now_us or issuer == identity:
        return None
    return _link(conn, [issuer, identity], "code", now_us)


class SqlPeopleDirectory:
    """The directory in the conversation store's database (shared by every process)."""

    def __init__(self, store: SqlConversationStore) -> None:
        self.store = store

    async def link(self, identities: Sequence[str], *, linked_by: str) -> str:
        return await self.store.run("link identities", _link, list(identities), linked_by,
                                    to_micros(utc_now()), write=True)

    async def person_of(self, identity: str) -> Person | None:
        return await self.store.run("read a person", _person_of, identity)

    async def find(self, reference: str) -> Person | None:
        return await self.store.run("read a person", _find, reference)

    async def remove(self, person_id: str) -> int:
        return await self.store.run("remove a person", _remove, person_id, write=True)

    async def issue_code(self, identity: str, *, minutes: float = CODE_MINUTES) -> str:
        code = new_code()
        now = utc_now()
        await self.store.run("issue a link code", partial(
            _issue, expires_us=to_micros(now + timedelta(minutes=minutes))),
            code_hash(code), identity, to_micros(now), write=True)
        return code

    async def redeem_code(self, code: str, identity: str) -> str | None:
        return await self.store.run("redeem a link code", _redeem, code_hash(code), identity,
                                    to_micros(utc_now()), write=True)


# -- in memory ------------------------------------------------------------------------------


class MemoryPeopleDirectory:
    """The directory in process memory, beside an in-memory store."""

    def __init__(self) -> None:
        self._owner: dict[str, str] = {}
        self._codes: dict[str, tuple[str, datetime]] = {}

    def _person(self, person_id: str) -> Person | None:
        identities = sorted(i for i, p in self._owner.items() if p == person_id)
        return Person(person_id, tuple(identities)) if identities else None

    async def link(self, identities: Sequence[str], *, linked_by: str) -> str:
        owners = sorted({self._owner[i] for i in identities if i in self._owner})
        person_id = owners[0] if owners else _new_person_id()
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

    async def issue_code(self, identity: str, *, minutes: float = CODE_MINUTES) -> str:
        code = new_code()
        self._codes = {c: v for c, v in self._codes.items() if v[0] != identity}
        self._codes[code_hash(code)] = (identity, utc_now() + timedelta(minutes=minutes))
        return code

    async def redeem_code(self, code: str, identity: str) -> str | None:
        found = self._codes.pop(code_hash(code), None)
        if found is None or found[1] < utc_now() or found[0] == identity:
            return None
        return await self.link([found[0], identity], linked_by="code")


_MEMORY: weakref.WeakKeyDictionary[ConversationStore, MemoryPeopleDirectory] = (
    weakref.WeakKeyDictionary())


def people_for(store: ConversationStore) -> PeopleDirectory:
    """The directory that lives beside a conversation store (one per in-memory store)."""
    if isinstance(store, SqlConversationStore):
        return SqlPeopleDirectory(store)
    directory = _MEMORY.get(store)
    if directory is None:
        directory = _MEMORY[store] = MemoryPeopleDirectory()
    return directory
