"""The feedback buttons under each agent reply: a stage that, once a turn's replies are
posted, asks the channel to put 👍 and 👎 under each (`Channel.offer_feedback`), in the
platform's own form (Slack's feedback buttons, a Telegram inline keyboard, Discord buttons).

It wraps the answer, so it sees every reply of the turn with the platform ids it was posted
as, hand-offs included; commands are claimed before it and get none. Adding the buttons is an
edit of a message already posted: when the platform refuses it, the reply stands without them
and the refusal is logged, never the turn's failure.
"""

from __future__ import annotations

from collections.abc import Collection

import structlog

from threadline.commands import CommandChoice
from threadline.errors import ChannelError
from threadline.feedback.command import NAME
from threadline.stages import Next, Turn
from threadline.turn import AgentResult

log = structlog.get_logger("threadline.feedback")


def feedback_choices(platform_id: str) -> tuple[CommandChoice, CommandChoice]:
    """The two buttons of a reply posted as `platform_id` (its first message's id)."""
    return (CommandChoice("👍", f"/{NAME} up {platform_id}"),
            CommandChoice("👎", f"/{NAME} down {platform_id}"))


class OfferFeedback:
    """The stage: replies of `agents` (all when empty) get the buttons once posted."""

    def __init__(self, *, agents: Collection[str] = ()) -> None:
        self.agents = frozenset(agents)

    async def __call__(self, turn: Turn, call_next: Next) -> list[AgentResult]:
        results = await call_next(turn)
        channel = turn.attachment.channel
        if channel is None:
            return results
        for result in results:
            if not result.delivered_ids or result.outbound is None or (
                    self.agents and result.agent_name not in self.agents):
                continue
            bound = turn.log.bind(agent=result.agent_name, reply_id=result.outbound.id)
            try:
                shown = await channel.offer_feedback(
                    result.outbound, result.delivered_ids,
                    feedback_choices(result.delivered_ids[0]))
            except ChannelError as exc:
                bound.warning("feedback.not_offered", error=str(exc),
                              outcome="the reply stands without feedback buttons")
                continue
            if shown:
                bound.debug("feedback.offered")
        return results
