"""Channels: Slack, Telegram, Discord and a local channel, behind one small contract.

Platform SDKs are optional extras (`threadline[slack]`, `[telegram]`, `[discord]`), so each
platform's channel is imported from its own package:

    from threadline.channels.slack import SlackChannel
    from threadline.channels.telegram import TelegramChannel
    from threadline.channels.discord import DiscordChannel
    from threadline.channels.local import LocalChannel
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from threadline.plugs import lazy_exports

if TYPE_CHECKING:
    from threadline.channels.base import BotIdentity, Channel, ChannelEvents, LiveReply
    from threadline.channels.text import split_text

__all__ = ["BotIdentity", "Channel", "ChannelEvents", "LiveReply", "split_text"]

__getattr__ = lazy_exports(__name__, {
    "BotIdentity": "threadline.channels.base",
    "Channel": "threadline.channels.base",
    "ChannelEvents": "threadline.channels.base",
    "LiveReply": "threadline.channels.base",
    "split_text": "threadline.channels.text",
})
