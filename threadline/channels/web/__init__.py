"""The web: a chat widget for websites, served by `threadline run` (needs `threadline[web]`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from threadline.plugs import lazy_exports

if TYPE_CHECKING:
    from threadline.channels.web.channel import WebChannel

__all__ = ["WebChannel"]

__getattr__ = lazy_exports(__name__, {"WebChannel": "threadline.channels.web.channel"})
