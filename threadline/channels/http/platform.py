"""The `http` platform: its `channels:` settings, its channel, its starter config."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from threadline.channels.http.callback import CallbackPolicy
from threadline.channels.http.channel import HttpChannel
from threadline.channels.http.outbox import ReplyOutbox
from threadline.channels.platform import ChannelContext, ChannelSettings, Platform


class HttpSettings(ChannelSettings):
    """A webhook endpoint for systems without an SDK (docs/platforms/http.md)."""

    secret_fields = frozenset({"secret"})

    type: Literal["http"]
    """http: this entry takes signed webhooks and answers to a callback or by fetch."""
    secret: str
    """The shared secret requests and replies are signed with (HMAC-SHA256), as
    ${THREADLINE_HTTP_SECRET}; `threadline check` warns below 24 characters."""
    host: str = "127.0.0.1"
    """The address the webhook endpoint listens on (put TLS in front)."""
    port: int = Field(default=8090, ge=0, le=65535)
    """The port it listens on (0: any free port, logged when bound)."""
    path: str = "/http/messages"
    """Where messages are posted; replies are fetched from PATH/replies."""
    callback_url: str | None = None
    """Where replies are posted, signed (unset: the caller fetches them from PATH/replies)."""
    replay_window_seconds: int = Field(default=300, ge=5, le=3600)
    """How far a request's timestamp may be from this machine's clock."""
    max_body_bytes: int = Field(default=262_144, ge=1024)
    """The largest request body taken (413 above)."""
    max_text_chars: int = Field(default=16_000, ge=1)
    """The longest message text taken (413 above)."""
    keep_replies_days: float = Field(default=30.0, gt=0)
    """How long replies stay readable by fetch: then those the callback took (or, without a
    callback, all) are deleted; a reply waiting for a callback that is down is never deleted."""
    callback_timeout_seconds: float = Field(default=10.0, gt=0)
    """How long one post to the callback may take before it counts as failed."""
    retry_initial_seconds: float = Field(default=1.0, gt=0)
    """The wait after a reply's first failed post; it doubles with each failure."""
    retry_max_seconds: float = Field(default=300.0, gt=0)
    """The longest wait between two posts of one reply (it is retried until delivered)."""

    @field_validator("path")
    @classmethod
    def _path(cls, path: str) -> str:
        if not path.startswith("/"):
            raise ValueError(f"must start with '/', got {path!r}")
        return path

    @field_validator("callback_url")
    @classmethod
    def _callback(cls, url: str | None) -> str | None:
        if url is not None and not url.startswith(("http://", "https://")):
            raise ValueError(f"must be an http:// or https:// URL, got {url!r}")
        return url


def build(name: str, settings: HttpSettings, context: ChannelContext) -> HttpChannel:
    outbox = context.platform_part
    callback = None if settings.callback_url is None else CallbackPolicy(
        url=settings.callback_url, secret=settings.secret,
        timeout_seconds=settings.callback_timeout_seconds,
        retry_initial_seconds=settings.retry_initial_seconds,
        retry_max_seconds=settings.retry_max_seconds)
    return HttpChannel(
        name=name, secret=settings.secret, host=settings.host, port=settings.port,
        path=settings.path, callback=callback,
        outbox=outbox if isinstance(outbox, ReplyOutbox) else None,
        replay_window_seconds=settings.replay_window_seconds,
        max_body_bytes=settings.max_body_bytes, max_text_chars=settings.max_text_chars,
        keep_replies_seconds=settings.keep_replies_days * 86_400,
        allow_bots=settings.allow_bots)


STARTER = """\
  http:
    # Set-up, step by step: docs/platforms/http.md (the protocol, with a worked curl
    # example).
    type: http
    secret: ${THREADLINE_HTTP_SECRET}   # shared with the caller; make one: openssl rand -hex 32
    host: 127.0.0.1                     # 0.0.0.0 to take requests from other machines (TLS!)
    port: 8090                          # 0: any free port (logged when bound)
    path: /http/messages                # replies can also be fetched from PATH/replies
    # callback_url: https://example.invalid/threadline/replies  # replies posted here, signed
    # replay_window_seconds: 300        # how old a signed request may be
    # retry_max_seconds: 300            # a reply whose callback is down is retried, kept
"""

PLATFORM = Platform(name="http", settings=HttpSettings, build=build, starter=STARTER)
