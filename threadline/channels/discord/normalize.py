"""Discord messages as Threadline turns: where they were said, what they say, whom they address.

Conversation ids (stable; a thread is its own conversation):

    guild text/voice/announcement channel   discord:GUILD:CHANNEL          scope channel
    thread or forum post                    discord:GUILD:PARENT:THREAD    scope thread
    DM or group DM                          discord:@me:CHANNEL            scope dm

A stored turn's id is `discord:MESSAGE` (snowflakes are unique across Discord, so a redelivery
or an edit maps to the same turn wherever it is seen). `metadata.channel_id` and `channel_name`
are the channel's, or the parent channel's for a thread (None for a DM's name), and
`metadata.thread_id` is the thread.

Mention markup is rewritten to what Discord shows (`<@123>` -> `@Ada`, `<@&7>` -> `@Support`,
`<#9>` -> `#general`), and `metadata.mentions` holds the mentioned user ids, the mentioned role
ids, and the bot's own user id when a role the bot holds (or its managed bot role) is mentioned:
people often pick the bot's role from autocomplete and mean the bot. Discord mentions are always
by id, so no names are put in `mentions` (a human called like an agent must not summon it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial

import discord

from threadline.channels.fetch_policy import FileHosts, fetch_file
from threadline.channels.files import IncomingFile
from threadline.history.model import MessageMetadata, Participant, Scope, StoredMessage

CHANNEL_TYPE = "discord"
DM_GUILD = "@me"
_MARKUP = re.compile(r"<(@[!&]?|#)(\d{15,21})>")


@dataclass(frozen=True, slots=True)
class DiscordLocation:
    """Where a message was said, in Threadline's terms, and where replies to it go."""

    conversation_id: str
    scope: Scope
    channel_id: str
    thread_id: str | None = None
    channel_name: str | None = None


def dm_location(channel_id: int) -> DiscordLocation:
    return DiscordLocation(
        conversation_id=f"discord:{DM_GUILD}:{channel_id}", scope="dm", channel_id=str(channel_id)
    )


def locate(channel: object, *, guild_id: int | None, channel_id: int) -> DiscordLocation | None:
    """The location of a channel object, or None when it is a partial one we cannot place.

    A partial channel (a thread discord.py has not cached) needs a fetch to learn its parent;
    the caller does that and calls again.
    """
    if guild_id is None or isinstance(channel, discord.abc.PrivateChannel):
        return dm_location(channel_id)
    if isinstance(channel, discord.Thread):
        parent = channel.parent
        return DiscordLocation(
            conversation_id=f"discord:{guild_id}:{channel.parent_id}:{channel.id}",
            scope="thread", channel_id=str(channel.parent_id), thread_id=str(channel.id),
            channel_name=parent.name if parent is not None else channel.name,
        )
    if isinstance(channel, discord.abc.GuildChannel):
        return DiscordLocation(
            conversation_id=f"discord:{guild_id}:{channel.id}", scope="channel",
            channel_id=str(channel.id), channel_name=channel.name,
        )
    return None


def guild_part(conversation_id: str) -> str:
    """The server of a conversation id (`@me` for a DM), "" when it is not one of ours."""
    return conversation_id.split(":")[1] if ":" in conversation_id else ""


def stored_id(message_id: int) -> str:
    """The stored turn id for a Discord message id."""
    return f"discord:{message_id}"


def _bot_role_ids(guild: discord.Guild | None, bot_user_id: int) -> set[int]:
    if guild is None:
        return set()
    held = {role.id for role in guild.me.roles} if guild.me is not None else set()
    managed = {r.id for r in guild.roles if r.tags is not None and r.tags.bot_id == bot_user_id}
    return (held | managed) - {guild.id}  # the @everyone role has the guild's id


def render_text(message: discord.Message, *, bot_user_id: int) -> tuple[str, tuple[str, ...]]:
    """The message text with mention markup made readable, and the ids it mentions."""
    guild = message.guild
    users = {user.id: user for user in message.mentions}
    bot_roles = _bot_role_ids(guild, bot_user_id)
    mentioned: list[str] = [str(user.id) for user in message.mentions]

    def readable(match: re.Match[str]) -> str:
        kind, snowflake = match[1], int(match[2])
        if kind == "#":
            target = guild.get_channel_or_thread(snowflake) if guild is not None else None
            return f"#{target.name}" if target is not None else f"#{snowflake}"
        if kind == "@&":
            mentioned.append(str(snowflake))
            if snowflake in bot_roles:
                mentioned.append(str(bot_user_id))
            role = guild.get_role(snowflake) if guild is not None else None
            return f"@{role.name}" if role is not None else f"@{snowflake}"
        mentioned.append(str(snowflake))
        member = users.get(snowflake) or (guild.get_member(snowflake) if guild else None)
        return f"@{member.display_name}" if member is not None else f"@{snowflake}"

    text = _MARKUP.sub(readable, message.content)
    return text, tuple(dict.fromkeys(mentioned))


def incoming_files(message: discord.Message, hosts: FileHosts) -> list[IncomingFile]:
    """The message's attachments, each fetched from the CDN URL the event gives, within
    `hosts` and never past the limit (the CDN URL is signed: no credential is sent)."""
    return [IncomingFile(name=a.filename, platform_id=str(a.id), declared_size=a.size,
                         fetch=partial(_fetch, a.url, hosts)) for a in message.attachments]


async def _fetch(url: str, hosts: FileHosts, limit: int) -> bytes:
    return await fetch_file(url, hosts=hosts, limit=limit)


def _reply_target(message: discord.Message) -> tuple[str | None, str | None]:
    """(message id, author id) of what this message answers: its reply, else its thread."""
    reference = message.reference
    if reference is not None and reference.message_id is not None:
        resolved = reference.resolved
        author = str(resolved.author.id) if isinstance(resolved, discord.Message) else None
        return str(reference.message_id), author
    channel = message.channel
    if isinstance(channel, discord.Thread) and channel.owner_id:
        return None, str(channel.owner_id)
    return None, None


def to_stored_message(
    message: discord.Message, *, location: DiscordLocation, bot_user_id: int
) -> StoredMessage:
    """One inbound Discord message as one normalized turn."""
    text, mentions = render_text(message, bot_user_id=bot_user_id)
    reply_to_message_id, reply_to_participant_id = _reply_target(message)
    return StoredMessage(
        id=stored_id(message.id),
        conversation_id=location.conversation_id,
        participant=Participant(
            kind="user", id=str(message.author.id), display_name=message.author.display_name
        ),
        content=text,
        timestamp=message.created_at,
        scope=location.scope,
        metadata=MessageMetadata(
            channel_type=CHANNEL_TYPE,
            channel_name=location.channel_name,
            channel_id=location.channel_id,
            thread_id=location.thread_id,
            message_id=str(message.id),
            mentions=mentions,
            reply_to_message_id=reply_to_message_id,
            reply_to_participant_id=reply_to_participant_id,
            # Another bot's message (taken with `allow_bots`) is known as one, as on Slack.
            extra={"is_bot": True} if message.author.bot else {},
        ),
    )
