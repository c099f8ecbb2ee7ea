"""Channels: Slack, Telegram, Discord and a local channel, behind one small contract.

Platform SDKs are optional extras (`threadline[slack]`, `[telegram]`, `[discord]`), so each
platform's channel is imported from its own package:

    from threadline.channels.slack import SlackChannel
    from threadline.channels.telegram import TelegramChannel
    from threadline.channels.discord import DiscordChannel
    from threadline.channels.local import LocalChannel
"""

from threadline.channels.base import BotIdentity, Channel, ChannelEvents, LiveReply
from threadline.channels.text import split_text

__all__ = ["BotIdentity", "Channel", "ChannelEvents", "LiveReply", "split_text"]
