"""The web as a platform: its `channels:` settings, its channel, its starter config."""

from __future__ import annotations

from threadline.channels.platform import ChannelContext, Platform
from threadline.channels.web.channel import WebChannel
from threadline.channels.web.settings import WebSettings

__all__ = ["PLATFORM"]


def build(name: str, settings: WebSettings, context: ChannelContext) -> WebChannel:
    return WebChannel(name=name, settings=settings, history=context.history)


STARTER = """\
  web:
    # Set-up, step by step: docs/platforms/web.md (behind a reverse proxy too)
    # On a page: <script src="http://127.0.0.1:8790/widget.js" async></script>
    type: web
    listen: 127.0.0.1
    port: 8790                              # 0: any free port (logged when bound)
    # public_url: https://chat.example.com  # where browsers reach it, behind a proxy
    origins: []                             # sites that embed it: [https://www.example.com]
    session_secret: ${WEB_SESSION_SECRET}   # 32 random bytes or more
    # identity_secret: ${WEB_IDENTITY_SECRET}  # your site signs logged-in customers (JWT)
    streaming: true
"""

PLATFORM = Platform(name="web", settings=WebSettings, build=build, starter=STARTER)
