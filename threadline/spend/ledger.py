"""The spend ledger: tokens and estimated cost per day, kept by the backend (its `spend` part).

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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from threadline.errors import StoreError

Scope = str  # "agent", "conversation" or "person"
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

    def __add__(self, other: Spend) -> Spend:
        return Spend(self.input_tokens + other.input_tokens,
                     self.output_tokens + other.output_tokens,
                     self.cache_read_tokens + other.cache_read_tokens,
                     self.cache_write_tokens + other.cache_write_tokens,
                     self.cost + other.cost)

    @property
    def tokens(self) -> int:
        """Every token the provider processed: what a budget counts."""
        return (self.input_tokens + self.output_tokens + self.cache_read_tokens
                + self.cache_write_tokens)


@dataclass(frozen=True, slots=True)
class SpendTotals:
    """One row of the ledger: a subject's spend on one day."""

    scope: Scope
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


@dataclass(frozen=True, slots=True)
class Settlement:
    """A finished turn's spend owed to `ledger` (the arguments of `SpendLedger.settle`), and
    `heard`, told the rows' new totals or the error that kept them from being written.

    Settled at once (`settle`) by an agent used on its own; the turn pipeline settles it in
    the transaction that records the delivered reply (`threadline.after_delivery`).
    """

    ledger: SpendLedger
    day: str
    charges: tuple[Charge, ...]
    reserved: int
    spend: Spend
    heard: Callable[[list[SpendTotals] | StoreError], None]

    async def settle(self) -> None:
        """Write it on its own (its own transaction)."""
        try:
            totals = await self.ledger.settle(day=self.day, charges=self.charges,
                                              reserved=self.reserved, spend=self.spend)
        except StoreError as exc:
            self.heard(exc)
            return
        self.heard(totals)

    async def hear_recorded(self) -> None:
        """Tell `heard` its rows' totals as the ledger holds them: a write that recorded it
        with others raised after its commit landed (`threadline.after_delivery`), so what that
        write returned never came back."""
        charged = {(c.scope, c.subject) for c in self.charges}
        try:
            rows = [row for scope in sorted({c.scope for c in self.charges})
                    for row in await self.ledger.totals(day=self.day, scope=scope)
                    if (row.scope, row.subject) in charged]
        except StoreError as exc:
            self.heard(exc)
            return
        self.heard(sorted(rows, key=lambda row: (row.scope, row.subject)))


class SpendLedger(Protocol):
    """Daily spend rows; see the module docstring (the SQL backend's: `backends/sql/spend.py`)."""

    async def reserve(self, *, day: str, charges: Sequence[Charge], tokens: int
                      ) -> Refusal | None:
        """Hold `tokens` on every capped row, or on none when one has no room (the refusal)."""
        ...

    async def settle(self, *, day: str, charges: Sequence[Charge], reserved: int, spend: Spend
                     ) -> list[SpendTotals]:
        """Give back what `reserve` held on the capped rows and add what was used to every row;
        returns the rows' new totals in (scope, subject) order. With `reserved=0` a turn that
        reserved nothing is recorded."""
        ...

    async def totals(self, *, day: str, scope: Scope) -> list[SpendTotals]:
        """Every subject's spend in `scope` on `day`, by subject."""
        ...
