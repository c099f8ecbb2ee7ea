"""Human handoff: a conversation handed to people, the bot quiet there until given back."""

from threadline.handoff.book import Handoff, HandoffBook
from threadline.handoff.commands import handoff_commands
from threadline.handoff.desk import HandoffDesk, TeamDesk
from threadline.handoff.tool import hand_off_tool

__all__ = ["Handoff", "HandoffBook", "HandoffDesk", "TeamDesk", "hand_off_tool",
           "handoff_commands"]
