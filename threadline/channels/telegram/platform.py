"""Telegram as a platform: its `channels:` settings, its channel, its starter config."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from threadline.channels.platform import ChannelContext, LiveReplySettings, Platform
from threadline.channels.telegram.channel import TelegramChannel


class TelegramSettings(LiveReplySettings):
    """One bot token; `base_url` points the Bot API at a proxy or a local Bot API server."""

    secret_fields = frozenset({"token", "webhook_secret_token"})

    type: Literal["telegram"]
    """telegram: this entry is a Telegram channel."""
    mode: Literal["polling", "webhook"] = "polling"
    """polling: one long-polling connection per token (one process); webhook: Telegram posts to
    webhook_url (several replicas behind a load balancer)."""
    token: str
    """The bot's token from @BotFather, as ${TELEGRAM_BOT_TOKEN}."""
    webhook_url: str | None = None
    """The public HTTPS address Telegram posts updates to (webhook mode); it forwards to
    webhook_listen:webhook_port."""
    webhook_path: str = "/telegram"
    """The path the webhook server answers on."""
    webhook_listen: str = "127.0.0.1"
    """The address the webhook server listens on."""
    webhook_port: int = Field(default=8443, ge=0, le=65535)
    """The port the webhook server listens on (0: any free port, logged when bound)."""
    webhook_secret_token: str | None = None
    """A random string Telegram sends with every update, as ${TELEGRAM_WEBHOOK_SECRET} (webhook
    mode); other requests are refused."""
    base_url: str | None = None
    """The Bot API root, for a proxy or a local Bot API server (default: Telegram's)."""
    base_file_url: str | None = None
    """The file download root of that server (files are fetched from its host only, which
    may then be a private or loopback address; default: Telegram's)."""
    file_hosts: list[str] = Field(default_factory=list)
    """More hosts files may be fetched from, as host or host:port, if that server's file
    route redirects elsewhere (default: none)."""
    drop_pending_updates: bool = False
    """Skip the updates Telegram kept while the bot was stopped."""

    def problems(self) -> list[str]:
        if self.mode == "webhook" and not (self.webhook_url and self.webhook_secret_token):
            return ["mode webhook needs webhook_url and webhook_secret_token"]
        return []


def build(name: str, settings: TelegramSettings, context: ChannelContext) -> TelegramChannel:
    return TelegramChannel(
        name=name, token=settings.token, mode=settings.mode, webhook_url=settings.webhook_url,
        webhook_path=settings.webhook_path, webhook_listen=settings.webhook_listen,
        webhook_port=settings.webhook_port, webhook_secret_token=settings.webhook_secret_token,
        base_url=settings.base_url, base_file_url=settings.base_file_url,
        file_hosts=settings.file_hosts,
        drop_pending_updates=settings.drop_pending_updates, allow_bots=settings.allow_bots,
        streaming=settings.streaming, stream_interval=settings.stream_interval)


STARTER = """\
  telegram:
    # Set-up, step by step: docs/platforms/telegram.md
    type: telegram
    # polling: one long-polling connection per bot token (one replica).
    # webhook: Telegram posts to webhook_url (scales out behind a load balancer).
    mode: polling
    token: ${TELEGRAM_BOT_TOKEN}             # from @BotFather
    # webhook_url: https://bots.example.invalid/telegram
    # webhook_secret_token: ${TELEGRAM_WEBHOOK_SECRET}
    # webhook_listen: 0.0.0.0
    # webhook_port: 8443                     # 0: any free port (logged when bound)
    # A proxy or a local Bot API server (telegram-bot-api --local):
    # base_url: http://127.0.0.1:8081/bot
    # base_file_url: http://127.0.0.1:8081/file/bot
    streaming: true      # drafts in private chats, edits in groups, as the reply is written
    stream_interval: 1   # seconds between two changes of one chat (Telegram allows about 1/s)
"""

PLATFORM = Platform(name="telegram", settings=TelegramSettings, build=build, starter=STARTER)
