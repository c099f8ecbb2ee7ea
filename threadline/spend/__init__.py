"""Model spend: daily token budgets shared by every process, and an estimated cost."""

from threadline.spend.budget import DailyBudgets, Price, SpendDay
from threadline.spend.ledger import Charge, Spend, SpendLedger, SpendTotals

__all__ = ["Charge", "DailyBudgets", "Price", "Spend", "SpendDay", "SpendLedger", "SpendTotals"]
