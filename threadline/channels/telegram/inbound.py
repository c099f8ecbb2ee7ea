"""Turning a Telegram message into Threadline's normalized inbound turn.

Ids (documented, stable):
- conversation: `telegram:CHAT_ID`, or `telegram:CHAT_ID:TOPIC_ID` for a forum topic message
  (only when Telegram marks it `is_topic_message`; the General topic is the chat itself);
- turn: `telegram:CHAT_ID:MESSAGE_ID` (message ids are unique per chat, so an edit or a
  redelivery maps to the same turn wherever the message sits).

Telegram text needs no rewriting to be readable: `@username` mentions are already plain text and
a `text_mention` shows the person's name. What a message addresses goes to `metadata.mentions`:
- `@name` as written, plus the bot's user id when it names this bot (case-insensitively);
- a `text_mention`'s user id (and `@username` when the user has one);
- `/cmd@name` like `@name`; a bare `/cmd` opening the message is for every bot in the chat
  (Telegram's own rule), so it mentions this bot too.
A reply's author goes to `reply_to_participant_id`. In a forum topic Telegram makes every
message a reply to the topic's creation notice; that is not a reply to anyone and is not reported.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from telegram import Bot, CallbackQuery, Chat, Message, MessageEntity

from threadline.channels.base import BotIdentity
from threadline.channels.fetch_policy import FileHosts, fetch_file
from threadline.channels.files import IncomingFile
from threadline.errors import FileRefusedError
from threadline.history.model import MessageMetadata, Participant, Scope, StoredMessage


@dataclass(frozen=True, slots=True)
class Sender:
    """Who wrote a Telegram message: a user, or a chat posting as itself (anonymous admins)."""

    id: str
    display_name: str
    is_bot: bool


def conversation_id(message: Message) -> str:
    """The documented conversation id of the chat or forum topic `message` belongs to."""
    if message.is_topic_message and message.message_thread_id is not None:
        return f"telegram:{message.chat.id}:{message.message_thread_id}"
    return f"telegram:{message.chat.id}"


def turn_id(chat_id: int | str, message_id: int | str) -> str:
    """The stored id of a Telegram message: the same for its edits and redeliveries."""
    return f"telegram:{chat_id}:{message_id}"


def sender_of(message: Message) -> Sender | None:
    """The author; a chat posting as itself (anonymous admin, linked channel) is the sender.

    Telegram fills `from` with a placeholder bot account for those posts, which would otherwise
    be dropped as another bot's message.
    """
    if message.sender_chat is not None:
        chat = message.sender_chat
        return Sender(str(chat.id), chat.effective_name or str(chat.id), is_bot=False)
    if message.from_user is not None:
        user = message.from_user
        return Sender(str(user.id), user.full_name or str(user.id), is_bot=user.is_bot)
    return None


def _bot_aliases(bot: BotIdentity) -> list[str]:
    return [f"@{bot.username}", bot.user_id] if bot.username else [bot.user_id]


def _named(name: str, bot: BotIdentity) -> list[str]:
    """A `@name` mention: the bot's canonical aliases when it names this bot, else as written."""
    if bot.username and name[1:].lower() == bot.username.lower():
        return _bot_aliases(bot)
    return [name]


def mentions(entities: dict[MessageEntity, str], bot: BotIdentity) -> tuple[str, ...]:
    """The platform ids and `@names` a message's entities address (see the module docstring)."""
    found: list[str] = []
    for entity, value in entities.items():
        if entity.type == MessageEntity.MENTION:
            found += _named(value, bot)
        elif entity.type == MessageEntity.TEXT_MENTION and entity.user is not None:
            found.append(str(entity.user.id))
            if entity.user.username:
                found.append(f"@{entity.user.username}")
        elif entity.type == MessageEntity.BOT_COMMAND:
            _, _, target = value.partition("@")
            if target:
                found += _named(f"@{target}", bot)
            elif entity.offset == 0:
                found += _bot_aliases(bot)
    return tuple(dict.fromkeys(found))


def _scope(message: Message) -> Scope:
    if message.chat.type == Chat.PRIVATE:
        return "dm"
    if message.is_topic_message:
        return "thread"
    return "channel"


def _reply_target(message: Message) -> tuple[str | None, str | None]:
    """(platform message id, author id) of the message replied to, when it is a real reply."""
    reply = message.reply_to_message
    if reply is None or reply.forum_topic_created is not None:
        return None, None
    author = sender_of(reply)
    return str(reply.message_id), author.id if author else None


