"""The spend ledger's reserve/settle rules, the same on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.conftest import drop_pg_schema, fresh_pg_schema, pg_url_or_skip
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.spend import SqlSpendLedger
from threadline.spend import Charge, Spend, SpendLedger
from threadline.spend.ledger import Refusal


@pytest.fixture(params=["sqlite", "postgresql"])
async def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SpendLedger]:
    if request.param == "sqlite":
        async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'l.db'}") as store:
            yield SqlSpendLedger(store)
        return
    url = await fresh_pg_schema(pg_url_or_skip())
    try:
        async with SqlConversationStore(url) as store:
            yield SqlSpendLedger(store)
    finally:
        await drop_pg_schema(url)


CHARGES = [Charge("person", "local:ann", 500), Charge("agent", "support"),
           Charge("conversation", "local:room", 1000)]


async def test_holds_count_until_settled_and_a_full_row_refuses(ledger: SpendLedger) -> None:
    assert await ledger.reserve(day="2026-03-05", charges=CHARGES, tokens=400) is None
    # 400 held of the person's 500: the next turn still finds room (the one turn of grace) ...
    assert await ledger.reserve(day="2026-03-05", charges=CHARGES, tokens=400) is None
    # ... after which the person's row is full of holds, and nothing is held anywhere.
    refused = await ledger.reserve(day="2026-03-05", charges=CHARGES, tokens=400)
    assert refused == Refusal(CHARGES[0], spent_tokens=0, reserved_tokens=800)

    spend = Spend(input_tokens=120, output_tokens=30, cache_read_tokens=40,
                  cache_write_tokens=10, cost=0.25)
    for _ in range(2):
        totals = await ledger.settle(day="2026-03-05", charges=CHARGES, reserved=400,
                                     spend=spend)
    assert [(t.scope, t.subject, t.spent.tokens, t.reserved_tokens, t.turns)
            for t in totals] == [("agent", "support", 400, 0, 2),
                                 ("conversation", "local:room", 400, 0, 2),
                                 ("person", "local:ann", 400, 0, 2)]
    assert totals[0].spent.cost == pytest.approx(0.5)
    # 400 spent of 500: room for one more turn, then the spend itself refuses.
    assert await ledger.reserve(day="2026-03-05", charges=CHARGES, tokens=400) is None
    await ledger.settle(day="2026-03-05", charges=CHARGES, reserved=400, spend=spend)
    refused = await ledger.reserve(day="2026-03-05", charges=CHARGES, tokens=400)
    assert refused == Refusal(CHARGES[0], spent_tokens=600, reserved_tokens=0)
    # Another day is a fresh row.
    assert await ledger.reserve(day="2026-03-06", charges=CHARGES, tokens=400) is None
    rows = await ledger.totals(day="2026-03-05", scope="person")
    assert [(r.subject, r.spent.tokens, r.turns) for r in rows] == [("local:ann", 600, 3)]


async def test_a_turn_with_no_caps_is_only_recorded(ledger: SpendLedger) -> None:
    uncapped = [Charge("agent", "support"), Charge("conversation", "c1")]
    assert await ledger.reserve(day="d", charges=uncapped, tokens=10**9) is None
    totals = await ledger.settle(day="d", charges=uncapped, reserved=0,
                                 spend=Spend(input_tokens=7, output_tokens=3))
    assert [(t.scope, t.spent.tokens, t.reserved_tokens) for t in totals] == [
        ("agent", 10, 0), ("conversation", 10, 0)]
