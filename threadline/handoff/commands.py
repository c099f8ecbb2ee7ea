"""`/human` hands the conversation to people; `/bot on` gives it back (see `desk`).

A member hands over their own conversation: a thread where the platform answers in one, a
direct message. Where the only conversation is the whole chat (a group without topics, a
Discord channel), handing it over quiets the bot for everyone there, so once admins are set
(`access.admins`) only an admin may.
"""

from __future__ import annotations

from threadline.commands.registry import Command, CommandReply, CommandRequest
from threadline.handoff.desk import HandoffDesk
from threadline.people.access import Access


def handoff_commands(desk: HandoffDesk, access: Access | None = None
                     ) -> tuple[Command, Command]:
    """The two commands, bound to this deployment's handoff desk and its admins."""
    admins = access or Access()

    async def human(request: CommandRequest) -> CommandReply:
        whole_chat = desk.scoped(request.message, request.channel).scope == "channel"
        if whole_chat and not await admins.is_admin(request.store, request.message):
            return CommandReply("Only an admin may hand this whole chat to people: it quiets "
                                "the bot for everyone here. Ask an admin, or write to the bot "
                                "in a direct message.", {"handoff": "refused"})
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
                    usage="on", acts_on_others=True))
