"""WhatsApp as a platform: its `channels:` settings, its channel, its starter config."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from threadline.channels.platform import ChannelContext, ChannelSettings, Platform
from threadline.channels.whatsapp.channel import WhatsAppChannel
from threadline.channels.whatsapp.graph import GRAPH_URL


class WhatsAppSettings(ChannelSettings):
    """One business phone number on the WhatsApp Cloud API, receiving by webhook."""

    secret_fields = frozenset({"access_token", "app_secret", "verify_token"})

    type: Literal["whatsapp"]
    """whatsapp: this entry is a WhatsApp Cloud API number."""
    phone_number_id: str
    """The number's id (WhatsApp Manager > API setup > Phone number ID), not the number."""
    access_token: str
    """A system user access token with whatsapp_business_messaging, as
    ${WHATSAPP_ACCESS_TOKEN}."""
    app_secret: str
    """The Meta app's secret (App settings > Basic), as ${WHATSAPP_APP_SECRET}; every webhook
    POST must be signed with it (X-Hub-Signature-256), others are refused."""
    verify_token: str
    """A random string, as ${WHATSAPP_VERIFY_TOKEN}, typed into the app's webhook settings too:
    Meta sends it when it checks the callback URL (hub.verify_token)."""
    webhook_path: str = "/whatsapp"
    """The path the webhook server answers on (the callback URL proxies to it)."""
    webhook_listen: str = "127.0.0.1"
    """The address the webhook server listens on."""
    webhook_port: int = Field(default=8444, ge=0, le=65535)
    """The port the webhook server listens on (0: any free port, logged when bound)."""
    graph_url: str = GRAPH_URL
    """The Graph API root, for a proxy or a test server (media is then fetched from its host
    too, which may be a private or loopback address; default: Meta's)."""
    window_template: str | None = None
    """An approved message template with one body parameter, sent instead of a free-form post
    to a customer silent for 24 hours (scheduled posts, follow-ups); unset: such posts are not
    sent, and the log and the conversation say why."""
    window_template_language: str = "en_US"
    """The language code the template was approved in."""
    typing: bool = True
    """Mark each message read and show the typing indicator while an agent answers it."""
    file_hosts: list[str] = Field(default_factory=list)
    """More hosts media may be fetched from, as host or host:port (default: WhatsApp's
    lookaside.fbsbx.com only)."""


def build(name: str, settings: WhatsAppSettings, context: ChannelContext) -> WhatsAppChannel:
    return WhatsAppChannel(
        name=name, phone_number_id=settings.phone_number_id,
        access_token=settings.access_token, app_secret=settings.app_secret,
        verify_token=settings.verify_token, webhook_path=settings.webhook_path,
        webhook_listen=settings.webhook_listen, webhook_port=settings.webhook_port,
        graph_url=settings.graph_url, window_template=settings.window_template,
        window_template_language=settings.window_template_language, typing=settings.typing,
        file_hosts=settings.file_hosts, agent_names=context.agents,
        history=context.history, delivery_statuses=context.delivery_statuses)


STARTER = """\
  whatsapp:
    # Set-up, step by step: docs/platforms/whatsapp.md
    type: whatsapp
    phone_number_id: "${WHATSAPP_PHONE_NUMBER_ID}"  # WhatsApp Manager > API setup
    access_token: ${WHATSAPP_ACCESS_TOKEN}          # a system user token
    app_secret: ${WHATSAPP_APP_SECRET}              # App settings > Basic: signs webhooks
    verify_token: ${WHATSAPP_VERIFY_TOKEN}          # any random string, also set at Meta
    # Meta posts to https://YOUR-HOST/whatsapp; your proxy forwards it here:
    webhook_listen: 127.0.0.1                       # 0.0.0.0 if the proxy is elsewhere
    webhook_port: 8444
    # Outside the 24-hour window only an approved template may be sent (one body parameter):
    # window_template: follow_up
    # window_template_language: en_US
"""

PLATFORM = Platform(name="whatsapp", settings=WhatsAppSettings, build=build, starter=STARTER)
