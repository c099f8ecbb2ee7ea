"""Commands people send to the bots; see `registry` (how) and `builtin` (which).

Data and handlers that read the history: below the channels (which offer the commands on their
platforms) and the turn pipeline (which answers them). A team's default set, with a person's
`/forget-me` from `threadline.people`, is `threadline.team.default_commands`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from threadline.plugs import lazy_exports

if TYPE_CHECKING:
    from threadline.commands.builtin import BUILTIN_COMMANDS
    from threadline.commands.registry import (
        Command,
        CommandAgent,
        CommandCall,
        CommandChoice,
        CommandHandler,
        CommandRegistry,
        CommandReply,
        CommandRequest,
    )

__all__ = ["BUILTIN_COMMANDS", "Command", "CommandAgent", "CommandCall", "CommandChoice",
           "CommandHandler", "CommandRegistry", "CommandReply", "CommandRequest"]

__getattr__ = lazy_exports(__name__, {
    "BUILTIN_COMMANDS": "threadline.commands.builtin",
    "Command": "threadline.commands.registry",
    "CommandAgent": "threadline.commands.registry",
    "CommandCall": "threadline.commands.registry",
    "CommandChoice": "threadline.commands.registry",
    "CommandHandler": "threadline.commands.registry",
    "CommandRegistry": "threadline.commands.registry",
    "CommandReply": "threadline.commands.registry",
    "CommandRequest": "threadline.commands.registry",
})
