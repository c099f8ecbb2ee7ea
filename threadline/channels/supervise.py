"""A channel's listening task, kept alive: restarted with backoff whenever it ends unasked.

A channel that stops listening without stopping the process is deaf while everything else
looks fine: the Telegram poller or the Discord gateway task ends on one event it could not
handle, and no probe notices. `SupervisedListener` runs the listening coroutine as a task,
watches it, and when it ends (an exception, a cancellation from inside, or a plain return)
while the channel is running, logs why, reports the channel as not receiving (`problem`, read
by `/readyz` and `threadline check`) and starts it again after a pause that grows from
`first_pause` to `max_pause` seconds (reset once a run lasted a minute).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import structlog

from threadline.waiting import cancel_and_wait

log = structlog.get_logger("threadline.channels.supervise")

_STEADY_SECONDS = 60.0  # a run this long resets the pause to `first_pause`


class SupervisedListener:
    """Runs `listen()` as a task and starts it again with backoff when it ends unasked.

    `before_restart` runs before each restart (close what the dead run left open).
    """

    def __init__(self, *, channel: str, listen: Callable[[], Coroutine[Any, Any, None]],
                 before_restart: Callable[[], Awaitable[None]] | None = None,
                 first_pause: float = 0.5, max_pause: float = 30.0) -> None:
        self.channel = channel
        self._listen = listen
        self._before_restart = before_restart
        self.first_pause = first_pause
        self.max_pause = max_pause
        self.restarts = 0
        self._problem: str | None = "not started"
        self._task: asyncio.Task[None] | None = None
        self._watch: asyncio.Task[None] | None = None
        self._stopping = False
        self._started = 0.0
        self._log = log.bind(channel=channel)

    @property
    def task(self) -> asyncio.Task[None] | None:
        """The listening task of the current run (None between runs)."""
        return self._task

    def problem(self) -> str | None:
        """None while the listener runs; otherwise why the channel is not receiving."""
        return self._problem

    def start(self) -> None:
        """Start listening now (`task` is the first run) and watch the listener."""
        self._stopping = False
        self._task = self._run()
        self._watch = asyncio.get_running_loop().create_task(
            self._supervise(), name=f"listener-watch:{self.channel}")

    def halt(self) -> None:
        """From now on the listener ending is expected (its owner is closing it)."""
        self._stopping = True

    async def stop(self, *, grace: float | None = None) -> None:
        """Stop watching; give the listener `grace` seconds to end by itself (its owner told
        it to stop), then cancel it."""
        self.halt()
        watch, self._watch = self._watch, None
        if watch is not None:
            await cancel_and_wait(watch)
        task, self._task = self._task, None
        if task is not None and not task.done():
            if grace:
                await asyncio.wait({task}, timeout=grace)
            with contextlib.suppress(Exception):  # its failure was the watch's to report
                await cancel_and_wait(task)
        self._problem = "stopped"

    def _run(self) -> asyncio.Task[None]:
        self._problem = None
        self._started = time.monotonic()
        return asyncio.get_running_loop().create_task(self._listen(),
                                                      name=f"listener:{self.channel}")

    async def _supervise(self) -> None:
        pause = 0.0
        while not self._stopping and self._task is not None:
            # `wait` never raises what the task raised, nor a cancellation made from inside.
            await asyncio.wait({self._task})
            if self._stopping:
                return
            why = _why_it_ended(self._task)
            self._problem = f"not receiving: the listener ended ({why}); restarting"
            steady = time.monotonic() - self._started >= _STEADY_SECONDS
            pause = self.first_pause if steady or not pause else min(self.max_pause, pause * 2)
            self._log.error("channel.listener_ended", reason=why, restart_in=pause,
                            restarts=self.restarts)
            await asyncio.sleep(pause)
            if self._before_restart is not None:
                try:
                    await self._before_restart()
                except Exception:
                    self._log.exception("channel.listener_cleanup_failed")
            if self._stopping:
                return
            self.restarts += 1
            self._task = self._run()


def _why_it_ended(task: asyncio.Task[None]) -> str:
    if task.cancelled():
        return "cancelled"
    error = task.exception()
    return "returned" if error is None else repr(error)[:300]
