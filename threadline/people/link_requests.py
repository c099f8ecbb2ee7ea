"""Links waiting for consent, and wrong link codes counted per identity.

Saying someone's code does not link anything: it opens a `LinkRequest` that the code's owner
(the issuer) accepts or refuses, in their own direct message, before the code would have
expired (`threadline.people.link_codes` asks them). Silence leaves the two apart. A request is
taken once, by its issuer only, so a second press or another person's press does nothing.

Guessing is bounded: an identity that said `MAX_WRONG_CODES` unknown or expired codes within
`WRONG_CODES_WINDOW` is refused until the window passes (a code has 31^8 values; at five
guesses an hour nobody finds one by trying).
"""

from __future__ import annotations

import secrets
import weakref
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from threadline.commands.registry import Origin
from threadline.history.model import utc_now
from threadline.history.sql_operations import SqlRunner
from threadline.history.sql_schema import from_micros, to_micros
from threadline.history.sql_store import SqlConversationStore
from threadline.history.store import ConversationStore
from threadline.people.directory import beside_store

MAX_WRONG_CODES = 5
WRONG_CODES_WINDOW = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class LinkRequest:
    """`redeemer` said `issuer`'s code; they become one person only if `issuer` accepts."""

    request_id: str
    issuer: str
    redeemer: str
    issuer_origin: Origin | None
    redeemer_origin: Origin | None
    expires: datetime


class LinkRequests(Protocol):
    """Pending link requests and wrong-code counts; see the module docstring."""

    async def open(self, *, issuer: str, redeemer: str, issuer_origin: Origin | None,
                   redeemer_origin: Origin | None, expires: datetime) -> LinkRequest:
        """A new request (it replaces the redeemer's earlier ones)."""
        ...

    async def take(self, request_id: str, issuer: str) -> LinkRequest | None:
        """The live request with this id if `issuer` made the code, removed as it is taken."""
        ...

    async def wrong_codes(self, identity: str) -> int:
        """Wrong codes `identity` said in the current window."""
        ...

    async def said_wrong_code(self, identity: str) -> None:
        ...


def _new_request_id() -> str:
    return secrets.token_hex(6)


# -- SQL ------------------------------------------------------------------------------------


def _open(conn: SqlRunner, request: LinkRequest, now_us: int) -> None:
    conn.rowcount("DELETE FROM threadline_link_requests WHERE expires_us < :now "
                  "OR redeemer = :r", {"now": now_us, "r": request.redeemer})
    conn.rowcount(
        "INSERT INTO threadline_link_requests (request_id, issuer, redeemer, issuer_origin, "
        "redeemer_origin, expires_us) VALUES (:id, :i, :r, :io, :ro, :e)",
        {"id": request.request_id, "i": request.issuer, "r": request.redeemer,
         "io": request.issuer_origin.to_json() if request.issuer_origin else None,
         "ro": request.redeemer_origin.to_json() if request.redeemer_origin else None,
         "e": to_micros(request.expires)})


def _take(conn: SqlRunner, request_id: str, issuer: str, now_us: int) -> LinkRequest | None:
    rows = conn.rows("SELECT redeemer, issuer_origin, redeemer_origin, expires_us FROM "
                     "threadline_link_requests WHERE request_id = :id AND issuer = :i",
                     {"id": request_id, "i": issuer})
    if not rows or conn.rowcount("DELETE FROM threadline_link_requests WHERE request_id = :id",
                                 {"id": request_id}) != 1:
        return None
    redeemer, issuer_origin, redeemer_origin, expires_us = rows[0]
    if expires_us < now_us:
        return None
    return LinkRequest(request_id, issuer, redeemer, Origin.from_json(issuer_origin),
                       Origin.from_json(redeemer_origin), from_micros(expires_us))


def _wrong_codes(conn: SqlRunner, identity: str, window_start_us: int) -> int:
    rows = conn.rows("SELECT wrong FROM threadline_link_guesses WHERE identity = :i AND "
                     "window_start_us >= :w", {"i": identity, "w": window_start_us})
    return int(rows[0][0]) if rows else 0


