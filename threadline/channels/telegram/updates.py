"""How Telegram updates come in, and when Telegram is told they arrived.

Telegram forgets an update once told it was received: by a getUpdates `offset` past it
(polling) or by a 2xx answer to its webhook POST. PTB's `Updater` confirms an offset on the
next poll whatever became of the updates, and its webhook answers 200 before any handler ran,
so both are replaced here by code that says "received" only after `take(update)` returned (for
a message: after `on_message` returned, so the turn is recorded; see `ChannelEvents`).

Polling (`UpdatePoller`): each batch is taken one update at a time, in order, and the offset
moves past an update only once it was taken. When taking one raises `TurnNotRecordedError` the
batch stops there and polling resumes from that update after a backoff, so it and everything
after it are delivered again. `stop()` confirms what was taken (one getUpdates with the offset
and no wait), so a clean restart replays nothing; after a crash, what was taken but not yet
confirmed comes again and the receiver drops the copies by turn id.

Webhook (`WebhookReceiver`): an aiohttp server answers each POST after `take` returned: 200, or
503 when the turn was not recorded, and Telegram delivers it again later. A request without the
exact `X-Telegram-Bot-Api-Secret-Token` header is a 403, an unreadable body a 400.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from aiohttp import web
from telegram import Bot, Update
from telegram.error import TelegramError, TimedOut

from threadline.errors import TurnNotRecordedError
from threadline.listening import Listener, serve

UpdateTaker = Callable[[Update], Coroutine[Any, Any, None]]
PollingErrorHandler = Callable[[TelegramError], None]

_POLL_TIMEOUT_SECONDS = 10
_STOP_GRACE_SECONDS = 10.0
_FIRST_BACKOFF_SECONDS = 1.0
_MAX_BACKOFF_SECONDS = 30.0
_SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


def _backoff(previous: float) -> float:
    """The next pause after a failure: 1 s, then 1.5 times longer each time, up to 30 s."""
    return min(_MAX_BACKOFF_SECONDS, previous * 1.5) if previous else _FIRST_BACKOFF_SECONDS


class UpdatePoller:
    """Long polling that confirms an update to Telegram only once it was taken."""

    def __init__(
        self, *, bot: Bot, take: UpdateTaker, allowed_updates: Sequence[str],
        on_error: PollingErrorHandler, log: Any,
    ) -> None:
        self._bot = bot
        self._take = take
        self._allowed_updates = list(allowed_updates)
        self._on_error = on_error
        self._log = log
        self._offset: int | None = None  # the first update not yet taken
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self, *, drop_pending_updates: bool) -> None:
        """Make sure no webhook is set (dropping what queued, if asked), then poll."""
        await self._bot.delete_webhook(drop_pending_updates=drop_pending_updates)
        self._task = asyncio.create_task(self._poll(), name="telegram-polling")

    async def stop(self) -> None:
        """Finish the update being taken (for up to 10 s), then confirm every update taken."""
        self._stopping.set()
        if self._task is not None:
            done, _ = await asyncio.wait({self._task}, timeout=_STOP_GRACE_SECONDS)
            if not done:  # safe: an update not confirmed is delivered again
                self._log.warning("telegram.stop_abandoned_update", offset=self._offset,
                                  outcome="the update in hand comes again on restart")
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._task
            self._task = None
        if self._offset is None:
            return
        try:
            await self._bot.get_updates(offset=self._offset, timeout=0, limit=1,
                                        allowed_updates=self._allowed_updates)
        except TelegramError as exc:
            self._log.warning("telegram.confirm_failed", offset=self._offset, error=str(exc),
                              outcome="updates taken since the last poll come again on restart")

    async def _poll(self) -> None:
        pause = 0.0
        while not self._stopping.is_set():
            try:
                updates = await self._next_batch()
            except TimedOut:
                continue  # the long poll itself timed out: ask again at once
            except TelegramError as exc:
                self._on_error(exc)
                pause = _backoff(pause)
            except Exception:
                self._log.exception("telegram.polling_failed")
                pause = _backoff(pause)
            else:
                if updates is None:
                    return
                pause = 0.0 if await self._take_in_order(updates) else _backoff(pause)
            if pause:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), pause)

    async def _next_batch(self) -> list[Update] | None:
        """The next updates after the offset, or None once `stop` was called."""
        poll = asyncio.ensure_future(self._bot.get_updates(
            offset=self._offset, timeout=_POLL_TIMEOUT_SECONDS,
            allowed_updates=self._allowed_updates))
        stopping = asyncio.ensure_future(self._stopping.wait())
        await asyncio.wait({poll, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not poll.done():
            poll.cancel()
            with contextlib.suppress(asyncio.CancelledError, TelegramError):
                await poll
            return None
        return list(poll.result())

    async def _take_in_order(self, updates: list[Update]) -> bool:
        """Take each update and move the offset past it; False if one was not recorded."""
        for update in updates:
            if self._stopping.is_set():
                return True  # the rest are not confirmed: Telegram delivers them again
            try:
                # A task per update, as a webhook request would have: what the receiver binds
                # to the current task (log context, "in flight" tracking) ends with the update.
                await asyncio.create_task(self._take(update))
            except TurnNotRecordedError as error:
                self._log.warning("telegram.update_not_recorded", update_id=update.update_id,
                                  error=str(error),
                                  outcome="not confirmed; polling resumes from it after a pause")
                return False
            self._offset = update.update_id + 1
        return True


class WebhookReceiver:
    """The webhook endpoint: answers Telegram's POST only after the update was taken."""

    def __init__(
        self, *, bot: Bot, take: UpdateTaker, secret_token: str, log: Any,
    ) -> None:
        self._bot = bot
        self._take = take
        self._secret = secret_token.encode()
        self._log = log
        self._runner: web.AppRunner | None = None

    async def start(
        self, *, listener: Listener, path: str, url: str,
        allowed_updates: Sequence[str], drop_pending_updates: bool,
    ) -> None:
        """Serve `listener`'s host:port at `path`, then register `url` (which proxies to it)
        with Telegram."""
        server = web.Application()
        server.router.add_post(path if path.startswith("/") else f"/{path}", self._receive)
        self._runner = web.AppRunner(server, access_log=None)
        await self._runner.setup()
        try:
            await serve(self._runner, listener)
            host, bound = self._runner.addresses[0][:2]  # the port bound, for port 0
            self._log.info("telegram.webhook_listening", listen=f"http://{host}:{bound}{path}")
            await self._bot.set_webhook(
                url=url, allowed_updates=list(allowed_updates),
                drop_pending_updates=drop_pending_updates,
                secret_token=self._secret.decode())
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        """Stop listening once the requests in progress are answered (the webhook stays set,
        so Telegram keeps what arrives meanwhile)."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def _receive(self, request: web.Request) -> web.Response:
        secret = request.headers.get(_SECRET_HEADER, "").encode()
        if not hmac.compare_digest(secret, self._secret):
            self._log.warning("telegram.webhook_refused", status=403,
                              reason="missing or wrong secret token header")
            return web.Response(status=403, text="wrong or missing secret token")
        try:
            update = Update.de_json(await request.json(), self._bot)
        except Exception as error:  # whatever json or PTB's parsing raises for a bad body
            self._log.warning("telegram.webhook_refused", status=400, reason=repr(error))
            return web.Response(status=400, text="the body is not a Telegram update")
        try:
            await self._take(update)
        except TurnNotRecordedError as error:
            self._log.warning("telegram.update_not_recorded", update_id=update.update_id,
                              error=str(error), outcome="answered 503; Telegram delivers it again")
            return web.Response(status=503, text="not recorded; deliver again later")
        return web.Response(status=200)
