"""Waiting for an event at most so long, and for a cancelled task, without ever losing a cancel.

On Python 3.11, `asyncio.wait_for(event.wait(), seconds)` returns normally when its task is
cancelled in the same turn of the loop the event is set: the cancel is swallowed. A background
loop that then waits again (the vector indexer, a retry loop, a poller) never stops, and
shutdown waits on it forever. `asyncio.timeout` keeps the cancel, so every such wait is this.
"""

from __future__ import annotations

import asyncio
from typing import Any


async def set_within(event: asyncio.Event, seconds: float) -> bool:
    """Whether `event` is set within `seconds` (at once when it is set already)."""
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        return False
    return True


async def cancel_and_wait(task: asyncio.Task[Any]) -> None:
    """Cancel `task` and wait until it has ended.

    The task's own CancelledError ends here. A cancel of the caller that arrives meanwhile goes
    on up: a bare `suppress(CancelledError)` around the wait swallows that one too, and a stop
    given a deadline (`asyncio.timeout`) would then never be cut short. Only a cancel that
    arrives during the wait counts: a caller cleaning up after an earlier cancel (a `finally`)
    still has the rest of its cleanup to do.
    """
    current = asyncio.current_task()
    cancels_before = current.cancelling() if current is not None else 0
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        if current is not None and current.cancelling() > cancels_before:
            raise
