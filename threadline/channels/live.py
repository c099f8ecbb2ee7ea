"""The pace of a live reply: how often a platform may see it change, and what keeps a status up.

Platforms limit how often a chat may change (Telegram: about one message or edit a second per
chat; Discord: five edits in five seconds per channel; Slack: per-method tiers). A model writes
faster than that. `RateGate` hands out slots at most one per `interval` for each chat, shared by
every reply in it; `TextPacer` shows only the newest text when its slot comes (everything
written in between is folded into one call), so a fast model costs no more calls than a slow
one and never trips a flood limit. `Renewal` repeats a short-lived status (Telegram's and
Discord's typing last 5 and 10 seconds) until it is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

_FORGET_AFTER = 1000  # chats remembered by a gate before expired slots are dropped


class RateGate:
    """At most one platform call per `interval` seconds per chat key, in the order asked."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._next: dict[str, float] = {}

    async def wait(self, key: str) -> None:
        """Return when this caller's slot in chat `key` has come."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        slot = max(now, self._next.get(key, now))
        self._next[key] = slot + self.interval
        if len(self._next) > _FORGET_AFTER:
            self._next = {k: t for k, t in self._next.items() if t > now}
        if slot > now:
            await asyncio.sleep(slot - now)


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
            await self._gate.wait(self._key)
            text = self._latest
            if text == self._pushed:
                continue
            self._pushing = True
            try:
                await self._push(text)
                self._pushed = text
            except Exception as exc:
                self._log.warning("live_reply.update_failed", error=repr(exc),
                                  outcome="no more updates; the final text is posted at the end")
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
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


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
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
