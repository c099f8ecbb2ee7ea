"""The WhatsApp channel: one business phone number on the Cloud API, through pywa 4.5.

Messages arrive by webhook (`whatsapp.webhook`: verified, signed, answered 200 only once every
message of the POST is recorded) and are read by `whatsapp.inbound`; replies, buttons, files,
templates, read receipts and the typing indicator go out through pywa's async client
(`whatsapp.graph`, with rate limits waited out).

What to know when running it:
- Every post is checked against the customer's 24-hour service window (`whatsapp.window`):
  outside it, the post is sent as the template `window_template` names, or not at all, said
  in the log and as a note in the conversation's history.
- Replies are plain text split under 4,096 characters. In a 1:1 chat a reply quotes the
  customer's message (WhatsApp's context) only when that message itself replied to something;
  in a group it always does. A number posts as itself, so where several agents share it,
  each reply opens with its agent's name in bold (`*sales*: ...`).
- Buttons (approvals, `/forget`) are interactive reply buttons, at most three to a message and
  20 characters to a title; a press arrives as a message whose text is the button's command,
  sent by whoever pressed it.
- While an agent answers, the customer's message shows read and "typing..." (`whatsapp.live`).
- Status callbacks (sent, delivered, read, failed) are kept on the record of the reply they
  concern (`threadline.channels.delivery_status`: the furthest along per message, a failure
  with its error; shown in the console) and logged with the conversation; a failed one is
  also recorded in the conversation's history, with WhatsApp's reason.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import structlog
from pywa.types.callback import Button
from pywa_async.client import WhatsApp
from pywa_async.types.templates import BodyText, TemplateLanguage
from yarl import URL

from threadline.channels.base import BotIdentity, Channel, ChannelEvents, LiveReply
from threadline.channels.delivery_status import DeliveryStatuses, PartStatus
from threadline.channels.fetch_policy import FileHosts, fetch_file
from threadline.channels.files import IncomingFile, take_in
from threadline.channels.text import split_text
from threadline.channels.whatsapp.graph import (
    GRAPH_URL,
    call_with_retries,
    close_client,
    graph_client,
)
from threadline.channels.whatsapp.inbound import (
    CHANNEL_TYPE,
    DeliveryStatus,
    InboundMessage,
    conversation_id,
    inbound_turn,
    media_of,
)
from threadline.channels.whatsapp.live import WhatsAppReply
from threadline.channels.whatsapp.webhook import WebhookReceiver
from threadline.channels.whatsapp.window import ServiceWindow, utc_now
from threadline.errors import ChannelError, ConfigError, StoreError
from threadline.history.files import TurnFile
from threadline.history.model import MessageMetadata, Participant, StoredMessage
from threadline.history.store import ConversationStore
from threadline.listening import Listener

if TYPE_CHECKING:
    from threadline.channels.whatsapp.window import Clock
    from threadline.commands import CommandChoice

log = structlog.get_logger("threadline.channels.whatsapp")

MEDIA_HOSTS = ("lookaside.fbsbx.com",)  # where the media endpoint's URLs point
MAX_BUTTONS, MAX_BUTTON_TITLE, MAX_BUTTON_BODY = 3, 20, 1024
MAX_TEMPLATE_PARAMETER = 1024
WHATSAPP = Participant(kind="system", id="whatsapp", display_name="WhatsApp")
T = TypeVar("T")


class WhatsAppChannel(Channel):
    """A WhatsApp business number as a Threadline channel (see the module docstring)."""

    channel_type = CHANNEL_TYPE
    max_message_chars = 4096

    def __init__(self, *, name: str, phone_number_id: str, access_token: str, app_secret: str,
                 verify_token: str, webhook_path: str = "/whatsapp",
                 webhook_listen: str = "127.0.0.1", webhook_port: int = 8080,
                 graph_url: str = GRAPH_URL, window_template: str | None = None,
                 window_template_language: str = "en_US", typing: bool = True,
                 file_hosts: Sequence[str] = (), history: ConversationStore | None = None,
                 agent_names: Sequence[str] = (), clock: Clock = utc_now,
                 delivery_statuses: DeliveryStatuses | None = None) -> None:
        """Settings (see `WhatsAppSettings`); `history` is the backend's, where the service
        window is read (None: only the message being answered tells when the customer last
        wrote); `agent_names` are the agents on this number, whose names open a message
        addressed to one; `delivery_statuses` are the backend's reply records, where status
        callbacks are kept (None: they are only logged)."""
        super().__init__(name=name, streaming=False)
        missing = [f"{setting} ({where})" for setting, value, where in (
            ("phone_number_id", phone_number_id, "WhatsApp Manager > API setup > Phone number "
             "ID"),
            ("access_token", access_token, "a system user token with "
             "whatsapp_business_messaging"),
            ("app_secret", app_secret, "App settings > Basic > App secret; it signs webhooks"),
            ("verify_token", verify_token, "any random string, also typed into the app's "
             "webhook settings")) if not value]
        if missing:
            raise ConfigError(f"whatsapp channel {name!r} is missing " + "; ".join(missing))
        self._phone_number_id = phone_number_id
        self._token = access_token
        self._app_secret = app_secret
        self._verify_token = verify_token
        self._webhook_path = webhook_path
        self._webhook_listen = webhook_listen
        self._webhook_port = webhook_port
        self._graph_url = graph_url.rstrip("/")
        self._window_template = window_template
        try:
            self._template_language = TemplateLanguage(window_template_language)
        except (ValueError, TypeError):  # pywa's enum raises TypeError for unknown codes
            raise ConfigError(
                f"whatsapp channel {name!r}: window_template_language "
                f"{window_template_language!r} is not a language code of WhatsApp templates; "
                "write the code the template was approved in (en_US, es, pt_BR, ...)") from None
        self._typing = typing
        # A proxy or a fake of the Graph API serves the media too: its host is the operator's.
        graph = URL(self._graph_url)
        own_graph = (f"{graph.host}:{graph.port}",) if self._graph_url != GRAPH_URL else ()
        self._file_hosts = FileHosts.of(
            channel=name, setting=f"channels.{name}.file_hosts", platform_hosts=MEDIA_HOSTS,
            configured=[*own_graph, *file_hosts])
        self.window = ServiceWindow(history, clock=clock)
        self._history_kept = history is not None
        self._client: WhatsApp | None = None
        self._receiver: WebhookReceiver | None = None
        self._events: ChannelEvents | None = None
        self._agent_names = tuple(agent_names)
        self._statuses = delivery_statuses
        self._log = log.bind(channel=name)

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self, events: ChannelEvents) -> None:
        if self._client is not None:
            raise ChannelError(f"whatsapp channel {self.name!r} is already started; "
                               "call stop() before starting it again.")
        client = graph_client(phone_number_id=self._phone_number_id, token=self._token,
                              graph_url=self._graph_url)
        receiver = WebhookReceiver(take=self._take, skip=self.skip_event,
                                   app_secret=self._app_secret, verify_token=self._verify_token,
                                   log=self._log)
        try:
            await self._learn_identity(client)
            self._client, self._events = client, events  # ready before the first webhook
            await receiver.start(listener=self.listeners()[0], path=self._webhook_path)
        except BaseException:
            self._client = None
            await close_client(client)
            raise
        self._receiver = receiver
        self._log.info("whatsapp.started", phone_number_id=self._phone_number_id)
        if not self._history_kept:
            self._log.warning("whatsapp.no_history", outcome=(
                "the backend keeps no history for the 24-hour service window: only replies "
                "to a message of the last 24 hours are sent free-form"))

    async def stop(self) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        receiver, self._receiver = self._receiver, None
        if receiver is not None:
            await receiver.stop()  # answers the requests in progress first
        await close_client(client)
        self._log.info("whatsapp.stopped")

    @property
    def webhook_url(self) -> str | None:
        """Where the webhook listens once started (the port bound, for port 0)."""
        return self._receiver.url if self._receiver is not None else None

    def receiving(self) -> str | None:
        return None if self._receiver is not None else "not connected"

    def listeners(self) -> list[Listener]:
        return [Listener(self._webhook_listen, self._webhook_port,
                         f"channels.{self.name}.webhook_port",
                         f"channels.{self.name}.webhook_listen")]

    async def _call(self, call: Callable[[], Awaitable[T]], *, what: str,
                    conversation: str | None = None) -> T:
        where = f"whatsapp channel {self.name!r}" + (f", {conversation}" if conversation else "")
        bound = self._log.bind(conversation_id=conversation) if conversation else self._log
        return await call_with_retries(call, what=what, where=where, bound=bound,
                                       graph_url=self._graph_url)

    async def _learn_identity(self, client: WhatsApp) -> None:
        number = await self._call(client.get_business_phone_number,
                                  what="read the business phone number")
        digits = re.sub(r"\D", "", number.display_phone_number or "")
        self.identity = BotIdentity(user_id=self._phone_number_id,
                                    display_name=number.verified_name or None,
                                    extra_ids=(digits,) if digits else ())

    # -- inbound ---------------------------------------------------------------------------

    async def _take(self, event: InboundMessage | DeliveryStatus) -> None:
        """One message (recorded before this returns) or status callback of the webhook."""
        if isinstance(event, DeliveryStatus):
            await self._record_status(event)
            return
        if event.phone_number_id != self._phone_number_id:
            self._log.warning("whatsapp.other_number", phone_number_id=event.phone_number_id,
                              outcome="ignored: this channel serves "
                                      f"{self._phone_number_id}")
            return
        assert self._events is not None and self.identity is not None
        turn = inbound_turn(event, bot=self.identity, agent_names=self._agent_names)
        if turn is None:
            return  # reactions, locations, stickers: nothing to answer
        media = media_of(event.message)
        incoming = [self._incoming_file(*media)] if media is not None else []
        turn = await take_in(turn, incoming, self.file_intake)
        await self._events.on_message(turn, self)

    def _incoming_file(self, media_id: str, name: str) -> IncomingFile:
        """A file behind the media endpoint: its id gives a URL, fetched with the token."""
        async def fetch(limit: int) -> bytes:
            client = self._started("fetch a file")
            located = await self._call(lambda: client.get_media_url(media_id),
                                       what=f"locate media {media_id}")
            return await fetch_file(located.url, hosts=self._file_hosts, limit=limit,
                                    credential={"Authorization": f"Bearer {self._token}"})
        return IncomingFile(name=name, platform_id=media_id, declared_size=0, fetch=fetch)

    async def _record_status(self, status: DeliveryStatus) -> None:
        """A status callback: kept on the reply's record (the furthest along, or the failure),
        logged; a failure also kept in the conversation's history."""
        where = conversation_id(status.phone_number_id, status.recipient)
        bound = self._log.bind(conversation_id=where, message_id=status.message_id)
        kept = self._statuses is not None and await self._statuses.note_delivery(
            where, status.message_id, PartStatus(status.status, status.at,
                                                 error_code=status.error_code,
                                                 error_title=status.error_title))
        if status.status != "failed":
            # kept=False: no reply record has this message id yet (the status is held for the
            # record of a turn still running), or it already has a later status.
            bound.info("whatsapp.status", status=status.status, kept=kept)
            return
        reason = "; ".join(status.errors) or "no reason given"
        bound.error("whatsapp.delivery_failed", errors=list(status.errors), kept=kept)
        assert self._events is not None
        await self._events.on_context(self._note(
            where, f"WhatsApp could not deliver message {status.message_id}: {reason}",
            note_id=f"{CHANNEL_TYPE}:status:{status.message_id}:failed",
            chat=status.recipient))

    def _note(self, where: str, text: str, *, note_id: str, chat: str | None) -> StoredMessage:
        """A system turn from WhatsApp in conversation `where` (kept, never answered)."""
        return StoredMessage(conversation_id=where, participant=WHATSAPP, content=text,
                             id=note_id, metadata=MessageMetadata(
                                 channel_type=CHANNEL_TYPE, channel_id=chat))

    # -- outbound --------------------------------------------------------------------------

    def _started(self, action: str) -> WhatsApp:
        if self._client is None:
            raise ChannelError(f"whatsapp channel {self.name!r} cannot {action} before "
                               "start().")
        return self._client

    def _context_of(self, inbound: StoredMessage) -> str | None:
        """The message a reply quotes (see the module docstring)."""
        meta = inbound.metadata
        if inbound.participant.kind != "user" or meta.message_id is None:
            return None
        return meta.message_id if (inbound.scope != "dm" or meta.reply_to_message_id) else None

    def metadata_for(self, conversation_id: str) -> MessageMetadata:
        """`whatsapp:PHONE_NUMBER_ID:CHAT`: posts go to CHAT from this number."""
        chat, _ = self._conversation_parts(conversation_id, workspace=True)
        if not conversation_id.startswith(f"{CHANNEL_TYPE}:{self._phone_number_id}:"):
            raise ConfigError(f"{conversation_id!r} belongs to another WhatsApp number than "
                              f"channel {self.name!r} ({self._phone_number_id})")
        return MessageMetadata(channel_type=CHANNEL_TYPE, channel_name=self.name,
                               channel_id=chat)

    async def _free_form_allowed(self, inbound: StoredMessage, agent_name: str | None) -> bool:
        """True inside the service window, False outside it with a template to send;
        outside it without one, `OutsideServiceWindow` (logged, noted in the history)."""
        try:
            last = await self.window.last_inbound(inbound)
        except StoreError as exc:  # not knowing the window, nothing is sent blind
            raise ChannelError(
                f"whatsapp channel {self.name!r}, {inbound.conversation_id}: not sent: when "
                f"the customer last wrote could not be read from the history ({exc})") from exc
        if last is not None and self.window.now() - last < self.window.length:
            return True
        if self._window_template:
            return False
        refusal = self.window.refusal(inbound, channel=self.name, last=last)
        self._log.warning("whatsapp.outside_service_window",
                          conversation_id=inbound.conversation_id, turn_id=inbound.id,
                          agent=agent_name, error=str(refusal))
        if self._events is not None:
            try:
                await self._events.on_context(self._note(
                    inbound.conversation_id, str(refusal),
                    note_id=f"{CHANNEL_TYPE}:not-sent:{inbound.id}:{agent_name or ''}",
                    chat=inbound.metadata.channel_id))
            except StoreError as exc:  # the log line above still says it
                self._log.warning("whatsapp.note_not_kept", error=str(exc))
        raise refusal

    async def send_reply(self, inbound: StoredMessage, text: str, *,
                         agent_name: str | None = None) -> list[str]:
        client, to = self._started("send a reply"), self.delivered_here(inbound)
        if not await self._free_form_allowed(inbound, agent_name):
            return [await self._send_template(client, inbound, to, text)]
        context = self._context_of(inbound)
        if agent_name and len(self._agent_names) > 1:
            text = f"*{agent_name}*: {text}"  # one number, several agents: say who speaks
        parts = split_text(text, self.max_message_chars)
        posted: list[str] = []
        for number, part in enumerate(parts, 1):
            posted.append(await self._post(
                client, to=to, text=part, context=context, conversation=inbound.conversation_id,
                what=f"post part {number} of {len(parts)} of a reply"))
        return posted

    async def _post(self, client: WhatsApp, *, to: str, text: str, conversation: str,
                    what: str, context: str | None = None,
                    buttons: Sequence[Button] | None = None) -> str:
        """One text message (with buttons, when given); its wamid."""
        async def send() -> str:
            sent = await client.send_message(to=to, text=text, reply_to_message_id=context,
                                             buttons=buttons)
            return str(sent.id)
        return await self._call(send, what=what, conversation=conversation)

    async def _send_template(self, client: WhatsApp, inbound: StoredMessage, to: str,
                             text: str) -> str:
        """The post as the window template, its text the one body parameter (WhatsApp
        refuses line breaks and runs of spaces there, so they become single spaces)."""
        assert self._window_template is not None
        parameter = " ".join(text.split())[:MAX_TEMPLATE_PARAMETER]
        self._log.info("whatsapp.sent_as_template", conversation_id=inbound.conversation_id,
                       template=self._window_template)
        sent = await self._call(lambda: client.send_template(
            to=to, name=self._window_template,
            language=self._template_language,
            params=[BodyText.params(parameter)]),  # type: ignore[arg-type]  # no self
            what=f"send template {self._window_template!r}",
            conversation=inbound.conversation_id)
        return sent.id

    async def send_choices(self, inbound: StoredMessage, text: str,
                           choices: Sequence[CommandChoice], *,
                           agent_name: str | None = None) -> list[str]:
        """The text, then its buttons: up to three per interactive message, whose body is
        the text's last part when it fits (1,024 characters), else a short line."""
        client, to = self._started("send buttons"), self.delivered_here(inbound)
        if not await self._free_form_allowed(inbound, agent_name):
            return [await self._send_template(client, inbound, to, text)]
        parts = split_text(text, self.max_message_chars)
        body = parts.pop() if len(parts[-1]) <= MAX_BUTTON_BODY else "Choose:"
        posted = await self.send_reply(inbound, "\n\n".join(parts)) if parts else []
        for start in range(0, len(choices), MAX_BUTTONS):
            buttons = [Button(title=c.label[:MAX_BUTTON_TITLE], callback_data=c.command)
                       for c in choices[start:start + MAX_BUTTONS]]
            posted.append(await self._post(client, to=to, text=body, buttons=buttons,
                                           what="post buttons",
                                           conversation=inbound.conversation_id))
            body = "More choices:"
        return posted

    async def _upload(self, inbound: StoredMessage, file: TurnFile, data: bytes) -> list[str]:
        """A PNG or JPEG as an image (shown inline), anything else as a document."""
        client, to = self._started("send a file"), self.delivered_here(inbound)
        if not await self._free_form_allowed(inbound, None):
            return []  # a template cannot carry the file; said already
        what = f"send the file {file.name!r}"
        if file.kind == "image" and file.media_type in ("image/png", "image/jpeg"):
            sent: Any = await self._call(lambda: client.send_image(
                to=to, image=data, mime_type=file.media_type), what=what,
                conversation=inbound.conversation_id)
        else:
            sent = await self._call(lambda: client.send_document(
                to=to, document=data, filename=file.name,
                mime_type=file.media_type or "application/octet-stream"), what=what,
                conversation=inbound.conversation_id)
        return [str(sent.id)]

    def open_reply(self, inbound: StoredMessage, *, agent_name: str | None = None) -> LiveReply:
        return WhatsAppReply(channel=self, inbound=inbound, agent_name=agent_name,
                             typing=self._typing)

    async def show_typing(self, inbound: StoredMessage) -> None:
        """Mark the customer's message read and show the typing indicator."""
        client, message_id = self._started("show typing"), inbound.metadata.message_id
        if message_id is not None:
            await self._call(lambda: client.indicate_typing(message_id=message_id),
                             what="show typing", conversation=inbound.conversation_id)

    # -- diagnostics -----------------------------------------------------------------------

    async def check(self) -> list[str]:
        """Whether the Graph API answers for this number with this token (it asks once
        before `start()` and learns who the number is), and what is not set up."""
        if self._client is None:
            client = graph_client(phone_number_id=self._phone_number_id, token=self._token,
                                  graph_url=self._graph_url)
            try:
                await self._learn_identity(client)
            finally:
                await close_client(client)
        problems = []
        if self._window_template is None:
            problems.append(
                f"whatsapp channel {self.name!r}: no window_template, so scheduled posts and "
                "follow-ups to customers silent for 24 hours are not sent (WhatsApp allows "
                "only approved templates then); name an approved template to send them")
        return problems
