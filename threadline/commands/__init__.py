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
    """A registry with the built-in commands (`/forget`, `/summary`, `/agents`) and a person's
    `/forget-me` and `/unlink` (`threadline.people`); `/link` is added where link codes are
    on (`threadline.people.link_codes.link_command`)."""
    # Imported here: those modules build on this package's registry.
    from threadline.people.forget_me import FORGET_ME
    from threadline.people.link_codes import UNLINK

    return CommandRegistry((*BUILTIN_COMMANDS, FORGET_ME, UNLINK))


__all__ = ["BUILTIN_COMMANDS", "Command", "CommandCall", "CommandChoice", "CommandHandler",
           "CommandRegistry", "CommandReply", "CommandRequest", "default_commands"]
