"""The spend ledger: tokens and estimated cost per day, in the conversation store's database.

One row per (day, scope, subject): scope `agent` (subject: the agent's name), `conversation`
(the conversation id) or `person` (channel type and participant id). Every process on the
database reads and writes the same rows, so a daily budget holds across replicas.

A turn first *reserves* an estimate of what it will spend on each of its rows, in one
transaction that refuses when any capped row's spend plus reservations has reached its cap;
when the turn is done it *settles*: the reservation is given back and what the model actually
used is added. Reserving and checking in one statement per row (`UPDATE ... WHERE spent +
reserved < cap`) means two processes cannot both see room for a last turn: past the cap by at
most the turn that found room, never by one turn per process. Rows are always locked in the
same order (scope, subject), so concurrent turns cannot deadlock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from threadline.history.sql_operations import SqlRunner
from threadline.history.sql_store import SqlConversationStore

Scope = str  # "agent", "conversation" or "person"
SCOPES: tuple[Scope, ...] = ("agent", "conversation", "person")
_SPENT = "input_tokens + output_tokens + cache_read_tokens + cache_write_tokens"
_KEY = "day = :day AND scope = :scope AND subject = :subject"
_ENSURE = ("INSERT INTO threadline_spend (day, scope, subject) VALUES (:day, :scope, :subject) "
           "ON CONFLICT (day, scope, subject) DO NOTHING")
_RESERVE = (f"UPDATE threadline_spend SET reserved_tokens = reserved_tokens + :tokens "
            f"WHERE {_KEY}")
_RESERVE_CAPPED = f"{_RESERVE} AND {_SPENT} + reserved_tokens < :cap"
_SETTLE = (f"UPDATE threadline_spend SET reserved_tokens = reserved_tokens - :reserved, "
           f"input_tokens = input_tokens + :input, output_tokens = output_tokens + :output, "
           f"cache_read_tokens = cache_read_tokens + :cache_read, "
           f"cache_write_tokens = cache_write_tokens + :cache_write, cost = cost + :cost, "
           f"turns = turns + 1 WHERE {_KEY}")
_COLUMNS = ("subject, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, "
            "reserved_tokens, cost, turns")
_READ_ONE = f"SELECT {_COLUMNS} FROM threadline_spend WHERE {_KEY}"
_READ_SCOPE = (f"SELECT {_COLUMNS} FROM threadline_spend WHERE day = :day AND scope = :scope "
               "ORDER BY subject")


@dataclass(frozen=True, slots=True)
class Charge:
    """One row a turn is charged to, and its cap in tokens (None: counted, not capped)."""

    scope: Scope
    subject: str
    cap: int | None = None


@dataclass(frozen=True, slots=True)
class Spend:
    """What was used: tokens by kind (as providers report them) and the estimated cost."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float = 0.0

    @property
    def tokens(self) -> int:
        """Every token the provider processed: what a budget counts."""
        return (self.input_tokens + self.output_tokens + self.cache_read_tokens
                + self.cache_write_tokens)


@dataclass(frozen=True, slots=True)
class SpendTotals:
    """One row of the ledger: a subject's spend on one day."""

    subject: str
    spent: Spend
    reserved_tokens: int
    turns: int


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a reservation was refused: which row is at its cap, and how far."""

    charge: Charge
    spent_tokens: int
    reserved_tokens: int


class _Refused(Exception):
    """Raised inside the reserve transaction so it rolls back; carries the refusal out."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal)
        self.refusal = refusal


def _ordered(charges: Sequence[Charge]) -> list[Charge]:
    return sorted(charges, key=lambda c: (c.scope, c.subject))


def _totals(row: Sequence[Any]) -> SpendTotals:
    return SpendTotals(subject=row[0], spent=Spend(int(row[1]), int(row[2]), int(row[3]),
                                                   int(row[4]), float(row[6])),
                       reserved_tokens=int(row[5]), turns=int(row[7]))


def _reserve(runner: SqlRunner, day: str, charges: Sequence[Charge], tokens: int) -> None:
    for charge in _ordered(charges):
        key = {"day": day, "scope": charge.scope, "subject": charge.subject}
        runner.rowcount(_ENSURE, key)
        if charge.cap is None:
            runner.rowcount(_RESERVE, {**key, "tokens": tokens})
        elif not runner.rowcount(_RESERVE_CAPPED, {**key, "tokens": tokens, "cap": charge.cap}):
            row = _totals(runner.rows(_READ_ONE, key)[0])
            raise _Refused(Refusal(charge, row.spent.tokens, row.reserved_tokens))


def _settle(runner: SqlRunner, day: str, charges: Sequence[Charge], reserved: int,
            spend: Spend) -> list[SpendTotals]:
    totals = []
    for charge in _ordered(charges):
        key = {"day": day, "scope": charge.scope, "subject": charge.subject}
        if not reserved:
            runner.rowcount(_ENSURE, key)
        runner.rowcount(_SETTLE, {
            **key, "reserved": reserved, "input": spend.input_tokens,
            "output": spend.output_tokens, "cache_read": spend.cache_read_tokens,
            "cache_write": spend.cache_write_tokens, "cost": spend.cost})
        totals.append(_totals(runner.rows(_READ_ONE, key)[0]))
    return totals


def _read_scope(runner: SqlRunner, day: str, scope: Scope) -> list[SpendTotals]:
    return [_totals(row) for row in runner.rows(_READ_SCOPE, {"day": day, "scope": scope})]


class SpendLedger:
    """Daily spend rows in a `SqlConversationStore`'s database; see the module docstring."""

    def __init__(self, store: SqlConversationStore) -> None:
        self.store = store

    async def reserve(self, *, day: str, charges: Sequence[Charge], tokens: int
                      ) -> Refusal | None:
        """Hold `tokens` on every row, or on none when a capped row has no room (the refusal)."""
        try:
            await self.store.run("reserve model spend", _reserve, day, charges, tokens,
                                 write=True)
        except _Refused as refused:
            return refused.refusal
        return None

    async def settle(self, *, day: str, charges: Sequence[Charge], reserved: int, spend: Spend
                     ) -> list[SpendTotals]:
        """Give back what `reserve` held and add what was used; returns the rows' new totals
        in (scope, subject) order. With `reserved=0` a turn that reserved nothing is recorded."""
        return await self.store.run("record model spend", _settle, day, charges, reserved,
                                    spend, write=True)

    async def totals(self, *, day: str, scope: Scope) -> list[SpendTotals]:
        """Every subject's spend in `scope` on `day`, by subject."""
        return await self.store.run("read model spend", _read_scope, day, scope, write=False)
