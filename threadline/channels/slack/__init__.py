"""Slack: the Events API over HTTP or Socket Mode (needs `threadline[slack]`)."""

from threadline.channels.slack.channel import SlackChannel

__all__ = ["SlackChannel"]
