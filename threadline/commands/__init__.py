"""Commands people send to the bots; see `registry` (how) and `builtin` (which)."""

from threadline.commands.builtin import BUILTIN_COMMANDS
from threadline.commands.registry import (
    Command,
    CommandCall,
    CommandChoice,
    CommandHandler,
    CommandRegistry,
    CommandReply,
    CommandRequest,
)


def default_commands() -> CommandRegistry:
    """A registry with the built-in commands (`/forget`, `/summary`, `/agents`)."""
    return CommandRegistry(BUILTIN_COMMANDS)


__all__ = ["BUILTIN_COMMANDS", "Command", "CommandCall", "CommandChoice", "CommandHandler",
           "CommandRegistry", "CommandReply", "CommandRequest", "default_commands"]
