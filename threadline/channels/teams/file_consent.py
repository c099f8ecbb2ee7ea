"""Sending the files an agent's tools made, the one way Teams lets a bot: ask, then upload.

A Teams bot cannot attach a file to a message. In a 1:1 chat it posts a FileConsentCard (the
file's name, size and a description, with Allow / Decline); Allow arrives as a
`fileConsent/invoke` whose `uploadInfo` names an upload URL in the person's OneDrive. The bot
PUTs the bytes there in one request (`Content-Range: bytes 0-(N-1)/N`), posts a FileInfoCard
pointing at the uploaded file, and answers the invoke 200. Decline is answered 200 and the
person is told, in words, that the file was not sent. Group chats and channels have no consent
cards: the reply says the file was not sent there, and why (`not_sent_here`).

Between the card and the press the process may restart: the card carries what the press needs
(`acceptContext`: an offer id, the file's hash and name, the conversation), and the bytes stay
in the file store under their hash (the reply turn names them, so they are kept). Once
uploaded, a marker is kept in the file store too (`_marker`: bytes naming the offer, under
their own hash), so an accept delivered again uploads nothing, across restarts and replicas.
The upload URL comes with the invoke, so it is held to the channel's file hosts
(`fetch_policy.put_file`: `*.sharepoint.com` plus `file_hosts`, never a local address unless
configured); a press from another conversation, or for bytes no longer kept, is answered in
words.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp
import structlog
from microsoft_teams.api import InvokeResponse
from microsoft_teams.api.activities.message import MessageActivityInput
from microsoft_teams.api.models.attachment import Attachment

from threadline.channels.fetch_policy import FileHosts, put_file
from threadline.channels.teams.activities import place_of
from threadline.errors import FileRefusedError
from threadline.history.files import TurnFile
from threadline.history.model import StoredMessage

if TYPE_CHECKING:
    from threadline.channels.teams.channel import TeamsChannel

log = structlog.get_logger("threadline.channels.teams")

CONSENT_CARD = "application/vnd.microsoft.teams.card.file.consent"
INFO_CARD = "application/vnd.microsoft.teams.card.file.info"


def not_sent_here(file: TurnFile) -> str:
    """What a group chat or channel is told instead of a file (Teams has no consent there)."""
    return (f"{file.name} was made, but Teams lets a bot send files only in a 1:1 chat, so it "
            "is not sent here; ask me for it in a chat with me.")


def offer_id(inbound: StoredMessage, file: TurnFile) -> str:
    """The same id for the same file offered in answer to the same turn."""
    return hashlib.sha256(f"{inbound.id}\x1f{file.sha256}".encode()).hexdigest()[:32]


def consent_card(inbound: StoredMessage, file: TurnFile, size: int) -> Attachment:
    """The FileConsentCard offering `file` (its context is all an accept needs)."""
    context = {"offer": offer_id(inbound, file), "sha256": file.sha256, "name": file.name,
               "conversation": inbound.conversation_id}
    return Attachment(content_type=CONSENT_CARD, name=file.name, content={
        "description": f"{file.name}, made for you by the agent", "sizeInBytes": size,
        "acceptContext": context, "declineContext": context})


@dataclass(frozen=True, slots=True)
class Press:
    """An Allow or Decline pressed on one of our consent cards, as the invoke says it."""

    accepted: bool
    offer: str
    sha256: str
    name: str
    conversation_id: str  # where the card was offered (from its context)
    upload: Mapping[str, Any]  # uploadInfo (accept only)


def press_of(activity: Mapping[str, Any]) -> Press:
    """The press a `fileConsent/invoke` carries (raises on one missing its parts)."""
    value = activity["value"]
    context = value.get("context") or {}
    action = str(value.get("action") or "")
    if action not in ("accept", "decline"):
        raise ValueError(f"a file consent action {action!r} is neither accept nor decline")
    upload = value.get("uploadInfo") or {}
    if action == "accept" and not upload.get("uploadUrl"):
        raise ValueError("an accepted file consent without an upload URL")
    return Press(accepted=action == "accept", offer=str(context["offer"]),
                 sha256=str(context["sha256"]), name=str(context.get("name") or "the file"),
                 conversation_id=str(context["conversation"]), upload=upload)


def _marker(offer: str) -> tuple[bytes, str]:
    """The bytes saying `offer` was uploaded, and their hash (their key in the file store)."""
    data = f"teams file consent uploaded: {offer}".encode()
    return data, hashlib.sha256(data).hexdigest()


def info_card(upload: Mapping[str, Any], name: str) -> Attachment:
    """The FileInfoCard showing the uploaded file in the chat."""
    return Attachment(content_type=INFO_CARD, name=str(upload.get("name") or name),
                      content_url=str(upload.get("contentUrl") or ""),
                      content={"uniqueId": upload.get("uniqueId"),
                               "fileType": upload.get("fileType")})


class FileConsents:
    """The consent flow of one Teams channel (see the module docstring)."""

    def __init__(self, *, channel: TeamsChannel, hosts: FileHosts) -> None:
        self._channel = channel
        self._hosts = hosts
        self._uploading: set[str] = set()  # offers being uploaded by this process

    async def offer(self, inbound: StoredMessage, file: TurnFile, data: bytes) -> list[str]:
        """Post the consent card for `file` where `inbound` was said; its activity id."""
        api, conversation = self._channel.target(inbound)
        card = MessageActivityInput().add_attachments(consent_card(inbound, file, len(data)))
        sent = await self._channel.call(api.conversations.create_activity(conversation, card),
                                        inbound=inbound, what=f"offering {file.name!r}")
        return [sent.id]

    async def answer(self, activity: Mapping[str, Any]) -> InvokeResponse[Any]:
        """Answer a press: upload on accept (once), words otherwise; always 200, since Teams
        shows an error on the card for anything else and a press is not worth repeating."""
        try:
            press = press_of(activity)
            here = place_of(activity, default_tenant=self._channel.tenant_id).conversation_id
        except (KeyError, ValueError, TypeError, AttributeError) as error:
            self._channel.skip_event(activity.get("id"), error)
            return InvokeResponse(status=200)
        bound = log.bind(channel=self._channel.name, conversation_id=here, offer=press.offer)
        if press.conversation_id != here:
            bound.warning("teams.file_consent_elsewhere", offered_in=press.conversation_id)
            return await self._say(activity, "That file was offered in another chat; it was "
                                             "not sent here.")
        if not press.accepted:
            bound.info("teams.file_declined")
            return await self._say(activity, f"OK, {press.name} was not sent.")
        if press.offer in self._uploading:
            return InvokeResponse(status=200)  # the same press, delivered again meanwhile
        self._uploading.add(press.offer)
        try:
            return await self._accept(activity, press, bound)
        finally:
            self._uploading.discard(press.offer)

    async def _accept(self, activity: Mapping[str, Any], press: Press,
                      bound: Any) -> InvokeResponse[Any]:
        intake = self._channel.file_intake
        store = intake.store if intake is not None else None
        marker, marker_key = _marker(press.offer)
        if store is not None and await store.get(marker_key) is not None:
            bound.info("teams.file_consent_replayed", outcome="already uploaded; nothing sent")
            return InvokeResponse(status=200)
        data = await store.get(press.sha256) if store is not None else None
        if store is None or data is None:
            bound.warning("teams.file_consent_stale", outcome="bytes no longer kept")
            return await self._say(activity, f"{press.name} is no longer kept here, so it "
                                             "could not be sent; ask for it again.")
        size = len(data)
        try:
            await put_file(str(press.upload["uploadUrl"]), data, hosts=self._hosts, headers={
                "Content-Range": f"bytes 0-{size - 1}/{size}", "Content-Length": str(size)})
        except FileRefusedError as error:
            bound.warning("teams.file_upload_refused", error=str(error))
            return await self._say(activity, f"{press.name} was not sent: Teams gave an upload "
                                             "address this bot does not send files to.")
        except (aiohttp.ClientError, TimeoutError) as error:
            bound.error("teams.file_upload_failed", error=repr(error))
            return await self._say(activity, f"Uploading {press.name} failed; please ask "
                                             "for it again.")
        await store.put(marker, sha256=marker_key, media_type="text/plain")
        bound.info("teams.file_uploaded", size=size)
        return await self._post(activity, MessageActivityInput().add_attachments(
            info_card(press.upload, press.name)))

    async def _say(self, activity: Mapping[str, Any], text: str) -> InvokeResponse[Any]:
        return await self._post(activity, MessageActivityInput(text=text))

    async def _post(self, activity: Mapping[str, Any],
                    message: MessageActivityInput) -> InvokeResponse[Any]:
        """Post `message` in the chat the invoke came from; the invoke is answered 200 even
        when the post fails (it is logged): pressing again cannot bring it back."""
        api = self._channel.api_for(str(activity.get("serviceUrl") or "")
                                    or self._channel.service_url)
        conversation = str(activity["conversation"]["id"])
        try:
            await api.conversations.create_activity(conversation, message)
        except Exception as error:
            log.error("teams.file_consent_post_failed", channel=self._channel.name,
                      teams_conversation=conversation, error=repr(error))
        return InvokeResponse(status=200)
