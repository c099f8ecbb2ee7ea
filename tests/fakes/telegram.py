"""A fake Telegram Bot API server: real HTTP on 127.0.0.1, the Bot API's own wire format.

It serves `/bot<TOKEN>/<method>` (JSON, form or multipart bodies, like the real one), answers
`{"ok": true, "result": ...}` or `{"ok": false, "error_code": ..., "description": ...,
"parameters": {...}}` with the matching HTTP status, and records every call in `calls`.
Updates built with `message()` / `edit()` are handed out by `getUpdates` long polls (returning
as soon as one is queued; an `offset` confirms earlier ones) or, once `setWebhook` was called,
posted to the webhook with its secret header. `fail()` injects errors (429 with retry_after,
409, 400, 403) into the next calls of a method. Replies can be streamed: `sendMessageDraft`
(private chats only), `editMessageText` (kept in `texts`, what each bot message shows now),
`editMessageReplyMarkup` (the keyboard kept on the message) and
`sendChatAction` are served; every call is recorded with the time it arrived, and with
`flood_interval` set, a chat changed again sooner than that is refused with a 429, as
Telegram's flood control does.

    async with FakeTelegram() as fake:
        channel = TelegramChannel(name="tg", token=fake.token, base_url=fake.api_url)
        await fake.deliver(fake.message(GROUP, ALICE, "@support_bot hi"))
        [call] = await fake.wait_for_calls("sendMessage", 1)
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections import defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

import aiohttp
from aiohttp import web

TOKEN = "123456:TEST-token_for_the_fake"
MAX_TEXT = 4096


@dataclass(frozen=True)
class TgUser:
    """A Telegram user (or bot account) as updates describe it."""

    id: int
    first_name: str
    username: str | None = None
    is_bot: bool = False

    def as_dict(self) -> dict[str, Any]:
        user: dict[str, Any] = {"id": self.id, "is_bot": self.is_bot,
                                "first_name": self.first_name}
        if self.username:
            user["username"] = self.username
        return user


@dataclass(frozen=True)
class TgChat:
    """A Telegram chat: `private`, `group`, `supergroup` (forum or not) or `channel`."""

    id: int
    type: str
    title: str | None = None
    first_name: str | None = None
    is_forum: bool = False

    def as_dict(self) -> dict[str, Any]:
        chat: dict[str, Any] = {"id": self.id, "type": self.type}
        if self.title is not None:
            chat["title"] = self.title
        if self.first_name is not None:
            chat["first_name"] = self.first_name
        if self.is_forum:
            chat["is_forum"] = True
        return chat


def private_chat(user: TgUser) -> TgChat:
    """The private chat (DM) between the bot and `user`: its id is the user's id."""
    return TgChat(user.id, "private", first_name=user.first_name)


BOT = TgUser(4242, "Support", username="support_bot", is_bot=True)
ALICE = TgUser(1001, "Alice", username="alice")
BOB = TgUser(1002, "Bob")
OTHER_BOT = TgUser(5005, "Other", username="other_bot", is_bot=True)
GROUP = TgChat(-1001000000001, "supergroup", title="Support group")
FORUM = TgChat(-1001000000002, "supergroup", title="Forum", is_forum=True)

_MENTION = re.compile(r"(?<![\w@])@[A-Za-z][A-Za-z0-9_]{3,31}\b")
_COMMAND = re.compile(r"(?<!\S)/[A-Za-z0-9_]{1,32}(?:@[A-Za-z][A-Za-z0-9_]{3,31})?\b")
_JSON_FIELDS = {"reply_parameters", "allowed_updates", "entities", "reply_markup",
                "link_preview_options", "commands"}
_BOT_COMMAND = re.compile(r"^[a-z0-9_]{1,32}$")
_INT_FIELDS = {"offset", "limit", "timeout", "message_thread_id", "max_connections",
               "message_id", "draft_id"}
# Calls that change what a chat shows: Telegram's per-chat flood limit counts them.
CHAT_CHANGES = frozenset({"sendMessage", "editMessageText", "sendMessageDraft"})
_BOOL_FIELDS = {"drop_pending_updates", "disable_notification", "protect_content"}


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _entity(text: str, start: int, end: int, kind: str) -> dict[str, Any]:
    """An entity with Telegram's UTF-16 offsets for the Python slice text[start:end]."""
    return {"type": kind, "offset": _utf16(text[:start]), "length": _utf16(text[start:end])}


