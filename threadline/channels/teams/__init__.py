"""Microsoft Teams: Bot Framework activities over HTTP (needs `threadline[teams]`)."""

from threadline.channels.teams.channel import TeamsChannel

__all__ = ["TeamsChannel"]
