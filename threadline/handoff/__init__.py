"""Human handoff: a conversation handed to people, the bot quiet there until given back."""

from __future__ import annotations

from typing import TYPE_CHECKING

from threadline.plugs import lazy_exports

if TYPE_CHECKING:
    from threadline.handoff.book import Handoff, HandoffBook
    from threadline.handoff.commands import handoff_commands
    from threadline.handoff.desk import HandoffDesk, TeamDesk
    from threadline.handoff.tool import hand_off_tool

__all__ = ["Handoff", "HandoffBook", "HandoffDesk", "TeamDesk", "hand_off_tool",
           "handoff_commands"]

__getattr__ = lazy_exports(__name__, {
    "Handoff": "threadline.handoff.book",
    "HandoffBook": "threadline.handoff.book",
    "handoff_commands": "threadline.handoff.commands",
    "HandoffDesk": "threadline.handoff.desk",
    "TeamDesk": "threadline.handoff.desk",
    "hand_off_tool": "threadline.handoff.tool",
})
