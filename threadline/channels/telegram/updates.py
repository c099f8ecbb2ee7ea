"""How Telegram updates come in, and when Telegram is told they arrived.

Telegram forgets an update once told it was received: by a getUpdates `offset` past it
(polling) or by a 2xx answer to its webhook POST. PTB's `Updater` confirms an offset on the
next poll whatever became of the updates, and its webhook answers 200 before any handler ran,
so both are replaced here by code that says "received" only after `take(update)` returned (for
a message: after `on_message` returned, so the turn is recorded; see `ChannelEvents`).

Polling (`UpdatePoller`): getUpdates is read as plain JSON and each update parsed on its own,
so an update the library cannot parse, or whose handling fails for any reason but "not
recorded", is logged with its update id, counted (`skip`) and confirmed like any other: one bad
update never stalls polling. The polling task is supervised (`channels.supervise`): should it
end anyway, it is started again with backoff and the channel reports itself not receiving
meanwhile. Each batch is taken one update at a time, in order, and the offset
moves past an update only once it was taken. When taking one raises `TurnNotRecordedError` the
batch stops there and polling resumes from that update after a backoff, so it and everything
after it are delivered again. `stop()` confirms what was taken (one getUpdates with the offset
and no wait), so a clean restart replays nothing; after a crash, what was taken but not yet
confirmed comes again and the receiver drops the copies by turn id.

Webhook (`WebhookReceiver`): an aiohttp server answers each POST after `take` returned: 200, or
503 when the turn was not recorded, and Telegram delivers it again later. A request without the
exact `X-Telegram-Bot-Api-Secret-Token` header is a 403, a body that is not JSON a 400; an
update that cannot be parsed is skipped and answered 200, as polling confirms it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import warnings
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from aiohttp import web
from telegram import Bot, Update
from telegram.error import TelegramError, TimedOut
from telegram.warnings import PTBUserWarning

from threadline.channels.supervise import SupervisedListener
from threadline.errors import TurnNotRecordedError
from threadline.listening import Listener, serve
from threadline.waiting import cancel_and_wait, set_within

# getUpdates is called through `do_api_request` on purpose (see `UpdatePoller._next_batch`).
warnings.filterwarnings("ignore", message=r"Please use 'Bot\.getUpdates'",
                        category=PTBUserWarning)

UpdateTaker = Callable[[Update], Coroutine[Any, Any, None]]
PollingErrorHandler = Callable[[TelegramError], None]
SkipHandler = Callable[[object, BaseException], None]

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
        on_error: PollingErrorHandler, skip: SkipHandler, log: Any, channel: str,
    ) -> None:
        self._bot = bot
        self._take = take
        self._allowed_updates = list(allowed_updates)
        self._on_error = on_error
        self._skip = skip
        self._log = log
        self._offset: int | None = None  # the first update not yet taken
        self._stopping = asyncio.Event()
        self.listener = SupervisedListener(channel=channel, listen=self._poll)

    async def start(self, *, drop_pending_updates: bool) -> None:
        """Make sure no webhook is set (dropping what queued, if asked), then poll."""
        await self._bot.delete_webhook(drop_pending_updates=drop_pending_updates)
        self.listener.start()

    async def stop(self) -> None:
        """Finish the update being taken (for up to 10 s), then confirm every update taken."""
        self._stopping.set()
        # Safe when the grace runs out: an update not confirmed is delivered again.
        await self.listener.stop(grace=_STOP_GRACE_SECONDS)
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
                await set_within(self._stopping, pause)

    async def _next_batch(self) -> list[Any] | None:
        """The next updates after the offset as JSON, or None once `stop` was called.

        Plain JSON, not PTB's `get_updates`: that parses the whole batch at once, and one
        update it cannot parse would fail every poll from then on."""
        poll = asyncio.ensure_future(self._bot.do_api_request(
            "getUpdates", api_kwargs={"offset": self._offset, "timeout": _POLL_TIMEOUT_SECONDS,
                                      "allowed_updates": self._allowed_updates},
            read_timeout=_POLL_TIMEOUT_SECONDS + 10))
        stopping = asyncio.ensure_future(self._stopping.wait())
        await asyncio.wait({poll, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not poll.done():
            with contextlib.suppress(TelegramError):
                await cancel_and_wait(poll)
            return None
        result = poll.result()
        return list(result) if isinstance(result, list) else []

    async def _take_in_order(self, updates: list[Any]) -> bool:
        """Take each update and move the offset past it; False if one was not recorded."""
        for raw in updates:
            if self._stopping.is_set():
                return True  # the rest are not confirmed: Telegram delivers them again
            update_id = raw.get("update_id") if isinstance(raw, dict) else None
            try:
                update = Update.de_json(raw, self._bot)
                # A task per update, as a webhook request would have: what the receiver binds
                # to the current task (log context, "in flight" tracking) ends with the update.
                await asyncio.create_task(self._take(update))
            except TurnNotRecordedError as error:
                self._log.warning("telegram.update_not_recorded", update_id=update_id,
                                  error=str(error),
                                  outcome="not confirmed; polling resumes from it after a pause")
                return False
            except Exception as error:  # unparseable, or its handling failed: skip it
                self._skip(update_id, error)
            if isinstance(update_id, int) and not isinstance(update_id, bool):
                self._offset = max(self._offset or 0, update_id + 1)
        return True


class WebhookReceiver:
    """The webhook endpoint: answers Telegram's POST only after the update was taken."""

    def __init__(
        self, *, bot: Bot, take: UpdateTaker, skip: SkipHandler, secret_token: str, log: Any,
    ) -> None:
        self._bot = bot
        self._take = take
        self._skip = skip
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
            raw = await request.json()
        except Exception as error:  # not JSON at all: not Telegram speaking
            self._log.warning("telegram.webhook_refused", status=400, reason=repr(error))
            return web.Response(status=400, text="the body is not a Telegram update")
        update_id = raw.get("update_id") if isinstance(raw, dict) else None
        try:
            update = Update.de_json(raw, self._bot)
        except Exception as error:  # Telegram's, but unreadable here: confirmed and skipped
            self._skip(update_id, error)
            return web.Response(status=200)
        try:
            await self._take(update)
        except TurnNotRecordedError as error:
            self._log.warning("telegram.update_not_recorded", update_id=update.update_id,
                              error=str(error), outcome="answered 503; Telegram delivers it again")
            return web.Response(status=503, text="not recorded; deliver again later")
        return web.Response(status=200)
