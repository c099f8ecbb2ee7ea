"""The people directory in the history's database (shared by every process on it): persons,
their linked identities and one-time link codes (`threadline.people.directory` says how)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from functools import partial

from threadline.backends.sql.operations import SqlRunner
from threadline.backends.sql.people_kept import delete_batch, read_batch, record_forgotten
from threadline.backends.sql.schema import from_micros, to_micros
from threadline.backends.sql.store import SqlConversationStore
from threadline.history.model import utc_now
from threadline.history.speakers import speaker_key
from threadline.people.directory import (
    CODE_MINUTES,
    Batch,
    IssuedCode,
    Person,
    code_hash,
    new_code,
    new_person_id,
)


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
    person_id = owners[0] if owners else new_person_id()
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

    async def kept(self, person: Person) -> AsyncIterator[Batch]:
        keys = [speaker_key(i) for i in person.identities]
        agents: dict[str, list[str]] = {}
        summarized: set[str] = set()
        after = 0
        while (batch := await self.store.run("export a person", partial(
                read_batch, agents=agents, summarized=summarized, details=True),
                keys, after)) is not None:
            yield batch
            after = batch.last_row

    async def forget(self, person: Person, totals: dict[str, int]
                     ) -> AsyncIterator[dict[str, int]]:
        keys = [speaker_key(i) for i in person.identities]
        agents: dict[str, list[str]] = {}
        summarized: set[str] = set()
        while (counts := await self.store.run("forget a person", partial(
                delete_batch, agents=agents, summarized=summarized), keys, 0,
                write=True)) is not None:
            yield counts
        await self.store.run("record a forgotten person", record_forgotten, person.person_id,
                             list(person.identities), totals, to_micros(utc_now()),
                             write=True)
