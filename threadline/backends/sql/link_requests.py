"""Link requests and wrong link codes in the history's database
(`threadline.people.link_requests` says what they are)."""

from __future__ import annotations

from datetime import datetime

from threadline.backends.sql.operations import SqlRunner
from threadline.backends.sql.schema import from_micros, to_micros
from threadline.backends.sql.store import SqlConversationStore
from threadline.commands.registry import Origin
from threadline.history.model import utc_now
from threadline.people.link_requests import (
    WRONG_CODES_WINDOW,
    LinkRequest,
    new_request_id,
)


def _open(conn: SqlRunner, request: LinkRequest, now_us: int) -> None:
    conn.rowcount("DELETE FROM threadline_link_requests WHERE expires_us < :now "
                  "OR redeemer = :r", {"now": now_us, "r": request.redeemer})
    conn.rowcount(
        "INSERT INTO threadline_link_requests (request_id, issuer, redeemer, issuer_origin, "
        "redeemer_origin, expires_us, awaiting) VALUES (:id, :i, :r, :io, :ro, :e, :a)",
        {"id": request.request_id, "i": request.issuer, "r": request.redeemer,
         "a": request.awaiting,
         "io": request.issuer_origin.to_json() if request.issuer_origin else None,
         "ro": request.redeemer_origin.to_json() if request.redeemer_origin else None,
         "e": to_micros(request.expires)})


def _take(conn: SqlRunner, request_id: str, identity: str, now_us: int
          ) -> LinkRequest | None:
    rows = conn.rows("SELECT issuer, redeemer, issuer_origin, redeemer_origin, expires_us "
                     "FROM threadline_link_requests WHERE request_id = :id AND awaiting = :a",
                     {"id": request_id, "a": identity})
    if not rows or conn.rowcount("DELETE FROM threadline_link_requests WHERE request_id = :id",
                                 {"id": request_id}) != 1:
        return None
    issuer, redeemer, issuer_origin, redeemer_origin, expires_us = rows[0]
    if expires_us < now_us:
        return None
    return LinkRequest(request_id, issuer, redeemer, Origin.from_json(issuer_origin),
                       Origin.from_json(redeemer_origin), from_micros(expires_us), identity)


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
                   redeemer_origin: Origin | None, expires: datetime,
                   awaiting: str) -> LinkRequest:
        request = LinkRequest(new_request_id(), issuer, redeemer, issuer_origin,
                              redeemer_origin, expires, awaiting)
        await self.store.run("open a link request", _open, request, to_micros(utc_now()),
                             write=True)
        return request

    async def take(self, request_id: str, identity: str) -> LinkRequest | None:
        return await self.store.run("take a link request", _take, request_id, identity,
                                    to_micros(utc_now()), write=True)

    async def wrong_codes(self, identity: str) -> int:
        return await self.store.run("count wrong link codes", _wrong_codes, identity,
                                    to_micros(utc_now() - WRONG_CODES_WINDOW))

    async def said_wrong_code(self, identity: str) -> None:
        now = utc_now()
        await self.store.run("count a wrong link code", _said_wrong, identity, to_micros(now),
                             to_micros(now - WRONG_CODES_WINDOW), write=True)
