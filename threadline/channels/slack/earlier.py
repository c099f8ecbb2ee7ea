"""What was said in a Slack thread or channel before the bot heard it, read as turns.

A bot mentioned in a thread it was never in, or added to a channel with history, knows nothing
before that moment; `conversations.replies` (a thread: its parent and replies, oldest first)
and `conversations.history` (a channel: newest first) give it what it missed. Each message is
read by the same `classify` as an event, so it gets the id the event would have (a message
that also arrives as an event later is recognized as the same turn), and the bot's own posts,
and other bots' unless the channel allows them, are left out as they are from events. A
thread's parent belongs to the channel's conversation; it is stored as the thread's opening
turn (`thread_opening`), as when the bot's own reply starts a thread. Files are not fetched.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from threadline.channels.base import thread_opening
from threadline.channels.slack.events import SlackPost, classify
from threadline.errors import ChannelError
from threadline.history.model import StoredMessage

MakeTurn = Callable[[SlackPost], Awaitable[StoredMessage]]


def earlier_posts(messages: Sequence[Mapping[str, Any]], *, team_id: str, channel_id: str,
                  channel_type: str, own_ids: frozenset[str], allow_bots: bool
                  ) -> list[SlackPost]:
    """The posts among a conversations.* page, oldest first, files left behind."""
    posts = []
    for message in sorted(messages, key=lambda m: float(m.get("ts") or 0)):
        change = classify({**message, "channel": channel_id, "channel_type": channel_type},
                          team_id=team_id, own_ids=own_ids, allow_bots=allow_bots)
        if isinstance(change, SlackPost):
            posts.append(replace(change, files=()))
    return posts


async def earlier_messages(message: StoredMessage, *, client: AsyncWebClient, team_id: str,
                           own_ids: frozenset[str], allow_bots: bool, limit: int,
                           make_turn: MakeTurn) -> list[StoredMessage]:
    """Up to `limit` messages before `message` in its thread (or channel), oldest first
    (before now when `message` carries no ts)."""
    meta = message.metadata
    if not meta.channel_id:
        raise ChannelError(f"{message.conversation_id}: the turn carries no Slack channel to "
                           "read earlier messages from")
    thread = meta.thread_id
    method = "conversations.replies" if thread else "conversations.history"
    # Before the turn (None: a conversation read by an operator, up to now).
    before: dict[str, Any] = ({"latest": meta.message_id, "inclusive": False}
                              if meta.message_id else {})
    try:
        if thread:
            response = await client.conversations_replies(
                channel=meta.channel_id, ts=thread, limit=limit, **before)
        else:
            response = await client.conversations_history(
                channel=meta.channel_id, limit=limit, **before)
    except SlackApiError as exc:
        code = exc.response.get("error") if exc.response is not None else None
        raise ChannelError(
            f"{message.conversation_id}: Slack refused {method} ({code or exc}); the app "
            "needs the channels:history, groups:history, im:history and mpim:history scopes "
            "to read what was said before it joined") from exc
    posts = earlier_posts(
        list(response.get("messages") or ())[:limit], team_id=team_id,
        channel_id=meta.channel_id, channel_type="im" if message.scope == "dm" else "channel",
        own_ids=own_ids, allow_bots=allow_bots)
    turns = [await make_turn(post) for post in posts]
    return [thread_opening(turn, thread_conversation_id=message.conversation_id)
            if thread and turn.metadata.message_id == thread else turn for turn in turns]
