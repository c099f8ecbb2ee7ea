"""The web: a chat widget for websites, served by `threadline run` (needs `threadline[web]`)."""

from threadline.channels.web.channel import WebChannel

__all__ = ["WebChannel"]