def text_of(message: Message) -> tuple[str, dict[MessageEntity, str]] | None:
    """The message's text (or media caption) with its entities; None when it has neither."""
    if message.text is not None:
        return message.text, message.parse_entities()
    if message.caption is not None:
        return message.caption, message.parse_caption_entities()
    return None


def file_url(file_path: str | None, *, file_route: str) -> str:
    """The URL of a `getFile` answer's file, always inside the bot's `file_route`.

    The Bot API names a file by a path relative to the file route; python-telegram-bot keeps a
    `file_path` that names an existing local file as it is (for a local-mode server) and its
    download would read that file from disk. A server that is hostile or proxied could name
    `/etc/passwd` or `../../.env` that way, so a path that is not a plain name inside the
    route (absolute, with `..`, `.`, an empty or a backslashed segment, even percent-encoded)
    is refused, and nothing is ever read from disk.
    """
    prefix = f"{file_route}/"
    name = file_path[len(prefix):] if file_path and file_path.startswith(prefix) else None
    segments = urllib.parse.unquote(name).split("/") if name else [""]
    if name is None or any(s in ("", ".", "..") or "\\" in s for s in segments):
        raise FileRefusedError(f"Telegram's getFile named {file_path!r}, not a file inside its "
                               "file route; it was not fetched (and no local file is read)")
    return prefix + urllib.parse.quote(name)


def incoming_files(message: Message, bot: Bot, hosts: FileHosts) -> list[IncomingFile]:
    """The photo (its largest size), document, voice note or audio a message carries, each
    fetched by `getFile` and then the file route (within `hosts`) when it is taken in."""
    found: list[tuple[str, str, int | None]] = []
    if message.photo:
        photo = message.photo[-1]
        found.append((photo.file_id, f"photo-{message.message_id}.jpg", photo.file_size))
    for media, default in ((message.document, "document"), (message.voice, "voice.ogg"),
                           (message.audio, "audio")):
        if media is not None:
            name = getattr(media, "file_name", None) or default
            found.append((media.file_id, name, media.file_size))

    def fetcher(file_id: str) -> Callable[[int], Awaitable[bytes]]:
        async def fetch(limit: int) -> bytes:
            located = await bot.get_file(file_id)
            url = file_url(located.file_path, file_route=bot.base_file_url)
            return await fetch_file(url, hosts=hosts, limit=limit)
        return fetch

    return [IncomingFile(name=name, platform_id=file_id, declared_size=size or 0,
                         fetch=fetcher(file_id)) for file_id, name, size in found]


def inbound_turn(message: Message, *, sender: Sender, bot: BotIdentity) -> StoredMessage | None:
    """The normalized turn for a new Telegram message, or None if it carries no text and no
    file (its files' text is added when they are taken in)."""
    text = text_of(message)
    if text is None and not (message.photo or message.document or message.voice
                             or message.audio):
        return None
    content, entities = text if text is not None else ("", {})
    reply_to_message_id, reply_to_participant_id = _reply_target(message)
    topic = message.message_thread_id if message.is_topic_message else None
    return StoredMessage(
        conversation_id=conversation_id(message),
        participant=Participant(kind="user", id=sender.id, display_name=sender.display_name),
        content=content,
        id=turn_id(message.chat.id, message.message_id),
        timestamp=message.date,
        scope=_scope(message),
        metadata=MessageMetadata(
            channel_type="telegram",
            channel_name=message.chat.effective_name,
            channel_id=str(message.chat.id),
            thread_id=None if topic is None else str(topic),
            message_id=str(message.message_id),
            mentions=mentions(entities, bot),
            reply_to_message_id=reply_to_message_id,
            reply_to_participant_id=reply_to_participant_id,
        ),
    )


def button_turn(query: CallbackQuery) -> StoredMessage | None:
    """The turn a pressed inline button sends: its `callback_data` (a command, `/forget
    confirm`) said by whoever pressed it, in the chat (and topic) of the button's message.

    None when the button's message is too old for Telegram to say where it is. The query id
    names the turn, so a redelivered press is one turn.
    """
    message = query.message
    if not isinstance(message, Message) or not query.data:
        return None
    user = query.from_user
    topic = message.message_thread_id if message.is_topic_message else None
    return StoredMessage(
        conversation_id=conversation_id(message),
        participant=Participant(kind="user", id=str(user.id),
                                display_name=user.full_name or str(user.id)),
        content=query.data,
        id=f"telegram:{message.chat.id}:button:{query.id}",
        scope=_scope(message),
        metadata=MessageMetadata(
            channel_type="telegram", channel_name=message.chat.effective_name,
            channel_id=str(message.chat.id), thread_id=None if topic is None else str(topic),
            extra={"button_of": str(message.message_id)},
        ),
    )
