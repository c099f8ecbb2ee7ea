"""A background chore run at start and then every so often, until stopped (retention passes,
the scheduler's rounds).

A pass that fails on the store is logged and the next one tries again: an outage must not end
the chore for the life of the process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog

from threadline.errors import StoreError
from threadline.waiting import cancel_and_wait

log = structlog.get_logger("threadline.periodic")


class Periodic:
    """Runs `action` now and then every `every` seconds (or sooner, as `next_wait` says);
    `passes` and `pass_done` tell tests (and anyone waiting) that a pass has finished."""

    def __init__(self, action: Callable[[], Awaitable[object]], *, every: float,
                 name: str) -> None:
        self.action = action
        self.every = every
        self.name = name
        self.passes = 0
        self.pass_done = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            try:
                await self.action()
            except StoreError as exc:
                log.warning(f"{self.name}_failed", error=str(exc))
            self.passes += 1
            self.pass_done.set()
            # At debug, so a test (or an operator) reading the log can count finished passes.
            log.debug(f"{self.name}_done", passes=self.passes)
            await asyncio.sleep(self.next_wait())

    def next_wait(self) -> float:
        """Seconds until the next pass; a chore that knows when it is next needed says so."""
        return self.every

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None
