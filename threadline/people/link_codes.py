"""Linking one's own identities with a one-time code, with both of them agreeing.

    /link (or "link my account") in a DM    the bot gives a code (posted; kept only masked)
    the code, said in a DM on another       the bot asks there, with Link and Refuse buttons,
    account (or `/link CODE`)               whether to link with the code's owner
    Link (`/link accept ID`) there          the code's owner is asked in their own DM
    Link (`/link accept ID`) by the owner   the two become one person; both are told
    Refuse (`/link refuse ID`), or silence  nothing is linked
    /unlink, on either account              this account stands alone again

So a code someone else got hold of (over a shoulder, a screenshot, or by talking its owner
into typing theirs) links nothing without its owner's yes, and a victim talked into sending an
attacker's code links nothing without her own yes, given after being told whose account it
is and what it would see. Commands are answered by the turn pipeline, never by a model. A
code never reaches any store: `seal_link_codes` masks every code in an inbound turn's text as
the pipeline receives it (before the inbox, the history, the outbox, the ledger or a reply
record sees it), keeping only its hash for `/link`; the answer that gives a code is posted
with it and kept masked (`CommandReply.private_text`). Wrong codes are counted per identity
(`threadline.people.link_requests`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import timedelta

from threadline.commands.registry import (
    Command,
    CommandChoice,
    CommandReply,
    CommandRequest,
    Origin,
)
from threadline.history.model import StoredMessage, utc_now
from threadline.history.speakers import identity_of
from threadline.people.directory import CODE_MINUTES, code_hash, people_for
from threadline.people.link_requests import MAX_WRONG_CODES, LinkRequest, link_requests_for

NAME = "link"
_CODE = r"TL-[A-Z0-9]{4}-[A-Z0-9]{4}"
_ANY_CODE = re.compile(rf"\b{_CODE}\b", re.IGNORECASE)
# A message that is a code alone, or `/link CODE`: a redemption.
_REDEMPTION = re.compile(rf"^\s*(?:/link(?:@\S+)?\s+)?({_CODE})\s*[.!]?\s*$", re.IGNORECASE)
MASKED = "TL-****-****"
CODE_KEY = "link_code"  # metadata.extra: the hash of the code a redemption said
PLAIN = re.compile(r"^\s*(?:link my account|TL-\*{4}-\*{4})\s*[.!]?\s*$", re.IGNORECASE)


def mask_link_codes(text: str) -> str:
    """`text` with every link code in it masked."""
    return _ANY_CODE.sub(MASKED, text) if "-" in text else text


def seal_link_codes(message: StoredMessage) -> StoredMessage:
    """The turn with every link code masked; a redemption keeps the code's hash (see the
    module docstring)."""
    if "-" not in message.content or not _ANY_CODE.search(message.content):
        return message
    extra = dict(message.metadata.extra)
    redemption = _REDEMPTION.match(message.content)
    if redemption is not None:
        extra[CODE_KEY] = code_hash(redemption.group(1))
    return replace(message, content=mask_link_codes(message.content),
                   metadata=replace(message.metadata, extra=extra))


def link_command(*, minutes: float = CODE_MINUTES) -> Command:
    """`/link`: codes given in `minutes`-long windows (`people.code_minutes`)."""

    async def handler(request: CommandRequest) -> CommandReply:
        return await _link(request, minutes)

    return Command(NAME, "Link your accounts on different platforms (both must agree)",
                   handler, usage="[CODE]", plain=PLAIN)


async def _link(request: CommandRequest, minutes: float) -> CommandReply:
    message = request.message
    identity = identity_of(message)
    if identity is None:
        return CommandReply("I cannot tell which account this is, so I cannot link it.",
                            {NAME: "unknown_account"})
    hashed = message.metadata.extra.get(CODE_KEY)
    words = request.words
    if isinstance(hashed, str):
        return await _redeem(request, identity, hashed)
    if len(words) == 2 and words[0] in ("accept", "refuse"):
        return await _answer(request, identity, accept=words[0] == "accept",
                             request_id=words[1])
    if message.scope != "dm":
        return CommandReply("Ask me for a link code in a direct message, where nobody else "
                            "reads it.", {NAME: "not_in_dm"})
    origin = Origin.of(message, request.channel)
    code = await people_for(request.store).issue_code(
        identity, minutes=minutes, origin=origin.to_json() if origin else None)
    text = ("Your link code is {code}. Send it to me in a direct message on your other "
            f"account within {minutes:g} minutes; I will then ask you here to confirm before "
            "anything is linked. It works once; never show it to anyone.")
    return CommandReply(text.format(code=MASKED), {NAME: "code_given"},
                        private_text=text.format(code=code))


async def _redeem(request: CommandRequest, identity: str, hashed: str) -> CommandReply:
    message = request.message
    people, pending = people_for(request.store), link_requests_for(request.store)
    if message.scope != "dm":
        await people.take_code(hashed)  # said where others read it: it is spent
        return CommandReply("That code was said where others can read it, so it no longer "
                            "works. Ask for a new one with /link in a direct message.",
                            {NAME: "code_burnt"})
    if await pending.wrong_codes(identity) >= MAX_WRONG_CODES:
        return CommandReply("Too many wrong codes from this account; try again in an hour.",
                            {NAME: "too_many_guesses"})
    issued = await people.take_code(hashed)
    if issued is None:
        await pending.said_wrong_code(identity)
        return CommandReply("That code is unknown, used or expired. Ask for a new one with "
                            "/link on your other account.", {NAME: "unknown_code"})
    if issued.identity == identity:
        return CommandReply("That is this account's own code: send it from your other "
                            "account.", {NAME: "own_code"})
    asked = await pending.open(issuer=issued.identity, redeemer=identity,
                               issuer_origin=Origin.from_json(issued.origin),
                               redeemer_origin=Origin.of(message, request.channel),
                               expires=issued.expires, awaiting=identity)
    question = (f"That code was made by the account {asked.issuer}. Link it with this one as "
                "the same person? Whoever uses it would then see what you told me here, and "
                "erasing either erases both. Only press Link if it is your own account; if "
                "someone gave you this code, press Refuse. The account's owner will be asked "
                f"too. (Expires in {_minutes_left(asked)} minutes.)")
    return CommandReply(question, {NAME: "asked_redeemer"}, choices=_choices(asked))


def _minutes_left(asked: LinkRequest) -> int:
    return max(1, round((asked.expires - utc_now()) / timedelta(minutes=1)))


def _choices(asked: LinkRequest) -> tuple[CommandChoice, ...]:
    return (CommandChoice("Link", f"/link accept {asked.request_id}"),
            CommandChoice("Refuse", f"/link refuse {asked.request_id}"))


async def _answer(request: CommandRequest, identity: str, *, accept: bool,
                  request_id: str) -> CommandReply:
    pending = link_requests_for(request.store)
    asked = await pending.take(request_id, identity)
    if asked is None:
        return CommandReply("Nothing to confirm: that link request is unknown, already "
                            "answered or expired.", {NAME: "no_request"})
    if identity == asked.redeemer:
        return await _redeemer_answered(request, asked, accept=accept)
    if not accept:
        await _tell(request, asked.redeemer_origin, "The account whose code you sent declined "
                    "to link. Nothing is linked.", tag=f"link-{request_id}-refused")
        return CommandReply(f"Refused: {asked.redeemer} is not linked to you.",
                            {NAME: "refused"})
    await people_for(request.store).link([asked.issuer, asked.redeemer], linked_by="code")
    await _tell(request, asked.redeemer_origin, f"Linked: this account and {asked.issuer} are "
                "now one person to me; what you told me on one I can recall on the other. "
                "Send /unlink to undo it.", tag=f"link-{request_id}-linked")
    return CommandReply(f"Linked: this account and {asked.redeemer} are now one person to me. "
                        "Send /unlink to undo it.", {NAME: "linked"})


async def _redeemer_answered(request: CommandRequest, asked: LinkRequest, *,
                             accept: bool) -> CommandReply:
    """The one who said the code answered; on a yes, the code's owner is asked in turn."""
    if not accept:
        return CommandReply(f"Refused: this account is not linked to {asked.issuer}.",
                            {NAME: "refused"})
    pending = link_requests_for(request.store)
    owners = await pending.open(issuer=asked.issuer, redeemer=asked.redeemer,
                                issuer_origin=asked.issuer_origin,
                                redeemer_origin=asked.redeemer_origin, expires=asked.expires,
                                awaiting=asked.issuer)
    minutes = _minutes_left(owners)
    question = (f"The account {owners.redeemer} just sent me your link code. Link it with this "
                "one as the same person? It would then see what you told me here, and erasing "
                f"either erases both. If that was not you, press Refuse. (Expires in {minutes} "
                "minutes.)")
    posted = (owners.issuer_origin is not None and request.notify is not None
              and await request.notify(owners.issuer_origin, question, choices=_choices(owners),
                                       tag=f"link-{owners.request_id}"))
    if not posted:
        await pending.take(owners.request_id, owners.issuer)
        return CommandReply("I could not reach the account that gave this code to ask it, so "
                            "nothing is linked. Ask for a new code there.",
                            {NAME: "owner_unreachable"})
    return CommandReply("I asked the account that gave this code to confirm. Nothing is "
                        f"linked unless it agrees within {minutes} minutes; I will tell you "
                        "here.", {NAME: "asked_owner"})


async def _tell(request: CommandRequest, origin: Origin | None, text: str, *, tag: str) -> None:
    if origin is not None and request.notify is not None:
        await request.notify(origin, text, tag=tag)


async def unlink(request: CommandRequest) -> CommandReply:
    """`/unlink`: the sender's account stands alone again."""
    identity = identity_of(request.message)
    if identity is None or not await people_for(request.store).unlink(identity):
        return CommandReply("This account is not linked to any other.", {"unlink": "none"})
    return CommandReply("Unlinked: I now know this account on its own; what you tell me here "
                        "is no longer recalled on your other accounts, nor theirs here.",
                        {"unlink": "done"})


UNLINK = Command("unlink", "Stop linking this account with your other accounts", unlink)
