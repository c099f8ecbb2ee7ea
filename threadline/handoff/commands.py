"""`/human` hands the conversation to people; `/bot on` gives it back (see `desk`)."""

from __future__ import annotations

from threadline.commands.registry import Command, CommandReply, CommandRequest
from threadline.handoff.desk import HandoffDesk


def handoff_commands(desk: HandoffDesk) -> tuple[Command, Command]:
    """The two commands, bound to this deployment's handoff desk."""

    async def human(request: CommandRequest) -> CommandReply:
        said = await desk.hand_off(request.message, channel=request.channel,
                                   reason=request.call.args)
        return CommandReply(said, {"handoff": "started"})

    async def bot(request: CommandRequest) -> CommandReply:
        if request.words != ("on",):
            return CommandReply("Write /bot on to have the bot answer here again.")
        if await desk.give_back(request.message.conversation_id):
            return CommandReply("The bot answers here again.", {"handoff": "ended"})
        return CommandReply("The bot already answers here (nobody handed it to people).")

    return (Command("human", "Hand this conversation to a person (the bot stays quiet)", human,
                    usage="[why]"),
            Command("bot", "Give this conversation back to the bot: /bot on", bot,
                    usage="on"))
