"""`/feedback up|down REPLY [why]`: what a feedback button sends as the person pressing it.

`REPLY` is the platform id of the reply's first message (the id the button carries: short
enough for Telegram's 64-byte callback data), looked up in the conversation the button was
pressed in, so a press can only rate a reply of that conversation. The press is answered in
words (privately where the platform can: Slack's response URL, Discord's ephemeral follow-up),
saying how to add a reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import structlog

from threadline.channels.base import FEEDBACK_COMMAND
from threadline.commands.registry import Command, CommandReply, CommandRequest
from threadline.feedback.votes import VOTES, FeedbackBook, Vote, VoteValue, with_reason
from threadline.history.model import utc_now
from threadline.history.speakers import identity_of

log = structlog.get_logger("threadline.feedback")

NAME = FEEDBACK_COMMAND
USAGE = "up|down REPLY [why]"

Counted = Callable[[Vote, VoteValue | None], None]  # a vote, and the one it replaced


def feedback_command(book: FeedbackBook, *, counted: Counted) -> Command:
    """The `/feedback` command, keeping votes in `book` and telling `counted` of each."""

    async def vote(request: CommandRequest) -> CommandReply:
        words = request.call.args.split()
        if len(words) < 2 or words[0].lower() not in VOTES:
            return CommandReply(f"Use /{NAME} {USAGE}, or the 👍 and 👎 buttons under a reply.")
        message = request.message
        voter = identity_of(message)
        reply = await request.store.find_by_platform_id(message.conversation_id, words[1])
        if voter is None or reply is None or reply.participant.kind != "agent" or (
                reply.is_command):
            return CommandReply("There is no agent reply with that id in this conversation; "
                                "use the buttons under the reply.")
        cast_vote = with_reason(Vote(
            reply_id=reply.id, conversation_id=reply.conversation_id,
            agent=reply.participant.id, voter=voter, vote=cast(VoteValue, words[0].lower()),
            voted_at=utc_now()), words[2:])
        earlier = await book.cast(cast_vote)
        counted(cast_vote, earlier)
        log.info("feedback.vote", conversation_id=reply.conversation_id, reply_id=reply.id,
                 agent=cast_vote.agent, vote=cast_vote.vote, changed_from=earlier,
                 with_reason=cast_vote.reason is not None)
        detail = {"feedback": cast_vote.vote, "reply": reply.id}
        thumb = "👍" if cast_vote.vote == "up" else "👎"
        if cast_vote.reason is not None:
            return CommandReply(f"Thanks: your {thumb} on {cast_vote.agent}'s reply and its "
                                "reason are kept.", detail)
        return CommandReply(f"Thanks: your {thumb} on {cast_vote.agent}'s reply is kept. To say "
                            f"why: /{NAME} {cast_vote.vote} {words[1]} your reason", detail)

    return Command(NAME, "Rate an agent's reply (the buttons under it send this)", vote,
                   usage=USAGE)
