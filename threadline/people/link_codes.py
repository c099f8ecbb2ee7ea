"""Linking one's own identities with a one-time code, answered without the model.

In a DM with the bot, `/link` (or "link my account") gets a code; said alone in a DM with the
bot on another platform before it expires, the code links the two identities. Both messages are
recognised here by their whole text, before any model call, and answered with a fixed reply:
the model never sees a code being checked, and cannot be talked into linking anyone. Codes are
given and taken in DMs only, where nobody else reads them; a code is single-use and kept only
as a hash (`threadline.people.directory`).
"""

from __future__ import annotations

import re

from threadline.history.beside import parts_beside
from threadline.history.speakers import identity_of
from threadline.interceptors.base import CallNext
from threadline.people.directory import CODE_MINUTES, PeopleDirectory
from threadline.turn import AgentResult, TurnContext

LINK_REQUEST = re.compile(r"^\s*(?:/link|link my account)\s*[.!]?\s*$", re.IGNORECASE)
LINK_CODE = re.compile(r"^\s*(TL-[A-Z0-9]{4}-[A-Z0-9]{4})\s*[.!]?\s*$", re.IGNORECASE)


class LinkCodeInterceptor:
    """Gives and redeems link codes in DMs (see the module docstring); anything else passes."""

    def __init__(self, *, minutes: float = CODE_MINUTES) -> None:
        self.minutes = minutes

    async def __call__(self, context: TurnContext, call_next: CallNext) -> AgentResult:
        message = context.inbound
        identity = identity_of(message)
        if message.scope != "dm" or identity is None:
            return await call_next()
        people: PeopleDirectory | None = parts_beside(context.store).people
        if people is None:  # the backend keeps no people directory (said at start)
            return await call_next()
        if LINK_REQUEST.match(message.content):
            code = await people.issue_code(identity, minutes=self.minutes)
            context.log.info("people.link_code_issued", minutes=self.minutes)
            return context.agent.reply_result(
                context, f"Your link code is {code}. Send it to me in a direct message on your "
                f"other account within {self.minutes:g} minutes to link the two; it works once.",
                stop_reason="link_code")
        found = LINK_CODE.match(message.content)
        if found is None:
            return await call_next()
        person_id = await people.redeem_code(found.group(1), identity)
        context.log.info("people.link_code_redeemed", linked=person_id is not None)
        text = ("Linked: I now know both accounts as you, and what you told me on one I can "
                "recall on the other." if person_id is not None else
                "That code is unknown, used or expired. Ask for a new one with /link on your "
                "other account.")
        return context.agent.reply_result(context, text, stop_reason="link_code")
