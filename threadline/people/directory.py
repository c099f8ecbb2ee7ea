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
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Protocol, TypeVar

from threadline.history.model import utc_now
from threadline.history.sql_operations import SqlRunner
from threadline.history.sql_schema import from_micros, to_micros
from threadline.history.sql_store import SqlConversationStore
from threadline.history.store import ConversationStore

T = TypeVar("T")
M = TypeVar("M")

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


def _unlink(conn: SqlRunner, identity: str) -> bool:
    person = _person_of(conn, identity)
    if person is None:
        return False
    if len(person.identities) <= 2:  # what remains would be one identity alone
        _remove(conn, person.person_id)
    else:
        conn.rowcount("DELETE FROM threadline_person_identities WHERE identity = :i",
                      {"i": identity})
    return True


def _issue(conn: SqlRunner, hashed: str, identity: str, origin: str | None, now_us: int,
           expires_us: int) -> None:
    conn.rowcount("DELETE FROM threadline_link_codes WHERE expires_us < :now OR identity = :i",
                  {"now": now_us, "i": identity})
    conn.rowcount("INSERT INTO threadline_link_codes (code, identity, expires_us, origin) "
                  "VALUES (:c, :i, :e, :o)",
                  {"c": hashed, "i": identity, "e": expires_us, "o": origin})


def _take(conn: SqlRunner, hashed: str, now_us: int) -> tuple[str, str | None, int] | None:
    rows = conn.rows("SELECT identity, origin, expires_us FROM threadline_link_codes "
                     "WHERE code = :c", {"c": hashed})
    if not rows:
        return None
    identity, origin, expires_us = rows[0]
    if conn.rowcount("DELETE FROM threadline_link_codes WHERE code = :c", {"c": hashed}) != 1:
        return None  # another redemption took it first
    return None if expires_us < now_us else (identity, origin, int(expires_us))


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

    async def unlink(self, identity: str) -> bool:
        return await self.store.run("unlink an identity", _unlink, identity, write=True)

    async def issue_code(self, identity: str, *, minutes: float = CODE_MINUTES,
                         origin: str | None = None) -> str:
        code = new_code()
        now = utc_now()
        await self.store.run("issue a link code", partial(
            _issue, expires_us=to_micros(now + timedelta(minutes=minutes))),
            code_hash(code), identity, origin, to_micros(now), write=True)
        return code

    async def take_code(self, hashed: str) -> IssuedCode | None:
        taken = await self.store.run("take a link code", _take, hashed, to_micros(utc_now()),
                                     write=True)
        if taken is None:
            return None
        identity, origin, expires_us = taken
        return IssuedCode(identity, origin, from_micros(expires_us))


# -- in memory ------------------------------------------------------------------------------


class MemoryPeopleDirectory:
    """The directory in process memory, beside an in-memory store."""

    def __init__(self) -> None:
        self._owner: dict[str, str] = {}
        self._codes: dict[str, IssuedCode] = {}

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


_MEMORY: weakref.WeakKeyDictionary[ConversationStore, MemoryPeopleDirectory] = (
    weakref.WeakKeyDictionary())


def beside_store(store: ConversationStore, sql: Callable[[SqlConversationStore], T],
                 memory: Callable[[], M], kept: weakref.WeakKeyDictionary[ConversationStore, M],
                 ) -> T | M:
    """What lives beside a conversation store: in its database (SQL), or in process memory,
    one per in-memory store (kept in `kept` while the store lives)."""
    if isinstance(store, SqlConversationStore):
        return sql(store)
    found = kept.get(store)
    if found is None:
        found = kept[store] = memory()
    return found


def people_for(store: ConversationStore) -> PeopleDirectory:
    """The directory that lives beside a conversation store (one per in-memory store)."""
    return beside_store(store, SqlPeopleDirectory, MemoryPeopleDirectory, _MEMORY)
