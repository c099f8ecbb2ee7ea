"""Model spend: daily token budgets shared by every process, and an estimated cost."""

from __future__ import annotations

from typing import TYPE_CHECKING

from threadline.plugs import lazy_exports

if TYPE_CHECKING:
    from threadline.spend.budget import DailyBudgets, Price, SpendDay
    from threadline.spend.ledger import Charge, Spend, SpendLedger, SpendTotals

__all__ = ["Charge", "DailyBudgets", "Price", "Spend", "SpendDay", "SpendLedger", "SpendTotals"]

__getattr__ = lazy_exports(__name__, {
    "DailyBudgets": "threadline.spend.budget",
    "Price": "threadline.spend.budget",
    "SpendDay": "threadline.spend.budget",
    "Charge": "threadline.spend.ledger",
    "Spend": "threadline.spend.ledger",
    "SpendLedger": "threadline.spend.ledger",
    "SpendTotals": "threadline.spend.ledger",
})
