"""The tool the example agents may call (docs/evals.md)."""


async def track_parcel(order: str) -> str:
    """Where the parcel of an order is."""
    return f"order {order} left the warehouse this morning"
