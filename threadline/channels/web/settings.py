"""The `channels:` settings of a web channel (`type: web`); see docs/platforms/web.md."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field

from threadline.channels.platform import LiveReplySettings

_ORIGIN = re.compile(r"https?://[A-Za-z0-9.\-\[\]:]+")


class WebSettings(LiveReplySettings):
    """A chat widget for websites, served on its own port; see docs/platforms/web.md."""

    secret_fields = frozenset({"session_secret", "identity_secret"})

    type: Literal["web"]
    """web: this entry is the website chat widget."""
    listen: str = "127.0.0.1"
    """The address the widget's server listens on (0.0.0.0: every interface)."""
    port: int = Field(default=8790, ge=0, le=65535)
    """The port the widget's server listens on (0: any free port, logged when bound)."""
    public_url: str | None = None
    """Where browsers reach this server (https://chat.example.com behind a reverse proxy);
    default: the address it listens on."""
    origins: list[str] = Field(default_factory=list)
    """The sites whose pages may embed the widget, as scheme://host[:port] (its own chat page
    always may)."""
    session_secret: str
    """Signs visitors' session cookies, as ${WEB_SESSION_SECRET}: 32 random bytes or more;
    changing it starts every visitor afresh."""
    identity_secret: str | None = None
    """The secret a site signs its customers' identities with (JWT, HS256: sub, aud, exp), as
    ${WEB_IDENTITY_SECRET}; unset: every visitor is anonymous."""
    session_days: float = Field(default=30.0, gt=0)
    """How long an anonymous visitor's conversation is kept for them across page loads."""
    max_text_chars: int = Field(default=4000, ge=1)
    """The longest message a visitor may send, in characters."""
    max_files: int = Field(default=4, ge=0)
    """The most files one message may bring (their size limit is files.max_file_mb)."""
    messages_per_minute: int = Field(default=20, ge=1)
    """Messages one visitor may send per minute, in bursts of as many."""
    requests_per_minute: int = Field(default=240, ge=1)
    """Requests one address may make per minute to the widget's server, every route."""
    history_turns: int = Field(default=50, ge=1)
    """Turns a page that opens shows of the conversation so far."""
    trust_proxy: bool = False
    """Read the visitor's address and scheme from X-Forwarded-For / X-Forwarded-Proto (only
    behind a reverse proxy that sets them)."""
    title: str = "Chat with us"
    """The chat panel's heading."""
    stream_interval: float = Field(default=0.05, gt=0)
    """The least time in seconds between two updates of a reply being written."""

    def problems(self) -> list[str]:
        bad = [o for o in self.origins if not _ORIGIN.fullmatch(o.rstrip("/"))]
        if bad:
            return [f"origins {bad}: write each as scheme://host[:port], without a path "
                    "(for example https://www.example.com)"]
        short = [name for name, least in (("session_secret", 16), ("identity_secret", 32))
                 if len(getattr(self, name) or "x" * least) < least]
        return [f"{name} is too short to sign with: use 32 random bytes or more (python -c "
                "'import secrets; print(secrets.token_urlsafe(32))')" for name in short]
