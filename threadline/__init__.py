"""Threadline: LLM agents as bots in Slack, Telegram and Discord, sharing one persistent history."""

__version__ = "0.1.0"
