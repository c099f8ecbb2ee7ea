"""The spend ledger in the history's database: one upsert per reservation and per settlement,
so every process on the database reads and writes the same daily rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from threadline.backends.sql.operations import SqlRunner, one_write
from threadline.backends.sql.store import SqlConversationStore
from threadline.spend.ledger import Charge, Refusal, Scope, Spend, SpendTotals

_TABLE = "threadline_spend"
_SPENT = " + ".join(f"{_TABLE}.{c}" for c in (
    "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"))
_COLUMNS = ("scope, subject, input_tokens, output_tokens, cache_read_tokens, "
            "cache_write_tokens, reserved_tokens, cost, turns")
_UPSERT = (f"INSERT INTO {_TABLE} (day, scope, subject, {{columns}}) VALUES {{rows}} "
           f"ON CONFLICT (day, scope, subject) DO UPDATE SET {{updates}}")
_READ_ONE = (f"SELECT {_COLUMNS} FROM {_TABLE} WHERE day = :day AND scope = :scope "
             "AND subject = :subject")
_READ_SCOPE = (f"SELECT {_COLUMNS} FROM {_TABLE} WHERE day = :day AND scope = :scope "
               "ORDER BY subject")
_SETTLED = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost",
            "reserved_tokens", "turns")


def _reserve_sql(charges: Sequence[Charge]) -> str:
    """One upsert holding `:tokens` on every capped row whose spend and holds are under its cap
    (rows that are not come back missing from RETURNING)."""
    rows = ", ".join(f"(:day, :scope{i}, :subject{i}, :tokens)" for i in range(len(charges)))
    # A turn has one row per scope, so the scope picks the row's cap.
    caps = " ".join(f"WHEN :scope{i} THEN CAST(:cap{i} AS BIGINT)" for i in range(len(charges)))
    updates = (f"reserved_tokens = {_TABLE}.reserved_tokens + excluded.reserved_tokens "
               f"WHERE {_SPENT} + {_TABLE}.reserved_tokens < CASE excluded.scope {caps} END")
    return _UPSERT.format(columns="reserved_tokens", rows=rows, updates=updates) + \
        " RETURNING scope, subject"


def _settle_sql(count: int) -> str:
    """One upsert adding a turn's spend (and giving back its holds) on every row it touched."""
    values = ", ".join(f":{c}" for c in _SETTLED[:-2])
    rows = ", ".join(f"(:day, :scope{i}, :subject{i}, {values}, :returned{i}, 1)"
                     for i in range(count))
    updates = ", ".join(f"{c} = {_TABLE}.{c} + excluded.{c}" for c in _SETTLED)
    return _UPSERT.format(columns=", ".join(_SETTLED), rows=rows, updates=updates) + \
        f" RETURNING {_COLUMNS}"



class _Refused(Exception):
    """Raised inside the reserve transaction so it rolls back; carries the refusal out."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal)
        self.refusal = refusal


def _ordered(charges: Sequence[Charge]) -> list[Charge]:
    return sorted(charges, key=lambda c: (c.scope, c.subject))


def _totals(row: Sequence[Any]) -> SpendTotals:
    return SpendTotals(scope=row[0], subject=row[1],
                       spent=Spend(int(row[2]), int(row[3]), int(row[4]), int(row[5]),
                                   float(row[7])),
                       reserved_tokens=int(row[6]), turns=int(row[8]))


def _keys(day: str, charges: Sequence[Charge]) -> dict[str, Any]:
    keys: dict[str, Any] = {"day": day}
    for i, charge in enumerate(charges):
        keys[f"scope{i}"] = charge.scope
        keys[f"subject{i}"] = charge.subject
    return keys


def _reserve(runner: SqlRunner, day: str, charges: Sequence[Charge], tokens: int) -> None:
    capped = [c for c in _ordered(charges) if c.cap is not None]
    if not capped:
        return
    params = {**_keys(day, capped), "tokens": tokens,
              **{f"cap{i}": c.cap for i, c in enumerate(capped)}}
    held = {(row[0], row[1]) for row in runner.rows(_reserve_sql(capped), params)}
    for charge in capped:
        if (charge.scope, charge.subject) not in held:
            row = _totals(runner.rows(_READ_ONE, {"day": day, "scope": charge.scope,
                                                  "subject": charge.subject})[0])
            raise _Refused(Refusal(charge, row.spent.tokens, row.reserved_tokens))


@one_write
def settle_rows(runner: SqlRunner, day: str, charges: Sequence[Charge], reserved: int,
                spend: Spend) -> list[SpendTotals]:
    """`SqlSpendLedger.settle` in the caller's transaction (alone, or with a delivered
    reply's other writes: `SqlWritesTogether`)."""
    ordered = _ordered(charges)
    params = {**_keys(day, ordered), "input_tokens": spend.input_tokens,
              "output_tokens": spend.output_tokens, "cache_read_tokens": spend.cache_read_tokens,
              "cache_write_tokens": spend.cache_write_tokens, "cost": spend.cost,
              **{f"returned{i}": -reserved if c.cap is not None else 0
                 for i, c in enumerate(ordered)}}
    totals = [_totals(row) for row in runner.rows(_settle_sql(len(ordered)), params)]
    return sorted(totals, key=lambda t: (t.scope, t.subject))


def _read_scope(runner: SqlRunner, day: str, scope: Scope) -> list[SpendTotals]:
    return [_totals(row) for row in runner.rows(_READ_SCOPE, {"day": day, "scope": scope})]


class SqlSpendLedger:
    """Daily spend rows in the history's database (`threadline.spend.ledger` says how)."""

    def __init__(self, store: SqlConversationStore) -> None:
        self.store = store

    async def reserve(self, *, day: str, charges: Sequence[Charge], tokens: int
                      ) -> Refusal | None:
        """Hold `tokens` on every capped row, or on none when one has no room (the refusal)."""
        try:
            await self.store.run("reserve model spend", _reserve, day, charges, tokens,
                                 write=True)
        except _Refused as refused:
            return refused.refusal
        return None

    async def settle(self, *, day: str, charges: Sequence[Charge], reserved: int, spend: Spend
                     ) -> list[SpendTotals]:
        """Give back what `reserve` held on the capped rows and add what was used to every row;
        returns the rows' new totals in (scope, subject) order. With `reserved=0` a turn that
        reserved nothing is recorded."""
        return await self.store.run("record model spend", settle_rows, day, charges, reserved,
                                    spend, write=True, few=True)

    async def totals(self, *, day: str, scope: Scope) -> list[SpendTotals]:
        """Every subject's spend in `scope` on `day`, by subject."""
        return await self.store.run("read model spend", _read_scope, day, scope, write=False)
