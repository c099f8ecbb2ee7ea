"""Commands people send to the bots; see `registry` (how) and `builtin` (which).

Data and handlers that read the history: below the channels (which offer the commands on their
platforms) and the turn pipeline (which answers them). A team's default set, with a person's
`/forget-me` from `threadline.people`, is `threadline.team.default_commands`.
"""

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
