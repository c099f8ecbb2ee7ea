"""Discord application commands: the team's commands registered at start, received as turns.

Each command (`/forget`, `/summary`, `/agents`, ...) becomes a global slash command of the
application, with one optional `text` option when it takes arguments (its `usage`), and the
tree is synced (one bulk overwrite of the application's commands) once the gateway is ready.
An invocation arrives as INTERACTION_CREATE; `command_turn` makes it the turn
`/forget confirm`, which the pipeline answers like a typed command. The answer goes back
through the interaction (a deferred reply and its follow-up, seen only by the person who ran
it), the way Discord expects an application command to be answered. An answer's buttons
(`choice_view`) carry their command in the custom_id; a press is that command, sent by whoever
pressed it, answered like an invocation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import discord
from discord import app_commands

from threadline.channels.discord.normalize import CHANNEL_TYPE, DiscordLocation
from threadline.commands import Command, CommandCall, CommandChoice
from threadline.history.model import MessageMetadata, Participant, StoredMessage

# What the channel does with an invocation: (interaction, command name, its text).
CommandHandler = Callable[[discord.Interaction, str, str], Awaitable[None]]
# custom_id prefix of a command answer's buttons; the rest is the command a press sends.
CHOICE_PREFIX = "threadline:"


def choice_view(choices: Sequence[CommandChoice]) -> discord.ui.View:
    """A button per choice; a press comes back as an interaction with the choice's command
    in its custom_id (`pressed_command`), handled by the channel, so it works after a restart
    too (the view itself is not kept)."""
    view = discord.ui.View(timeout=None)
    for choice in choices:
        view.add_item(discord.ui.Button(label=choice.label, style=discord.ButtonStyle.danger,
                                        custom_id=f"{CHOICE_PREFIX}{choice.command}"[:100]))
    return view


def pressed_command(interaction: discord.Interaction) -> CommandCall | None:
    """The command a pressed button of ours sends, or None for any other interaction."""
    if interaction.type is not discord.InteractionType.component or interaction.data is None:
        return None
    custom_id = str(interaction.data.get("custom_id") or "")
    if not custom_id.startswith(CHOICE_PREFIX):
        return None
    return CommandCall.parse(custom_id.removeprefix(CHOICE_PREFIX))


def command_tree(client: discord.Client, commands: Sequence[Command],
                 on_command: CommandHandler) -> app_commands.CommandTree[discord.Client]:
    """The client's command tree holding `commands`, each calling `on_command`."""
    tree: app_commands.CommandTree[discord.Client] = app_commands.CommandTree(client)
    for command in commands:
        tree.add_command(_app_command(command, on_command))
    return tree


def _app_command(command: Command, on_command: CommandHandler
                 ) -> app_commands.Command[Any, ..., None]:
    name = command.name

    async def bare(interaction: discord.Interaction) -> None:
        await on_command(interaction, name, "")

    @app_commands.describe(text=command.usage or "what follows the command")
    async def with_text(interaction: discord.Interaction, text: str | None = None) -> None:
        await on_command(interaction, name, text or "")

    return app_commands.Command(name=name, description=command.description,
                                callback=with_text if command.usage else bare)


def command_turn(interaction: discord.Interaction, *, name: str, text: str,
                 location: DiscordLocation) -> StoredMessage:
    """The inbound turn for one command invocation (`/name text`).

    An invocation is no message: it has no message id to reply to, and its interaction id
    (a snowflake, unique like a message id) names the turn.
    """
    user = interaction.user
    return StoredMessage(
        id=f"{CHANNEL_TYPE}:interaction:{interaction.id}",
        conversation_id=location.conversation_id,
        participant=Participant(kind="user", id=str(user.id), display_name=user.display_name),
        content=f"/{name} {text}".strip(),
        timestamp=interaction.created_at,
        scope=location.scope,
        metadata=MessageMetadata(
            channel_type=CHANNEL_TYPE, channel_name=location.channel_name,
            channel_id=location.channel_id, thread_id=location.thread_id,
            extra={"application_command": name},
        ),
    )
