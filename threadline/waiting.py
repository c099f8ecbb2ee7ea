"""Waiting for an event at most so long, without ever losing a cancel.

On Python 3.11, `asyncio.wait_for(event.wait(), seconds)` returns normally when its task is
cancelled in the same turn of the loop the event is set: the cancel is swallowed. A background
loop that then waits again (the vector indexer, a retry loop, a poller) never stops, and
shutdown waits on it forever. `asyncio.timeout` keeps the cancel, so every such wait is this.
"""

from __future__ import annotations

import asyncio


async def set_within(event: asyncio.Event, seconds: float) -> bool:
    """Whether `event` is set within `seconds` (at once when it is set already)."""
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        return False
    return True
