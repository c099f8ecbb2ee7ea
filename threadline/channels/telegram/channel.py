"""The Telegram channel: one bot token, driven through python-telegram-bot (PTB) v22.

Updates arrive by long polling (default) or by webhook, and Telegram is told an update arrived
only once it was handled, for a message once `on_message` returned (see `telegram.updates`).
In webhook mode the channel serves `webhook_listen:webhook_port/webhook_path` and registers
`webhook_url` with Telegram together with `webhook_secret_token`; a request without that exact
`X-Telegram-Bot-Api-Secret-Token` header is answered 403 and never reaches the events.

What to know when running it:
- Privacy mode (on by default, set with @BotFather /setprivacy): in groups the bot then sees
  only commands, @mentions of it and replies to its messages. `check()` says so at start-up.
- Nothing is persisted here: `stop()` confirms the polling offset, so a clean restart does not
  replay old updates; `drop_pending_updates=True` also discards what queued while stopped.
  After a crash, updates handled but not yet confirmed come again and reach `on_message`
  again: the receiver drops them by turn id. Updates are handled one at a time, in order.
- Polling refuses to start while a webhook is registered for the token (another deployment may
  be using it); a 409 Conflict while polling (a second poller on the token) is logged with
  what to do and reported by `check()`.
- Telegram sends bots no deletion events, so `on_delete` is never called; edits of text
  messages call `on_edit`. Telegram does not deliver other bots' messages to bots at all, so
  `allow_bots` only matters for messages a bot account sends through a self-hosted server.
- Replies are plain text (no parse_mode), so nothing in a user's or model's text can break
  them; they go to the inbound message's chat and forum topic and, outside private chats,
  reply to it. `send_reply` ignores `agent_name`: a bot cannot post under another name.
- Commands (`/forget`, `/forget@this_bot` in groups) arrive as ordinary messages; the team's
  commands are set as the bot's command menu at start (setMyCommands; `-` becomes `_`, which
  Telegram requires). A menu Telegram refuses is logged; typed commands still work. A
  command's buttons (`send_choices`, the Forget of `/forget`) are inline keyboard buttons; a
  press arrives as a callback query and becomes the button's command, sent by whoever pressed.
- 429s are waited out by PTB's `AIORateLimiter`, which also keeps to Telegram's documented
  flood limits (30 messages/s, 20 per minute per group) unless `throttle=False`.
- While an agent works the chat shows `typing`; with `streaming` on, the reply is shown as it
  is written (drafts in private chats, edits in groups), within `stream_interval` per chat
  (`telegram.live`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import structlog
from telegram import (
    BotCommand,
    CallbackQuery,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    Message,
    ReplyParameters,
    Update,
    User,
)
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Conflict,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
    TimedOut,
)
from telegram.ext import AIORateLimiter, ExtBot
from yarl import URL

from threadline.channels.base import BotIdentity, Channel, ChannelEvents, LiveReply
from threadline.channels.fetch_policy import FileHosts
from threadline.channels.files import take_in
from threadline.channels.live import RateGate
from threadline.channels.telegram.inbound import (
    Sender,
    button_turn,
    conversation_id,
    inbound_turn,
    incoming_files,
    sender_of,
    text_of,
    turn_id,
)
from threadline.channels.telegram.live import TelegramLiveReply
from threadline.channels.telegram.updates import UpdatePoller, WebhookReceiver
from threadline.channels.text import split_text
from threadline.channels.unreachable import unreachable
from threadline.errors import (
    ChannelAuthError,
    ChannelError,
    ChannelPermanentError,
    ConfigError,
    TurnNotRecordedError,
)
from threadline.history.files import TurnFile
from threadline.history.model import StoredMessage
from threadline.listening import Listener

if TYPE_CHECKING:
    from threadline.commands import CommandChoice

log = structlog.get_logger("threadline.channels.telegram")

Mode = Literal["polling", "webhook"]
_ALLOWED_UPDATES = ["message", "edited_message", "callback_query"]
_SECRET_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,256}")
_RATE_LIMIT_RETRIES = 5
# PTB's default file route: Telegram's own file host is where files come from.
TELEGRAM_FILE_ROUTE = "https://api.telegram.org/file/bot"
# The Bot API address PTB uses when base_url is not set (named in errors only then).
_BOT_API_URL = "https://api.telegram.org/bot"


def _conversation_key(update: Update) -> str | None:
    """The conversation an update belongs to, for logs; None when it cannot be told (an
    update missing its chat must still be logged and skipped, never raise here)."""
    try:
        message = update.effective_message
        return conversation_id(message) if message is not None else None
    except Exception:
        return None


class TelegramChannel(Channel):
    """A Telegram bot as a Threadline channel (see the module docstring for operating notes)."""

    channel_type = "telegram"
    max_message_chars = 4096
    no_earlier_messages = ("Telegram's Bot API gives a bot no chat history: it sees only "
                           "the messages sent while it is in the chat")

    def __init__(
        self,
        *,
        name: str,
        token: str,
        mode: Mode = "polling",
        webhook_url: str | None = None,
        webhook_path: str = "/telegram",
        webhook_listen: str = "127.0.0.1",
        webhook_port: int = 8443,
        webhook_secret_token: str | None = None,
        base_url: str | None = None,
        base_file_url: str | None = None,
        drop_pending_updates: bool = False,
        throttle: bool = True,
        allow_bots: bool = False,
        streaming: bool = True,
        stream_interval: float = 1.0,
        file_hosts: Sequence[str] = (),
    ) -> None:
        """Settings; `base_url`/`base_file_url` follow PTB: the token is appended, or replaces
        `{token}` (e.g. `http://127.0.0.1:8081/bot` for a self-hosted Bot API server).
        `streaming` shows replies as they are written, changing a chat's reply at most once
        per `stream_interval` seconds (see `telegram.live`). Files are fetched from the host
        of the file route only (Telegram's, or `base_file_url`'s), plus `file_hosts`."""
        super().__init__(name=name, allow_bots=allow_bots, streaming=streaming)
        where = f"telegram channel {name!r}"
        if not token:
            raise ConfigError(f"{where}: token is empty; set it to the token @BotFather gave.")
        if mode not in ("polling", "webhook"):
            raise ConfigError(f"{where}: mode must be 'polling' or 'webhook', got {mode!r}.")
        if stream_interval <= 0:
            raise ConfigError(f"{where}: stream_interval must be > 0 seconds, got "
                              f"{stream_interval}.")
        if mode == "webhook":
            if not webhook_url:
                raise ConfigError(f"{where}: mode 'webhook' needs webhook_url, the public HTTPS "
                                  "URL Telegram posts to (it is proxied to webhook_listen:port).")
            if webhook_secret_token is None or not _SECRET_TOKEN.fullmatch(webhook_secret_token):
                raise ConfigError(
                    f"{where}: mode 'webhook' needs webhook_secret_token of 1-256 characters "
                    "A-Z, a-z, 0-9, _ or - (for example secrets.token_urlsafe(32)), so forged "
                    "updates are rejected."
                )
        self._token = token
        self._mode: Mode = mode
        self._webhook_url = webhook_url
        self._webhook_path = webhook_path
        self._webhook_listen = webhook_listen
        self._webhook_port = webhook_port
        self._webhook_secret_token = webhook_secret_token
        self._base_url = base_url
        self._base_file_url = base_file_url
        file_route = URL(base_file_url or TELEGRAM_FILE_ROUTE)
        route_host = f"{file_route.host}:{file_route.port}"
        self._file_hosts = FileHosts.of(
            channel=name, setting=f"channels.{name}.file_hosts",
            platform_hosts=() if base_file_url else (route_host,),
            configured=[*((route_host,) if base_file_url else ()), *file_hosts])
        self._drop_pending_updates = drop_pending_updates
        self._throttle = throttle
        self._bot: ExtBot[Any] | None = None
        self._intake: UpdatePoller | WebhookReceiver | None = None
        self._events: ChannelEvents | None = None
        self._conflict: str | None = None
        self._gate = RateGate(stream_interval)
        self._log = log.bind(channel=name)

    # -- lifecycle -------------------------------------------------------------------------

    def _build_bot(self) -> ExtBot[Any]:
        limits = {} if self._throttle else {"overall_max_rate": 0, "group_max_rate": 0}
        urls: dict[str, Any] = {key: value for key, value in (("base_url", self._base_url),
                                              ("base_file_url", self._base_file_url)) if value}
        return ExtBot(self._token, rate_limiter=AIORateLimiter(
            max_retries=_RATE_LIMIT_RETRIES, **limits), **urls)

    async def start(self, events: ChannelEvents) -> None:
        if self._bot is not None:
            raise ChannelError(f"telegram channel {self.name!r} is already started; "
                               "call stop() before starting it again.")
        bot = self._build_bot()
        try:
            await bot.initialize()  # calls getMe
        except TelegramError as exc:
            await bot.shutdown()
            raise self._failure(exc, action="connect to the Bot API") from exc
        self._learn_identity(bot.bot)
        self._events = events
        self._conflict = None
        await self._offer_commands(bot)
        try:
            self._intake = await self._start_updates(bot)
        except BaseException:
            await bot.shutdown()
            raise
        self._bot = bot
        self._log.info("telegram.started", mode=self._mode, bot=bot.bot.username)

    async def _offer_commands(self, bot: ExtBot[Any]) -> None:
        """The team's commands as the bot's command menu (what "/" shows in every chat)."""
        if not self.commands:
            return
        menu = [BotCommand(c.name.replace("-", "_"), c.description) for c in self.commands]
        try:
            await bot.set_my_commands(menu)
        except TelegramError as exc:
            self._log.warning("telegram.commands_not_set", error=str(exc),
                              outcome="the menu is missing; typed commands still work")

    async def _start_updates(self, bot: ExtBot[Any]) -> UpdatePoller | WebhookReceiver:
        try:
            if self._mode == "webhook":
                assert self._webhook_url is not None and self._webhook_secret_token is not None
                receiver = WebhookReceiver(bot=bot, take=self._on_update, skip=self.skip_event,
                                           secret_token=self._webhook_secret_token, log=self._log)
                await receiver.start(
                    listener=self.listeners()[0], path=self._webhook_path, url=self._webhook_url,
                    allowed_updates=_ALLOWED_UPDATES,
                    drop_pending_updates=self._drop_pending_updates,
                )
                return receiver
            await self._refuse_a_webhook(bot)
            poller = UpdatePoller(bot=bot, take=self._on_update, allowed_updates=_ALLOWED_UPDATES,
                                  on_error=self._on_polling_error, skip=self.skip_event,
                                  log=self._log, channel=self.name)
            await poller.start(drop_pending_updates=self._drop_pending_updates)
            return poller
        except TelegramError as exc:
            raise self._failure(exc, action=f"start receiving updates ({self._mode})") from exc

    async def _refuse_a_webhook(self, bot: ExtBot[Any]) -> None:
        """Polling gets nothing while a webhook is set on the token: `start` refuses to poll
        then, and `check` (which asks the same) fails with the same words."""
        webhook = await bot.get_webhook_info()
        if webhook.url:
            raise ChannelError(
                f"telegram channel {self.name!r}: a webhook is set for this bot token "
                f"({webhook.url}), so Telegram hands out no updates by polling and another "
                "deployment may be receiving them. Stop that deployment and delete the "
                "webhook (Bot API deleteWebhook), or run this channel with mode: webhook."
            )

    async def stop(self) -> None:
        bot, self._bot = self._bot, None
        if bot is None:
            return
        intake, self._intake = self._intake, None
        if intake is not None:
            await intake.stop()  # finishes the update in hand, confirms what was handled
        await bot.shutdown()
        self._log.info("telegram.stopped")

    def _on_polling_error(self, exc: TelegramError) -> None:
        """The polling loop reports getUpdates errors here and retries with backoff (to 30 s)."""
        if isinstance(exc, Conflict):
            self._conflict = (
                f"Telegram refused polling for telegram channel {self.name!r} with 409 Conflict "
                f"({exc.message}): another process is polling with the same bot token, or a "
                "webhook was set. Run one deployment per token, or delete the webhook."
            )
            self._log.error("telegram.polling_conflict", error=self._conflict)
        else:
            self._log.warning("telegram.polling_error", error=str(exc))

    def receiving(self) -> str | None:
        if self._bot is None or self._intake is None:
            return "not connected"
        if isinstance(self._intake, UpdatePoller):
            return self._conflict or self._intake.listener.problem()
        return None

    # -- inbound ---------------------------------------------------------------------------

    async def _on_update(self, update: Update) -> None:
        """Hand one update to the events; returns once it is handled (see `telegram.updates`).

        `TurnNotRecordedError` propagates, so the update is not confirmed; any other failure
        is logged and the update counts as handled, so one bad update cannot stall the bot.
        """
        try:
            if update.message is not None:
                await self._deliver_message(update.message)
            elif update.edited_message is not None:
                await self._deliver_edit(update.edited_message)
            elif update.callback_query is not None:
                await self._deliver_press(update.callback_query)
        except TurnNotRecordedError:
            raise
        except Exception as error:
            self._log.exception("telegram.update_failed", update_id=update.update_id,
                                conversation_id=_conversation_key(update))
            self.skip_event(update.update_id, error)

    def _accepted_sender(self, message: Message) -> Sender | None:
        """The author, or None for the bot's own messages and other bots' unless `allow_bots`."""
        sender = sender_of(message)
        assert self.identity is not None
        if sender is None or sender.id == self.identity.user_id:
            return None
        return sender if self.allow_bots or not sender.is_bot else None

    async def _deliver_message(self, message: Message) -> None:
        assert self._events is not None and self.identity is not None
        sender = self._accepted_sender(message)
        if sender is None:
            return
        turn = inbound_turn(message, sender=sender, bot=self.identity)
        if turn is None:
            return  # stickers, joins and other messages without text
        assert self._bot is not None
        turn = await take_in(turn, incoming_files(message, self._bot, self._file_hosts),
                             self.file_intake)
        await self._events.on_message(turn, self)

    async def _deliver_press(self, query: CallbackQuery) -> None:
        """A button press: its command as a turn of the chat the button is in."""
        assert self._events is not None and self._bot is not None
        turn = button_turn(query)
        if turn is not None and not query.from_user.is_bot:
            await self._events.on_message(turn, self)
        try:
            await self._bot.answer_callback_query(query.id)  # stops the button's spinner
        except TelegramError as exc:
            self._log.warning("telegram.press_not_answered", error=str(exc))

    async def _deliver_edit(self, message: Message) -> None:
        assert self._events is not None
        text = text_of(message)
        if text is None or self._accepted_sender(message) is None:
            return
        await self._events.on_edit(
            conversation_id(message), turn_id(message.chat.id, message.message_id), text[0]
        )

    # -- outbound --------------------------------------------------------------------------

    def _started(self, action: str) -> ExtBot[Any]:
        if self._bot is None:
            raise ChannelError(f"telegram channel {self.name!r} cannot {action} before start().")
        return self._bot

    def reply_target(self, inbound: StoredMessage) -> tuple[int, ReplyParameters | None]:
        """The chat a reply to `inbound` goes to, and what it replies to (outside DMs)."""
        meta = inbound.metadata
        chat_id = int(self.delivered_here(inbound))
        reply_to = None
        if inbound.scope != "dm" and meta.message_id is not None:
            reply_to = ReplyParameters(
                message_id=int(meta.message_id), allow_sending_without_reply=True
            )
        return chat_id, reply_to

    def link_to(self, message: StoredMessage) -> str | None:
        """A supergroup message's `t.me/c/` link; private chats and basic groups have none."""
        chat, message_id = message.metadata.channel_id, message.metadata.message_id
        if not chat or not message_id or not chat.startswith("-100"):
            return None
        return f"https://t.me/c/{chat[4:]}/{message_id}"

    def open_reply(self, inbound: StoredMessage, *, agent_name: str | None = None) -> LiveReply:
        return TelegramLiveReply(channel=self, bot=self._started("send a reply"),
                                 inbound=inbound, agent_name=agent_name, gate=self._gate,
                                 log=self._log)

    def reply_failure(self, exc: TelegramError, *, inbound: StoredMessage,
                      action: str) -> ChannelError:
        """Our error for a reply Telegram refused, logged with its conversation."""
        error = self._failure(exc, action=action, conversation=inbound.conversation_id)
        self._log.error("telegram.reply_failed", conversation_id=inbound.conversation_id,
                        error=str(error))
        return error

    async def send_reply(
        self, inbound: StoredMessage, text: str, *, agent_name: str | None = None
    ) -> list[str]:
        return await self._post(inbound, text)

    async def send_choices(
        self, inbound: StoredMessage, text: str, choices: Sequence[CommandChoice], *,
        agent_name: str | None = None,
    ) -> list[str]:
        """The text with an inline keyboard button per choice (under its last part)."""
        keyboard = InlineKeyboardMarkup(
            [[InlineKeyboardButton(c.label, callback_data=c.command) for c in choices]])
        return await self._post(inbound, text, keyboard=keyboard)

    async def offer_feedback(self, reply: StoredMessage, platform_ids: Sequence[str],
                             choices: Sequence[CommandChoice]) -> bool:
        """The buttons as an inline keyboard added to the reply's last message."""
        bot = self._started("offer feedback buttons")
        keyboard = InlineKeyboardMarkup(
            [[InlineKeyboardButton(c.label, callback_data=c.command) for c in choices]])
        try:
            await bot.edit_message_reply_markup(chat_id=int(self.delivered_here(reply)),
                                                message_id=int(platform_ids[-1]),
                                                reply_markup=keyboard)
        except TelegramError as exc:
            raise self._failure(exc, action="add feedback buttons to a reply",
                                conversation=reply.conversation_id) from exc
        return True

    async def _post(self, inbound: StoredMessage, text: str, *,
                    keyboard: InlineKeyboardMarkup | None = None) -> list[str]:
        bot = self._started("send a reply")
        chat_id, reply_to = self.reply_target(inbound)
        topic = inbound.metadata.thread_id
        parts = split_text(text, self.max_message_chars)
        posted: list[str] = []
        for part in parts:
            try:
                sent = await bot.send_message(
                    chat_id=chat_id,
                    text=part,
                    message_thread_id=None if topic is None else int(topic),
                    reply_parameters=reply_to,
                    reply_markup=keyboard if len(posted) == len(parts) - 1 else None,
                )
            except TelegramError as exc:
                raise self.reply_failure(
                    exc, inbound=inbound,
                    action=f"post part {len(posted) + 1} of {len(parts)} of a reply") from exc
            posted.append(str(sent.message_id))
        return posted

    async def _upload(self, inbound: StoredMessage, file: TurnFile, data: bytes) -> list[str]:
        """A picture with sendPhoto (Telegram shows it inline), anything else sendDocument."""
        bot = self._started("send a file")
        chat_id, reply_to = self.reply_target(inbound)
        topic = inbound.metadata.thread_id
        where: dict[str, Any] = {"chat_id": chat_id, "reply_parameters": reply_to,
                                 "message_thread_id": None if topic is None else int(topic)}
        try:
            if file.kind == "image" and file.media_type in ("image/png", "image/jpeg"):
                sent = await bot.send_photo(photo=data, filename=file.name, **where)
            else:
                sent = await bot.send_document(document=data, filename=file.name, **where)
        except TelegramError as exc:
            raise self.reply_failure(exc, inbound=inbound,
                                     action=f"send the file {file.name!r}") from exc
        return [str(sent.message_id)]

    def _failure(
        self, exc: TelegramError, *, action: str, conversation: str | None = None
    ) -> ChannelError:
        """Our error for a failed Bot API call: what failed, where, and what to do."""
        where = f"telegram channel {self.name!r}" + (f", {conversation}" if conversation else "")
        if isinstance(exc, InvalidToken):  # PTB's text for it quotes the token: leave it out
            return ChannelAuthError(f"{where}: could not {action}: the bot token was rejected; "
                                    "copy it again from @BotFather (setting token).")
        what = f"{where}: could not {action}: {exc.message}"
        if isinstance(exc, Forbidden):
            return ChannelPermanentError(f"{what}. The bot was blocked, removed from the chat or "
                                         "may not post there; not retrying.")
        if isinstance(exc, ChatMigrated):
            return ChannelPermanentError(
                f"{what}. The group became supergroup {exc.new_chat_id}; its messages now "
                f"arrive as conversation telegram:{exc.new_chat_id}; not retrying."
            )
        if isinstance(exc, BadRequest):
            return ChannelPermanentError(f"{what}. Telegram rejected the request; not retrying.")
        if isinstance(exc, RetryAfter):
            return ChannelError(f"{what}. Still rate limited after {_RATE_LIMIT_RETRIES} waits; "
                                "try again later.")
        if type(exc) is NetworkError or isinstance(exc, TimedOut):  # not BadRequest, a subclass
            return ChannelError(unreachable(
                where=where, service="the Telegram Bot API", action=action,
                url=self._base_url or _BOT_API_URL, setting="base_url" if self._base_url else None,
                error=exc))
        return ChannelError(f"{what}. Check that the Bot API is reachable and try again.")

    # -- diagnostics -----------------------------------------------------------------------

    def _learn_identity(self, me: User) -> None:
        username = me.username or None
        self.identity = BotIdentity(
            user_id=str(me.id),
            username=username,
            display_name=me.first_name,
            extra_ids=(f"@{username}",) if username else (),
        )

    def listeners(self) -> list[Listener]:
        """Webhook mode listens on `webhook_listen:webhook_port`; polling dials out."""
        if self._mode != "webhook":
            return []
        return [Listener(self._webhook_listen, self._webhook_port,
                         f"channels.{self.name}.webhook_port",
                         f"channels.{self.name}.webhook_listen")]

    async def check(self) -> list[str]:
        """Settings that keep the bot from reading groups. Before `start()` it asks getMe
        itself, once, and learns who the bot is (`threadline check`); a polling channel also
        asks whether a webhook is set on the token, which `start()` would refuse."""
        try:
            if self._bot is None:
                async with self._build_bot() as bot:  # initializing asks getMe once
                    me = bot.bot
                    if self._mode == "polling":
                        await self._refuse_a_webhook(bot)
                self._learn_identity(me)
            else:
                me = await self._bot.get_me()
        except TelegramError as exc:
            raise self._failure(exc, action="read the bot's settings (getMe)") from exc
        problems = []
        if not me.can_read_all_group_messages:
            problems.append(
                f"Privacy mode is on for @{me.username} (telegram channel {self.name!r}): in "
                "groups it sees only commands, @mentions of it and replies to its messages. To "
                "let it read everything, send /setprivacy to @BotFather, choose Disable, then "
                "remove the bot from each group and add it again."
            )
        if me.can_join_groups is False:
            problems.append(
                f"@{me.username} (telegram channel {self.name!r}) cannot be added to groups; "
                "allow it with /setjoingroups at @BotFather."
            )
        if self._conflict:
            problems.append(self._conflict)
        return problems
