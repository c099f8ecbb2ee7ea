"""The web console of reply records: `console_app` for the ops server, `standalone_app` alone."""

from threadline.inspector.console.server import PREFIX, console_app, standalone_app

__all__ = ["PREFIX", "console_app", "standalone_app"]