def _said_wrong(conn: SqlRunner, identity: str, now_us: int, window_start_us: int) -> None:
    # A window opens at the first wrong code and lasts WRONG_CODES_WINDOW.
    conn.rowcount(
        "INSERT INTO threadline_link_guesses (identity, window_start_us, wrong) "
        "VALUES (:i, :now, 1) ON CONFLICT (identity) DO UPDATE SET "
        "wrong = CASE WHEN threadline_link_guesses.window_start_us >= :w "
        "THEN threadline_link_guesses.wrong + 1 ELSE 1 END, "
        "window_start_us = CASE WHEN threadline_link_guesses.window_start_us >= :w "
        "THEN threadline_link_guesses.window_start_us ELSE :now END",
        {"i": identity, "now": now_us, "w": window_start_us})


class SqlLinkRequests:
    """Link requests in the conversation store's database (shared by every process)."""

    def __init__(self, store: SqlConversationStore) -> None:
        self.store = store

    async def open(self, *, issuer: str, redeemer: str, issuer_origin: Origin | None,
                   redeemer_origin: Origin | None, expires: datetime) -> LinkRequest:
        request = LinkRequest(_new_request_id(), issuer, redeemer, issuer_origin,
                              redeemer_origin, expires)
        await self.store.run("open a link request", _open, request, to_micros(utc_now()),
                             write=True)
        return request

    async def take(self, request_id: str, issuer: str) -> LinkRequest | None:
        return await self.store.run("take a link request", _take, request_id, issuer,
                                    to_micros(utc_now()), write=True)

    async def wrong_codes(self, identity: str) -> int:
        return await self.store.run("count wrong link codes", _wrong_codes, identity,
                                    to_micros(utc_now() - WRONG_CODES_WINDOW))

    async def said_wrong_code(self, identity: str) -> None:
        now = utc_now()
        await self.store.run("count a wrong link code", _said_wrong, identity, to_micros(now),
                             to_micros(now - WRONG_CODES_WINDOW), write=True)


# -- in memory ------------------------------------------------------------------------------


class MemoryLinkRequests:
    """Link requests in process memory, beside an in-memory store."""

    def __init__(self) -> None:
        self._requests: dict[str, LinkRequest] = {}
        self._wrong: dict[str, tuple[datetime, int]] = {}

    async def open(self, *, issuer: str, redeemer: str, issuer_origin: Origin | None,
                   redeemer_origin: Origin | None, expires: datetime) -> LinkRequest:
        request = LinkRequest(_new_request_id(), issuer, redeemer, issuer_origin,
                              redeemer_origin, expires)
        now = utc_now()
        self._requests = {k: r for k, r in self._requests.items()
                          if r.redeemer != redeemer and r.expires >= now}
        self._requests[request.request_id] = request
        return request

    async def take(self, request_id: str, issuer: str) -> LinkRequest | None:
        request = self._requests.get(request_id)
        if request is None or request.issuer != issuer:
            return None
        del self._requests[request_id]
        return request if request.expires >= utc_now() else None

    async def wrong_codes(self, identity: str) -> int:
        started, wrong = self._wrong.get(identity, (utc_now(), 0))
        return wrong if started >= utc_now() - WRONG_CODES_WINDOW else 0

    async def said_wrong_code(self, identity: str) -> None:
        now = utc_now()
        started, wrong = self._wrong.get(identity, (now, 0))
        self._wrong[identity] = ((started, wrong + 1) if started >= now - WRONG_CODES_WINDOW
                                 else (now, 1))


_MEMORY: weakref.WeakKeyDictionary[ConversationStore, MemoryLinkRequests] = (
    weakref.WeakKeyDictionary())


def link_requests_for(store: ConversationStore) -> LinkRequests:
    """The link requests that live beside a conversation store (one per in-memory store)."""
    return beside_store(store, SqlLinkRequests, MemoryLinkRequests, _MEMORY)
