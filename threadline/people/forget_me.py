"""`/forget-me`: a person erases everything kept about them, from the chat (asks first).

The same as `threadline people forget` for whoever sends it, with every identity linked to
them (`forget_speaker`). It asks first; the same person confirms with `/forget-me confirm` (or
the button under the question) within the built-in commands' `CONFIRM_WITHIN`. The question and
the answer hold counts, never the person's words; the question itself is one of the turns the
confirmation erases, with the command that asked.
"""

from __future__ import annotations

from threadline.commands.builtin import CONFIRM_WITHIN, CONFIRM_WORD, open_question
from threadline.commands.registry import Command, CommandChoice, CommandReply, CommandRequest
from threadline.people.erase import forget_speaker

NAME = "forget-me"


async def forget_me(request: CommandRequest) -> CommandReply:
    """Ask, then (on `/forget-me confirm`) erase the sender everywhere."""
    message = request.message
    if CONFIRM_WORD not in request.words:
        minutes = int(CONFIRM_WITHIN.total_seconds() // 60)
        return CommandReply(
            "This erases everything kept about you, in every conversation the agents here "
            "keep (and on the accounts linked to this one): what you said, the replies to you "
            "and the summaries that covered them. It cannot be undone. To go ahead, send "
            f"/{NAME} {CONFIRM_WORD} within {minutes} minutes.",
            {NAME: "asked", "asked_by": message.participant.id},
            choices=(CommandChoice("Erase me", f"/{NAME} {CONFIRM_WORD}"),))
    if await open_question(request, NAME) is None:
        return CommandReply(f"Nothing to confirm: send /{NAME} first (a request holds for "
                            f"{int(CONFIRM_WITHIN.total_seconds() // 60)} minutes).",
                            {NAME: "unconfirmed"})
    counts = await forget_speaker(request.store, message, outbox=request.outbox)
    return CommandReply(
        f"Done: erased {counts['turns']} of your messages and {counts['replies']} replies to "
        f"them, in every conversation kept here.", {NAME: "done", **counts})


FORGET_ME = Command(NAME, "Erase everything kept about you, everywhere (asks first)",
                    forget_me, usage="[confirm]")
