"""Posting kept replies to the caller's callback URL: signed, retried with backoff, never lost.

One loop per channel: it wakes when a reply is kept (`wake`) and at least every
`poll_seconds`, claims the replies that are due (`ReplyOutbox.claim_due`: one replica posts a
reply at a time), and posts each as JSON signed like the requests we take
(`signing.signed_headers`), with `Idempotency-Key: REPLY_ID`. A 2xx marks it delivered; anything
else (a refused connection, a timeout, a 5xx, a 4xx) counts an attempt and puts the next one
`retry_initial_seconds * 2**attempts` later, at most `retry_max_seconds`. A reply is posted at
least once: the receiver drops a repeat by its `reply_id`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp
import structlog

from threadline.channels.http.outbox import HttpReply, ReplyOutbox
from threadline.channels.http.signing import signed_headers
from threadline.channels.unreachable import why
from threadline.errors import StoreError
from threadline.waiting import set_within

log = structlog.get_logger("threadline.channels.http")


@dataclass(frozen=True, slots=True)
class CallbackPolicy:
    """Where replies go and how patiently: the callback settings of one channel."""

    url: str
    secret: str
    timeout_seconds: float = 10.0
    retry_initial_seconds: float = 1.0
    retry_max_seconds: float = 300.0
    poll_seconds: float = 1.0
    batch: int = 50

    def retry_delay(self, attempts: int) -> float:
        """Seconds before the next attempt, after `attempts` failed ones (1 or more)."""
        doubled = self.retry_initial_seconds * 2.0 ** min(attempts - 1, 30)
        return min(doubled, self.retry_max_seconds)


class CallbackSender:
    """The loop that posts one channel's kept replies to its callback (module docstring)."""

    def __init__(self, *, channel: str, outbox: ReplyOutbox, policy: CallbackPolicy,
                 clock: Callable[[], float] = time.time) -> None:
        self._channel = channel
        self._outbox = outbox
        self._policy = policy
        self._clock = clock
        self._wake = asyncio.Event()
        self._session: aiohttp.ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._log = log.bind(channel=channel, callback=policy.url)

    def start(self) -> None:
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=self._policy.timeout_seconds))
        self._task = asyncio.create_task(self._run(), name=f"http-callback-{self._channel}")

    def wake(self) -> None:
        """A reply was kept: post it now rather than at the next poll."""
        self._wake.set()

    async def stop(self) -> None:
        """Stop posting; a post in flight is abandoned and stays due (posted again later)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            try:
                await self._post_due()
            except StoreError as exc:  # the database went away: keep trying, it keeps them
                self._log.warning("http.callback_outbox_unavailable", error=str(exc))
            except Exception as exc:  # one bad round must not stop replies for good
                self._log.error("http.callback_round_failed", error=repr(exc)[:500],
                                outcome="the replies stay kept; tried again next round")
            await set_within(self._wake, self._policy.poll_seconds)

    async def _post_due(self) -> None:
        while True:
            now_us = int(self._clock() * 1_000_000)
            # The claim outlasts one post's timeout, so no other replica posts it meanwhile.
            lease_us = int((self._policy.timeout_seconds + 5) * 1_000_000)
            due = await self._outbox.claim_due(self._channel, now_us=now_us, lease_us=lease_us,
                                               limit=self._policy.batch)
            if not due:
                return
            await asyncio.gather(*(self._post(reply) for reply in due))

    async def _post(self, reply: HttpReply) -> None:
        assert self._session is not None
        body = json.dumps(reply.wire(), ensure_ascii=False).encode()
        headers = {**signed_headers(self._policy.secret, body, now=self._clock()),
                   "Content-Type": "application/json", "Idempotency-Key": reply.reply_id}
        bound = self._log.bind(conversation_id=reply.conversation_id, reply_id=reply.reply_id,
                               attempt=reply.attempts + 1)
        try:
            async with self._session.post(self._policy.url, data=body,
                                          headers=headers) as response:
                status = response.status
                detail = (await response.text())[:200] if status >= 300 else ""
        except (aiohttp.ClientError, TimeoutError) as exc:
            error = f"the callback could not be reached: {why(exc)}"
        else:
            if 200 <= status < 300:
                await self._outbox.delivered(reply.reply_id,
                                             now_us=int(self._clock() * 1_000_000))
                bound.info("http.reply_delivered", status=status)
                return
            error = f"the callback answered {status}: {detail}"
        delay = self._policy.retry_delay(reply.attempts + 1)
        await self._outbox.failed(reply.reply_id, error=error,
                                  retry_at_us=int((self._clock() + delay) * 1_000_000))
        bound.warning("http.reply_not_delivered", error=error, retry_in_seconds=delay,
                      outcome="kept; posted again later")