def _entities(text: str, text_mentions: Sequence[tuple[str, TgUser]]) -> list[dict[str, Any]]:
    """The entities Telegram's servers find in plain text, plus explicit text mentions."""
    found = [_entity(text, m.start(), m.end(), "mention") for m in _MENTION.finditer(text)]
    found += [_entity(text, m.start(), m.end(), "bot_command") for m in _COMMAND.finditer(text)]
    for shown, user in text_mentions:
        start = text.index(shown)
        found.append({**_entity(text, start, start + len(shown), "text_mention"),
                      "user": user.as_dict()})
    return sorted(found, key=lambda e: e["offset"])


@dataclass(frozen=True)
class ApiCall:
    """One Bot API request the fake received, with its decoded parameters and HTTP status."""

    method: str
    params: dict[str, Any]
    status: int
    at: float = 0.0  # time.monotonic() when it arrived


@dataclass
class _Failure:
    error_code: int
    description: str
    parameters: dict[str, Any] = field(default_factory=dict)


def _coerce(name: str, value: str) -> Any:
    """A form field as the Bot API reads it (form values of complex types are JSON)."""
    if name in _JSON_FIELDS:
        return json.loads(value)
    if name in _INT_FIELDS:
        return int(value)
    if name in _BOOL_FIELDS:
        return value.lower() in ("true", "1")
    if name == "chat_id" and value.lstrip("-").isdigit():
        return int(value)
    return value


