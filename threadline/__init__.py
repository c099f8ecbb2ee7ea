"""Threadline: LLM agents as bots in Slack, Telegram and Discord, sharing one persistent history.

    from threadline import Threadline     # the app `threadline run` builds, as a library
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Threadline", "__version__"]

if TYPE_CHECKING:
    from threadline.app import Threadline


def __getattr__(name: str) -> Any:
    """`Threadline` is imported when asked for: `import threadline.x` stays light."""
    if name == "Threadline":
        from threadline.app import Threadline

        return Threadline
    raise AttributeError(f"module 'threadline' has no attribute {name!r}")
