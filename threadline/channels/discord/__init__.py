"""Discord: the gateway and REST API through discord.py (needs `threadline[discord]`)."""

from threadline.channels.discord.channel import DiscordChannel

__all__ = ["DiscordChannel"]
