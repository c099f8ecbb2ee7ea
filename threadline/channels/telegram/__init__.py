"""Telegram: the Bot API by long polling or a webhook (needs `threadline[telegram]`)."""

from threadline.channels.telegram.channel import TelegramChannel

__all__ = ["TelegramChannel"]