class FakeTelegram:
    """The fake Bot API server; see the module docstring."""

    def __init__(
        self,
        *,
        token: str = TOKEN,
        bot: TgUser = BOT,
        can_read_all_group_messages: bool = False,
        can_join_groups: bool = True,
    ) -> None:
        self.token = token
        self.bot = bot
        self.can_read_all_group_messages = can_read_all_group_messages
        self.can_join_groups = can_join_groups
        self.calls: list[ApiCall] = []
        self.sent: list[dict[str, Any]] = []
        self.texts: dict[tuple[int, int], str] = {}  # (chat, message id) -> what it shows
        self.flood_interval: float | None = None
        self._last_change: dict[int, float] = {}
        self.webhook: dict[str, Any] | None = None
        self.my_commands: list[dict[str, Any]] = []  # the menu setMyCommands last set
        self._queue: list[dict[str, Any]] = []
        self.files: dict[str, bytes] = {}  # file_id -> bytes served by getFile's file route
        self.file_downloads: list[str] = []  # the file paths fetched, in order
        self.file_paths: dict[str, str] = {}  # file_id -> the file_path getFile answers instead
        self.uploads: list[dict[str, Any]] = []  # files the bot sent (sendPhoto, sendDocument)
        self.uploads_in_flight: dict[str, tuple[str, bytes]] = {}
        self._confirmed_offset = 0
        self._new_update = asyncio.Event()
        self._recorded = asyncio.Condition()
        self._failures: dict[str, deque[_Failure | None]] = defaultdict(deque)  # None: pass
        self._chats: dict[int, TgChat] = {}
        self._messages: dict[tuple[int, int], dict[str, Any]] = {}
        self._message_ids: dict[int, itertools.count[int]] = defaultdict(
            lambda: itertools.count(1))
        self._update_ids = itertools.count(700_000_001)
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._closing = False
        self.url = ""

    # -- server lifecycle -------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._handle)
        app.router.add_get("/file/bot{token}/{path:.+}", self._file)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        self._session = aiohttp.ClientSession()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closing = True
        self._new_update.set()  # release pending long polls at once
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def api_url(self) -> str:
        """The `base_url` for PTB (it appends the token)."""
        return f"{self.url}/bot"

    @property
    def file_url(self) -> str:
        """The `base_file_url` for PTB."""
        return f"{self.url}/file/bot"

    def channel_settings(self) -> dict[str, str]:
        """The channel settings (token, base URLs) that point a Telegram channel here."""
        return {"token": self.token, "base_url": self.api_url, "base_file_url": self.file_url}

    # -- what the test sees ---------------------------------------------------------------

    def calls_to(self, method: str) -> list[ApiCall]:
        return [c for c in self.calls if c.method == method]

    async def wait_for_calls(self, method: str, count: int) -> list[ApiCall]:
        """The first `count` calls of `method`, waiting for them (fails after 5 s, not hangs)."""
        async with asyncio.timeout(5.0), self._recorded:
            await self._recorded.wait_for(lambda: len(self.calls_to(method)) >= count)
        return self.calls_to(method)[:count]

    async def wait_until_text(self, condition: Callable[[str], bool]) -> None:
        """Wait until one of the bot's messages shows a text meeting `condition` (5 s)."""
        async with asyncio.timeout(5.0), self._recorded:
            await self._recorded.wait_for(
                lambda: any(condition(shown) for shown in self.texts.values()))

    def fail(
        self,
        method: str,
        *,
        error_code: int,
        description: str,
        retry_after: int | None = None,
        migrate_to_chat_id: int | None = None,
        times: int = 1,
        after: int = 0,
    ) -> None:
        """Answer `times` calls of `method` with this error, once `after` more have succeeded."""
        parameters: dict[str, Any] = {}
        if retry_after is not None:
            parameters["retry_after"] = retry_after
        if migrate_to_chat_id is not None:
            parameters["migrate_to_chat_id"] = migrate_to_chat_id
        failure = _Failure(error_code, description, parameters)
        self._failures[method].extend([None] * after + [failure] * times)

    async def wait_confirmed(self, update: Mapping[str, Any]) -> None:
        """Wait until a getUpdates offset confirmed `update`: the poller has taken it in."""
        async with asyncio.timeout(5.0), self._recorded:
            await self._recorded.wait_for(
                lambda: self._confirmed_offset > update["update_id"])

    @property
    def offsets(self) -> list[int | None]:
        """The `offset` of every getUpdates call, in order (None: the call had none)."""
        return [c.params.get("offset") for c in self.calls_to("getUpdates")]

    @property
    def pending_updates(self) -> list[dict[str, Any]]:
        """Updates not yet confirmed by a getUpdates offset."""
        return list(self._queue)

    # -- update builders -----------------------------------------------------------------

    def message(
        self,
        chat: TgChat,
        sender: TgUser,
        text: str,
        *,
        reply_to: Mapping[str, Any] | None = None,
        topic_id: int | None = None,
        text_mentions: Sequence[tuple[str, TgUser]] = (),
        sender_chat: TgChat | None = None,
    ) -> dict[str, Any]:
        """An update carrying a new text message, with the entities Telegram would attach.

        `reply_to` is a message dict (from an earlier update's "message" or from `sent`).
        `topic_id` makes it a forum topic message; without `reply_to` Telegram then makes it
        a reply to the topic's creation notice, as here.
        """
        self._chats[chat.id] = chat
        message: dict[str, Any] = {
            "message_id": next(self._message_ids[chat.id]),
            "from": sender.as_dict(),
            "chat": chat.as_dict(),
            "date": int(time.time()),
            "text": text,
        }
        if sender_chat is not None:
            message["sender_chat"] = sender_chat.as_dict()
        entities = _entities(text, text_mentions)
        if entities:
            message["entities"] = entities
        if topic_id is not None:
            message["message_thread_id"] = topic_id
            message["is_topic_message"] = True
            if reply_to is None:
                reply_to = {"message_id": topic_id, "from": ALICE.as_dict(),
                            "chat": chat.as_dict(), "date": message["date"],
                            "message_thread_id": topic_id, "is_topic_message": True,
                            "forum_topic_created": {"name": "Topic", "icon_color": 7322096}}
        if reply_to is not None:
            message["reply_to_message"] = dict(reply_to)
        self._messages[(chat.id, message["message_id"])] = message
        return {"update_id": next(self._update_ids), "message": message}

    def media(
        self, chat: TgChat, sender: TgUser, data: bytes, *, kind: str, name: str = "",
        caption: str = "", declared_size: int | None = None,
    ) -> dict[str, Any]:
        """An update carrying a photo, document, voice note or audio (`kind`) with a caption;
        the bytes are served by getFile and the file route. `declared_size` is the size the
        update claims (a file too large to fetch is announced, never served)."""
        update = self.message(chat, sender, caption or "placeholder")
        message = update["message"]
        del message["text"]
        message.pop("entities", None)
        if caption:
            message["caption"] = caption
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = data
        size = len(data) if declared_size is None else declared_size
        described = {"file_id": file_id, "file_unique_id": f"u{file_id}", "file_size": size}
        if kind == "photo":
            message["photo"] = [{**described, "width": 90, "height": 90}]
        elif kind == "voice":
            message["voice"] = {**described, "duration": 3, "mime_type": "audio/ogg"}
        else:
            message[kind] = {**described, "file_name": name}
        return update

    async def _file(self, request: web.Request) -> web.Response:
        path = request.match_info["path"]
        if request.match_info["token"] != self.token or path not in self.files:
            return web.Response(status=404)
        self.file_downloads.append(path)
        return web.Response(body=self.files[path])

    async def _api_sendPhoto(self, params: dict[str, Any]) -> dict[str, Any] | _Failure:
        return self._sent_file(params, "photo")

    async def _api_sendDocument(self, params: dict[str, Any]) -> dict[str, Any] | _Failure:
        return self._sent_file(params, "document")

    def _sent_file(self, params: dict[str, Any], kind: str) -> dict[str, Any] | _Failure:
        upload = self.uploads_in_flight.pop(kind, None)
        if upload is None:
            return _Failure(400, f"Bad Request: there is no {kind} in the request")
        chat_id = int(params["chat_id"])
        message_id = next(self._message_ids[chat_id])
        self.uploads.append({"kind": kind, "chat_id": chat_id, "message_id": message_id,
                             "filename": upload[0], "data": upload[1]})
        described = {"file_id": f"sent-{message_id}", "file_unique_id": f"us{message_id}",
                     "file_size": len(upload[1])}
        media: Any = [{**described, "width": 1, "height": 1}] if kind == "photo" else {
            **described, "file_name": upload[0]}
        return {"message_id": message_id, "date": int(time.time()), kind: media,
                "chat": self._chats.get(chat_id, TgChat(chat_id, "private")).as_dict()}

    async def _api_getFile(self, params: dict[str, Any]) -> dict[str, Any] | _Failure:
        file_id = str(params.get("file_id"))
        if file_id not in self.files:
            return _Failure(400, "Bad Request: invalid file_id")
        return {"file_id": file_id, "file_unique_id": f"u{file_id}",
                "file_size": len(self.files[file_id]),
                "file_path": self.file_paths.get(file_id, file_id)}

    def raw_update(self, **fields: Any) -> dict[str, Any]:
        """An update with the next id and exactly these fields (malformed ones, for tests of
        what the bot does with updates it cannot read)."""
        return {"update_id": next(self._update_ids), **fields}

    def edit(self, update: Mapping[str, Any], text: str) -> dict[str, Any]:
        """An `edited_message` update for the message carried by `update`."""
        edited = {**update["message"], "text": text, "edit_date": int(time.time())}
        edited.pop("entities", None)
        if entities := _entities(text, ()):
            edited["entities"] = entities
        return {"update_id": next(self._update_ids), "edited_message": edited}

    def press(self, message: Mapping[str, Any], label: str, *, user: TgUser) -> dict[str, Any]:
        """A `callback_query` update: `user` pressed the inline button `label` under
        `message` (one the bot sent, from `sent`)."""
        buttons = [b for row in message["reply_markup"]["inline_keyboard"] for b in row]
        [button] = [b for b in buttons if b["text"] == label]
        return {"update_id": next(self._update_ids), "callback_query": {
            "id": str(next(self._update_ids)), "from": user.as_dict(), "message": message,
            "chat_instance": str(message["chat"]["id"]), "data": button["callback_data"]}}

    # -- delivering updates ---------------------------------------------------------------

    async def deliver(self, update: Mapping[str, Any], *, times: int = 1) -> list[int]:
        """Hand `update` to the bot `times` times (same update_id, as Telegram's redeliveries).

        Queued for getUpdates, or posted to the webhook when one is set; returns the
        webhook's HTTP statuses (empty when polling).
        """
        if self.webhook is None:
            self._queue.extend(dict(update) for _ in range(times))
            self._new_update.set()
            self._new_update = asyncio.Event()
            return []
        secret = self.webhook.get("secret_token")
        return [await self.post_webhook(update, secret=secret) for _ in range(times)]

    async def post_webhook(self, update: Mapping[str, Any], *, secret: str | None) -> int:
        """POST `update` to the registered webhook with this secret header (None: no header)."""
        assert self.webhook is not None and self._session is not None, "no webhook is set"
        headers = {"Content-Type": "application/json"}
        if secret is not None:
            headers["X-Telegram-Bot-Api-Secret-Token"] = secret
        async with self._session.post(self.webhook["url"], data=json.dumps(update),
                                      headers=headers) as response:
            return response.status

    # -- the Bot API ----------------------------------------------------------------------

    async def _params(self, request: web.Request) -> dict[str, Any]:
        params: dict[str, Any] = {k: _coerce(k, v) for k, v in request.query.items()}
        if request.content_type == "application/json":
            params.update(await request.json())
        elif request.can_read_body:
            form = await request.post()
            params.update({k: _coerce(k, v) for k, v in form.items() if isinstance(v, str)})
            for key, value in form.items():
                if isinstance(value, web.FileField):  # a multipart upload (sendPhoto ...)
                    self.uploads_in_flight[key] = (value.filename, value.file.read())
        return params

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        try:
            params = await self._params(request)
        except ConnectionResetError:  # the client gave up mid-request (a long poll cancelled)
            return web.Response(status=499)
        result: Any = None
        failure: _Failure | None = None
        if request.match_info["token"] != self.token:
            failure = _Failure(401, "Unauthorized")
        elif self._failures[method]:
            failure = self._failures[method].popleft()
        if failure is None and method in CHAT_CHANGES:
            failure = self._flood_control(params.get("chat_id"))
        if failure is None:
            handler = getattr(self, f"_api_{method}", None)
            result = await handler(params) if handler else _Failure(404, "Not Found")
            failure = result if isinstance(result, _Failure) else None
        status = failure.error_code if failure else 200
        self.calls.append(ApiCall(method, params, status, time.monotonic()))
        async with self._recorded:
            self._recorded.notify_all()
        if failure is not None:
            body: dict[str, Any] = {"ok": False, "error_code": failure.error_code,
                                    "description": failure.description}
            if failure.parameters:
                body["parameters"] = failure.parameters
            return web.json_response(body, status=failure.error_code)
        return web.json_response({"ok": True, "result": result})

    async def _api_getMe(self, params: dict[str, Any]) -> dict[str, Any]:
        return {**self.bot.as_dict(), "can_join_groups": self.can_join_groups,
                "can_read_all_group_messages": self.can_read_all_group_messages,
                "supports_inline_queries": False}

    async def _api_getUpdates(self, params: dict[str, Any]) -> list[dict[str, Any]] | _Failure:
        if self.webhook is not None:
            return _Failure(409, "Conflict: can't use getUpdates method while webhook is "
                                 "active; use deleteWebhook to delete the webhook first")
        offset = params.get("offset")
        if offset:
            self._queue = [u for u in self._queue if u["update_id"] >= offset]
            self._confirmed_offset = max(self._confirmed_offset, offset)
            async with self._recorded:
                self._recorded.notify_all()
        if not self._queue and params.get("timeout") and not self._closing:
            new_update = self._new_update
            try:
                async with asyncio.timeout(float(params["timeout"])):
                    await new_update.wait()
            except TimeoutError:
                pass
        return self._queue[: int(params.get("limit") or 100)]

    async def _api_sendMessage(self, params: dict[str, Any]) -> dict[str, Any] | _Failure:
        chat = self._chats.get(params.get("chat_id"))  # type: ignore[arg-type]
        text = str(params.get("text", ""))
        if chat is None:
            return _Failure(400, "Bad Request: chat not found")
        if not text.strip():
            return _Failure(400, "Bad Request: message text is empty")
        if len(text) > MAX_TEXT:
            return _Failure(400, "Bad Request: message is too long")
        message: dict[str, Any] = {
            "message_id": next(self._message_ids[chat.id]),
            "from": self.bot.as_dict(),
            "chat": chat.as_dict(),
            "date": int(time.time()),
            "text": text,
        }
        if (thread := params.get("message_thread_id")) is not None:
            message["message_thread_id"] = thread
            message["is_topic_message"] = True
        reply = (params.get("reply_parameters") or {}).get("message_id")
        if (original := self._messages.get((chat.id, reply))) is not None:
            message["reply_to_message"] = original
        if markup := params.get("reply_markup"):
            buttons = [b for row in markup.get("inline_keyboard", []) for b in row]
            if any(len(str(b.get("callback_data", "")).encode()) > 64 for b in buttons):
                return _Failure(400, "Bad Request: BUTTON_DATA_INVALID")
            message["reply_markup"] = markup
        self._messages[(chat.id, message["message_id"])] = message
        self.texts[(chat.id, message["message_id"])] = text
        self.sent.append(message)
        return message

    def _flood_control(self, chat_id: Any) -> _Failure | None:
        now = time.monotonic()
        last = self._last_change.get(chat_id)
        if self.flood_interval is not None and last is not None and (
                now - last < self.flood_interval):
            return _Failure(429, "Too Many Requests: retry after 1", {"retry_after": 1})
        self._last_change[chat_id] = now
        return None

    async def _api_sendMessageDraft(self, params: dict[str, Any]) -> bool | _Failure:
        chat = self._chats.get(params.get("chat_id"))  # type: ignore[arg-type]
        if chat is None:
            return _Failure(400, "Bad Request: chat not found")
        if chat.type != "private":
            return _Failure(400, "Bad Request: method is available only for private chats")
        if not params.get("draft_id"):
            return _Failure(400, "Bad Request: draft_id must be non-zero")
        if len(str(params.get("text", ""))) > MAX_TEXT:
            return _Failure(400, "Bad Request: message is too long")
        return True

    async def _api_editMessageText(self, params: dict[str, Any]) -> dict[str, Any] | _Failure:
        key = (params.get("chat_id"), params.get("message_id"))
        message = self._messages.get(key)  # type: ignore[arg-type]
        text = str(params.get("text", ""))
        if message is None or message["from"]["id"] != self.bot.id:
            return _Failure(400, "Bad Request: message to edit not found")
        if not text.strip():
            return _Failure(400, "Bad Request: message text is empty")
        if len(text) > MAX_TEXT:
            return _Failure(400, "Bad Request: MESSAGE_TOO_LONG")
        if text == message["text"]:
            return _Failure(400, "Bad Request: message is not modified: specified new message "
                                 "content and reply markup are exactly the same")
        message["text"] = text
        message["edit_date"] = int(time.time())
        self.texts[(message["chat"]["id"], message["message_id"])] = text
        return message

    async def _api_editMessageReplyMarkup(self, params: dict[str, Any]
                                          ) -> dict[str, Any] | _Failure:
        """The inline keyboard under a bot message, replaced (kept on the message in `sent`)."""
        key = (params.get("chat_id"), params.get("message_id"))
        message = self._messages.get(key)  # type: ignore[arg-type]
        if message is None or message["from"]["id"] != self.bot.id:
            return _Failure(400, "Bad Request: message to edit not found")
        markup = params.get("reply_markup") or {}
        buttons = [b for row in markup.get("inline_keyboard", []) for b in row]
        if any(len(str(b.get("callback_data", "")).encode()) > 64 for b in buttons):
            return _Failure(400, "Bad Request: BUTTON_DATA_INVALID")
        message["reply_markup"] = markup
        message["edit_date"] = int(time.time())
        return message

    async def _api_sendChatAction(self, params: dict[str, Any]) -> bool | _Failure:
        if params.get("chat_id") not in self._chats:
            return _Failure(400, "Bad Request: chat not found")
        return True

    async def _api_answerCallbackQuery(self, params: dict[str, Any]) -> bool:
        return True

    async def _api_deleteWebhook(self, params: dict[str, Any]) -> bool:
        self.webhook = None
        if params.get("drop_pending_updates"):
            self._queue.clear()
        return True

    async def _api_setWebhook(self, params: dict[str, Any]) -> bool:
        self.webhook = {"url": params["url"], "secret_token": params.get("secret_token")}
        if params.get("drop_pending_updates"):
            self._queue.clear()
        return True

    async def _api_getWebhookInfo(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"url": self.webhook["url"] if self.webhook else "",
                "has_custom_certificate": False, "pending_update_count": len(self._queue)}

    async def _api_setMyCommands(self, params: dict[str, Any]) -> bool | _Failure:
        """The bot's command menu, checked as Telegram checks it."""
        commands = params.get("commands") or []
        for entry in commands:
            if not _BOT_COMMAND.match(str(entry.get("command", ""))):
                return _Failure(400, "Bad Request: BOT_COMMAND_INVALID")
            if not 1 <= len(str(entry.get("description", ""))) <= 256:
                return _Failure(400, "Bad Request: BOT_COMMAND_DESCRIPTION_INVALID")
        self.my_commands = list(commands)
        return True

    async def _api_getMyCommands(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        return list(self.my_commands)

    async def _api_close(self, params: dict[str, Any]) -> bool:
        return True

    async def _api_logOut(self, params: dict[str, Any]) -> bool:
        return True
