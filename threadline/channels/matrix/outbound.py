"""What the bot posts in a Matrix room: a reply's content, its choices, and its typing status.

A reply goes where its inbound message was said: into the message's thread (`m.thread`, with
the rich-reply fallback to the message itself), else as a reply to it (outside a DM). Every
post carries `m.mentions`: empty, so nothing the model or a member wrote (`@room`, a pill)
notifies anyone, unless the agent may broadcast and writes `@room`. Each part's transaction
id is derived from the reply, so a retry of the same part is the same event on the homeserver.

Choices (a tool approval's Approve and Deny) are numbered reactions: the post lists them, keeps
them in its own content (`CHOICES_FIELD`), and the bot reacts with each key so a person needs
one click; a person's reaction with a key is the choice's command, said by that person. The
commands can always be typed instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from threadline.channels.base import LiveReply
from threadline.channels.live import Renewal
from threadline.history.files import TurnFile
from threadline.history.model import StoredMessage

if TYPE_CHECKING:
    from threadline.channels.matrix.channel import MatrixChannel
    from threadline.commands import CommandChoice

CHOICES_FIELD = "org.threadline.choices"
CHOICE_KEYS = ("1\ufe0f\u20e3", "2\ufe0f\u20e3", "3\ufe0f\u20e3", "4\ufe0f\u20e3",
               "5\ufe0f\u20e3", "6\ufe0f\u20e3", "7\ufe0f\u20e3", "8\ufe0f\u20e3",
               "9\ufe0f\u20e3")
TYPING_MS = 30_000
TYPING_RENEWAL = 20.0


def transaction_id(inbound: StoredMessage, agent_name: str | None, part: int, text: str) -> str:
    """The same id for the same part of the same reply, whichever attempt posts it."""
    key = "\x1f".join((inbound.id, agent_name or "", str(part), text))
    return "tl" + hashlib.sha256(key.encode()).hexdigest()[:32]


def reply_content(inbound: StoredMessage, text: str, *, broadcast: bool) -> dict[str, Any]:
    """An `m.text` message answering `inbound` where it was said (see the module docstring)."""
    meta = inbound.metadata
    content: dict[str, Any] = {"msgtype": "m.text", "body": text,
                               "m.mentions": {"room": True} if broadcast and "@room" in text
                               else {}}
    if meta.thread_id:
        content["m.relates_to"] = {"rel_type": "m.thread", "event_id": meta.thread_id,
                                   "is_falling_back": True,
                                   "m.in_reply_to": {"event_id": meta.message_id
                                                     or meta.thread_id}}
    elif meta.message_id and inbound.scope != "dm":
        content["m.relates_to"] = {"m.in_reply_to": {"event_id": meta.message_id}}
    return content


def with_choices(content: dict[str, Any], choices: Sequence[CommandChoice]) -> dict[str, Any]:
    """`content` listing `choices` as reactions to click, and keeping them for the click."""
    keyed = dict(zip(CHOICE_KEYS, choices, strict=False))
    listed = ", ".join(f"{key} {choice.label}" for key, choice in keyed.items())
    return {**content, "body": f"{content['body']}\n\nReact with {listed}.",
            CHOICES_FIELD: {key: choice.command for key, choice in keyed.items()}}


def reaction(event_id: str, key: str) -> dict[str, Any]:
    """The bot's own reaction with `key` on its post, so a person needs one click."""
    return {"m.relates_to": {"rel_type": "m.annotation", "event_id": event_id, "key": key}}


def file_content(inbound: StoredMessage, file: TurnFile, *, url: str, size: int
                 ) -> dict[str, Any]:
    """An uploaded file as an `m.image` (shown inline) or `m.file`, where `inbound` was said."""
    return {**reply_content(inbound, file.name, broadcast=False),
            "msgtype": "m.image" if file.kind == "image" else "m.file",
            "filename": file.name, "url": url,
            "info": {"mimetype": file.media_type, "size": size}}


def matrix_to(room_id: str, event_id: str) -> str:
    """A matrix.to link to an event (any client opens it), via the room's server."""
    server = room_id.partition(":")[2]
    via = f"?via={quote(server, safe='')}" if server else ""
    return f"https://matrix.to/#/{quote(room_id, safe='!:')}/{quote(event_id, safe='$:')}{via}"


def chosen_command(choices_post: Mapping[str, Any], key: str) -> str | None:
    """The command of the choice a reaction `key` picked on a post of ours, if any."""
    content = choices_post.get("content")
    choices = content.get(CHOICES_FIELD) if isinstance(content, Mapping) else None
    command = choices.get(key) if isinstance(choices, Mapping) else None
    return command if isinstance(command, str) else None


class MatrixReply(LiveReply):
    """One reply in a room: typing while the agent works, the reply posted whole at the end
    (Matrix clients show an edited message as edited, so a reply is not streamed by edits)."""

    def __init__(self, *, channel: MatrixChannel, inbound: StoredMessage,
                 agent_name: str | None, log: Any) -> None:
        self._channel = channel
        self._inbound = inbound
        self._agent_name = agent_name
        self._typing = Renewal(lambda: channel.set_typing(inbound, typing=True),
                               every=TYPING_RENEWAL, log=log)

    async def working(self, activity: str | None = None) -> None:
        self._typing.start()

    async def finish(self, text: str) -> list[str]:
        await self._typing.stop()
        try:
            return await self._channel.send_reply(self._inbound, text,
                                                  agent_name=self._agent_name)
        finally:
            await self._channel.set_typing(self._inbound, typing=False)

    async def close(self) -> None:
        await self._typing.stop()
        await self._channel.set_typing(self._inbound, typing=False)
