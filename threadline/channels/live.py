"""The pace of a live reply: how often a platform may see it change, and what keeps a status up.

Platforms limit how often a chat may change (Telegram: about one message or edit a second per
chat; Discord: five edits in five seconds per channel; Slack: per-method tiers). A model writes
faster than that. `RateGate` lets one call at a time change a chat, `interval` after the last
one finished, shared by every reply in it; `TextPacer` shows only the newest text when its slot
comes (everything written in between is folded into one call), so a fast model costs no more
calls than a slow one and never trips a flood limit. `Renewal` repeats a short-lived status
(Telegram's and Discord's typing last 5 and 10 seconds) until it is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from threadline.waiting import cancel_and_wait

_FORGET_AFTER = 1000  # chats remembered by a gate before expired slots are dropped


class RateGate:
    """One platform call at a time per chat key, each starting at least `interval` seconds
    after the previous one in that chat finished (so network jitter, or a 429 retried inside
    the SDK, can never bring two changes closer than the platform allows)."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._locks: dict[str, asyncio.Lock] = {}
        self._finished: dict[str, float] = {}

    @contextlib.asynccontextmanager
    async def slot(self, key: str) -> AsyncIterator[None]:
        """Hold chat `key`'s slot for one call: entered when its turn has come."""
        loop = asyncio.get_running_loop()
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            wait = self._finished.get(key, -self.interval) + self.interval - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            try:
                yield
            finally:
                self._finished[key] = loop.time()
        if len(self._locks) > _FORGET_AFTER:
            self._forget_idle(loop.time())

    def _forget_idle(self, now: float) -> None:
        for key, finished in list(self._finished.items()):
            lock = self._locks.get(key)
            if finished + self.interval < now and (lock is None or not lock.locked()):
                self._finished.pop(key, None)
                self._locks.pop(key, None)


class TextPacer:
    """Pushes the newest offered text through `push`, once per slot of `gate` for `key`.

    A push that fails is logged and ends the pacing (the final text still goes out through
    whoever finishes the reply); `stop` lets a push in flight complete, so a message the
    platform created is never lost track of.
    """

    def __init__(self, push: Callable[[str], Awaitable[None]], *, gate: RateGate, key: str,
                 log: Any) -> None:
        self._push = push
        self._gate = gate
        self._key = key
        self._log = log
        self._latest = ""
        self._pushed = ""
        self._wake = asyncio.Event()
        self._pushing = False
        self._stopped = False
        self._task: asyncio.Task[None] | None = None

    def offer(self, text: str) -> None:
        if self._stopped or text == self._latest:
            return
        self._latest = text
        self._wake.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while not self._stopped:
            await self._wake.wait()
            self._wake.clear()
            async with self._gate.slot(self._key):
                text = self._latest
                if text == self._pushed or self._stopped:
                    continue
                self._pushing = True
                try:
                    await self._push(text)
                    self._pushed = text
                except Exception as exc:
                    self._log.warning("live_reply.update_failed", error=repr(exc),
                                      outcome="no more updates; the final text comes at the end")
                    self._stopped = True
                finally:
                    self._pushing = False

    async def stop(self) -> None:
        """No more pushes; returns once a push in flight is done."""
        self._stopped = True
        task, self._task = self._task, None
        if task is None:
            return
        if self._pushing:
            self._wake.set()
            with contextlib.suppress(Exception):
                await task
            return
        await cancel_and_wait(task)


class Renewal:
    """Calls `action` now and every `every` seconds until `stop`; failures are logged once."""

    def __init__(self, action: Callable[[], Awaitable[Any]], *, every: float, log: Any) -> None:
        self._action = action
        self._every = every
        self._log = log
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            try:
                await self._action()
            except Exception as exc:
                self._log.info("live_reply.status_refused", error=repr(exc),
                               outcome="no status shown for this reply")
                return
            await asyncio.sleep(self._every)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            await cancel_and_wait(task)
