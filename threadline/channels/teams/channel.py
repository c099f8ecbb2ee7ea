"""The Microsoft Teams channel: Bot Framework activities over HTTP through the Teams SDK.

The Teams SDK's `App` receives (`teams.endpoint`): our aiohttp endpoint, served through
`threadline.listening.serve`, hands each POST to the SDK's `HttpServer`, which validates the
channel's JWT (see `teams.auth`; anything unsigned, forged, expired, for another bot or for
another service URL is answered 401 before it is read) and routes the activity to the handlers
registered here. Handled: `message` (a turn), `messageUpdate` / `messageDelete` (edits and
deletions through the inbox), `adaptiveCard/action` invokes of our command buttons (a
turn sending the button's command, as whoever pressed), and `fileConsent/invoke`.

Acknowledgement (the `ChannelEvents` contract): the HTTP answer is Teams' "received", sent only
once `on_message` returned; a turn that could not be recorded is answered 503 (500 for another
failure), so the channel may deliver it again, and a stopping channel answers 503 too. The
activity id names the turn (`teams.activities`), so a redelivery is the same turn. Files sent
in 1:1 chats are fetched (Teams' pre-authenticated download URLs) and kept before the answer;
files a tool made are offered on a consent card there and uploaded once allowed
(`teams.file_consent`, the `fileConsent/invoke` handler).

Replies go where the message was said: a channel message into its thread (the conversation id
with `;messageid=ROOT`), a chat message into the chat, as a reply to the message (`replyToId`).
Long text is split under `max_message_chars`; posts use the service URL the activity came with
(validated against the token), or the configured one for a post nothing asked for. While an
agent works the chat shows Teams' typing indicator; with `streaming` on the reply is posted
with the first text and edited in place as it grows (at most once per `stream_interval` per
chat), its last edit being the whole reply.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
import requests
import structlog
from aiohttp import web
from microsoft_teams.api import ApiClient, InvokeResponse, TypingActivityInput
from microsoft_teams.api.activities.message import MessageActivityInput
from microsoft_teams.api.models.attachment import Attachment

from threadline.channels.base import BotIdentity, Channel, ChannelEvents, LiveReply
from threadline.channels.fetch_policy import FileHosts, fetch_file
from threadline.channels.files import IncomingFile, take_in
from threadline.channels.live import RateGate
from threadline.channels.teams.activities import (
    CHANNEL_TYPE,
    SentFile,
    changed_turn,
    command_card,
    decode_id,
    deleted_turn,
    files_of,
    message_turn,
    press_turn,
    reply_conversation,
)
from threadline.channels.teams.addresses import DEFAULT_SERVICE_URL
from threadline.channels.teams.auth import BOT_SCOPE, BotTokens, cloud_for
from threadline.channels.teams.endpoint import card_answer, open_app
from threadline.channels.teams.file_consent import FileConsents, not_sent_here
from threadline.channels.text import split_text
from threadline.channels.unreachable import unreachable
from threadline.errors import (
    ChannelError,
    ChannelPermanentError,
    ConfigError,
    TurnNotRecordedError,
)
from threadline.history.files import TurnFile
from threadline.history.model import MessageMetadata, StoredMessage
from threadline.listening import Listener, serve

if TYPE_CHECKING:
    from microsoft_teams.apps import ActivityContext, App

    from threadline.commands import CommandChoice

log = structlog.get_logger("threadline.channels.teams")

T = TypeVar("T")
CARD = "application/vnd.microsoft.card.adaptive"
# Where Teams keeps the files people send a bot (each tenant's OneDrive / SharePoint).
TEAMS_FILE_HOSTS = ("*.sharepoint.com",)
# Connector answers that no retry can change (the bot removed, the conversation gone).
_PERMANENT = frozenset({400, 401, 403, 404})


class TeamsChannel(Channel):
    """One Teams bot (one Azure app registration) on its messaging endpoint."""

    channel_type = CHANNEL_TYPE
    max_message_chars = 4000

    def __init__(
        self, *, app_id: str, app_password: str, tenant_id: str, name: str = "teams",
        host: str = "127.0.0.1", port: int = 3978, path: str = "/api/messages",
        login_url: str, openid_metadata_url: str, service_url: str = DEFAULT_SERVICE_URL,
        login_url_set: bool = False, bot_name: str | None = None, allow_bots: bool = False,
        streaming: bool = True, stream_interval: float = 1.0, broadcasters: Iterable[str] = (),
        file_hosts: Sequence[str] = (),
    ) -> None:
        """`login_url` and `openid_metadata_url` are where the bot's token is asked for and
        where the keys of the channel's tokens are published (Microsoft's by default;
        `login_url_set` says they were configured, for error messages); `service_url` is the
        connector for posts nothing asked for (a schedule's). Files people send in 1:1 chats
        are fetched from SharePoint's hosts only, plus the `file_hosts` named (`host` or
        `host:port`, for a proxy; see `channels.fetch_policy`)."""
        super().__init__(name=name, allow_bots=allow_bots, streaming=streaming,
                         broadcasters=broadcasters)
        where = f"Teams channel {name!r}"
        missing = [s for s, v in (("app_id", app_id), ("app_password", app_password),
                                  ("tenant_id", tenant_id)) if not v]
        if missing:
            raise ConfigError(f"{where}: {', '.join(missing)} empty; copy them from the bot's "
                              "Azure app registration (docs/platforms/teams.md)")
        if not path.startswith("/"):
            raise ConfigError(f"{where}: path must start with '/', got {path!r}")
        self.app_id, self.tenant_id = app_id, tenant_id
        self._host, self._port, self._path = host, port, path
        self._login_url, self._login_url_set = login_url, login_url_set
        self._service_url = service_url.rstrip("/")
        self._cloud = cloud_for(login_url=login_url, openid_metadata_url=openid_metadata_url)
        self._tokens = BotTokens(app_id=app_id, password=app_password, tenant_id=tenant_id,
                                 login_url=login_url, channel=name)
        self._bot_name = bot_name
        self._file_hosts = FileHosts.of(channel=name, platform_hosts=TEAMS_FILE_HOSTS,
                                        configured=file_hosts,
                                        setting=f"channels.{name}.file_hosts")
        self._consents = FileConsents(channel=self, hosts=self._file_hosts)
        self._own_ids = frozenset({f"28:{app_id}", app_id})
        self._gate = RateGate(stream_interval)
        self._app: App | None = None
        self._apis: dict[str, ApiClient] = {}
        self._events: ChannelEvents | None = None
        self._runner: web.AppRunner | None = None
        self.closing = False
        self._log = log.bind(channel=name)

    # Lifecycle ---------------------------------------------------------------------------

    async def start(self, events: ChannelEvents) -> None:
        if self._runner is not None:
            raise ChannelError(f"Teams channel {self.name!r} is already started")
        await self._bot_token()  # wrong credentials stop the start here, in words
        self._events, self.closing = events, False
        self._app, served = await open_app(
            channel=self.name, app_id=self.app_id, tenant_id=self.tenant_id,
            tokens=self._tokens, cloud=self._cloud, service_url=self._service_url,
            path=self._path, is_closing=lambda: self.closing, register=self._register,
            on_unreadable=self.skip_event)
        self._runner = web.AppRunner(served, access_log=None)
        await self._runner.setup()
        try:
            await serve(self._runner, self.listeners()[0])
        except BaseException:
            await self.stop()
            raise
        self._learn_identity()
        host, port = self._runner.addresses[0][:2]
        self._log.info("teams.listening", url=f"http://{host}:{port}{self._path}",
                       app_id=self.app_id)

    def _register(self, app: App) -> None:
        """What the channel handles (see the module docstring)."""
        app.on_message(self._on_message)
        app.on_message_update(self._on_edit)
        app.on_message_delete(self._on_delete)
        app.on_card_action(self._on_press)
        app.on_file_consent(self._on_file_consent)

    async def stop(self) -> None:
        self.closing = True  # from now on activities are answered 503: Teams may resend them
        if self._runner is not None:
            await self._runner.shutdown()  # lets requests in flight finish and answer
            await self._runner.cleanup()
            self._runner = None
        self._app = None
        self._apis.clear()

    @property
    def messaging_url(self) -> str:
        """Where Teams posts activities (with the port actually bound), once started."""
        if self._runner is None:
            raise ChannelError(f"Teams channel {self.name!r} is not started")
        host, port = self._runner.addresses[0][:2]
        return f"http://{host}:{port}{self._path}"

    def listeners(self) -> list[Listener]:
        return [Listener(self._host, self._port, f"channels.{self.name}.port",
                         f"channels.{self.name}.host")]

    def receiving(self) -> str | None:
        if self.identity is None:
            return "not connected"
        return None if self._runner is not None else "not receiving: the endpoint is not served"

    def _learn_identity(self) -> None:
        """The bot is `28:APP_ID` in activities and mentions, or its app id."""
        self.identity = BotIdentity(user_id=f"28:{self.app_id}", display_name=self._bot_name,
                                    extra_ids=(self.app_id,))

    async def check(self) -> list[str]:
        """Whether the login server gives the bot a token (app id, password and tenant
        right); the identity it will have. Teams' own settings (the messaging endpoint in
        the Azure Bot, the app installed in a team) cannot be read from here."""
        await self._bot_token()
        self._learn_identity()
        return []

    async def _bot_token(self) -> str:
        try:
            return await self._tokens.get_app_token(BOT_SCOPE, None)
        except requests.RequestException as error:
            raise ChannelError(unreachable(
                where=f"Teams channel {self.name!r}", service="the Microsoft login server",
                action="get the bot's token", url=self._login_url,
                setting="login_url" if self._login_url_set else None, error=error)) from error

    # Inbound -----------------------------------------------------------------------------

    async def _on_message(self, ctx: ActivityContext[Any]) -> InvokeResponse[Any] | None:
        activity = _wire(ctx)
        try:
            turn = message_turn(activity, default_tenant=self.tenant_id,
                                own_ids=self._own_ids, allow_bots=self.allow_bots)
        except Exception as error:  # parts missing or of the wrong kind: answered, skipped
            self.skip_event(activity.get("id"), error)
            return None
        if turn is None:
            return None
        return await self._record(await take_in(
            turn, [self._incoming(f) for f in files_of(activity)], self.file_intake))

    def _incoming(self, sent: SentFile) -> IncomingFile:
        """A file sent in a 1:1 chat, fetched from its pre-authenticated download URL, only
        from SharePoint's hosts (plus `file_hosts`): the URL comes with the activity, and no
        credential is sent with it."""

        async def fetch(limit: int) -> bytes:
            return await fetch_file(sent.download_url, hosts=self._file_hosts, limit=limit)

        return IncomingFile(name=sent.name, platform_id=sent.unique_id, declared_size=0,
                            fetch=fetch)

    async def _on_press(self, ctx: ActivityContext[Any]) -> InvokeResponse[Any]:
        """A command button pressed (Action.Execute): its command, as whoever pressed."""
        activity = _wire(ctx)
        try:
            turn = press_turn(activity, default_tenant=self.tenant_id)
        except Exception as error:
            self.skip_event(activity.get("id"), error)
            turn = None
        if turn is None:
            return card_answer(400, "This button is not one of Threadline's.")
        refused = await self._record(turn)
        if refused is not None:
            return card_answer(503, "This could not be recorded; please press it again.")
        return card_answer(200, f"Received: {turn.content}")

    async def _record(self, turn: StoredMessage) -> InvokeResponse[Any] | None:
        """Record a turn; None answers 200, else the refusal Teams gets."""
        events = self._events
        bound = self._log.bind(conversation_id=turn.conversation_id, message_id=turn.id)
        if events is None:
            return InvokeResponse(status=503)
        try:
            await events.on_message(turn, self)
        except TurnNotRecordedError as error:
            bound.warning("teams.turn_not_recorded", error=str(error),
                          outcome="answered 503 so Teams may deliver it again")
            return InvokeResponse(status=503)
        except Exception:
            bound.exception("teams.activity_failed",
                            outcome="answered 500 so Teams may deliver it again")
            return InvokeResponse(status=500)
        return None

    async def _on_file_consent(self, ctx: ActivityContext[Any]) -> InvokeResponse[Any]:
        """Allow or Decline pressed on a file's consent card (`teams.file_consent`)."""
        return await self._consents.answer(_wire(ctx))

    async def _on_edit(self, ctx: ActivityContext[Any]) -> InvokeResponse[Any] | None:
        return await self._change(ctx, edited=True)

    async def _on_delete(self, ctx: ActivityContext[Any]) -> InvokeResponse[Any] | None:
        return await self._change(ctx, edited=False)

    async def _change(self, ctx: ActivityContext[Any], *, edited: bool
                      ) -> InvokeResponse[Any] | None:
        activity, events = _wire(ctx), self._events
        if events is None:
            return InvokeResponse(status=503)
        try:  # reading the activity: what cannot be read is skipped
            if edited:
                conversation_id, message_id, text = changed_turn(
                    activity, default_tenant=self.tenant_id)
            else:
                (conversation_id, message_id), text = deleted_turn(
                    activity, default_tenant=self.tenant_id), ""
        except (KeyError, ValueError, TypeError) as error:
            self.skip_event(activity.get("id"), error)
            return None
        try:  # applying it: a failure is answered 500, so Teams may deliver it again
            if not edited:
                await events.on_delete(conversation_id, message_id)
            elif text:
                await events.on_edit(conversation_id, message_id, text)
        except Exception:
            self._log.exception("teams.change_failed", conversation_id=conversation_id,
                                activity_id=activity.get("id"),
                                outcome="answered 500 so Teams may deliver it again")
            return InvokeResponse(status=500)
        return None

    # Outbound ----------------------------------------------------------------------------

    def api_for(self, service_url: str) -> ApiClient:
        """A connector client for `service_url` (one per service URL, sharing the app's
        HTTP client and token)."""
        app = self._app
        if app is None:
            raise ChannelError(f"Teams channel {self.name!r} is not started; start() it first")
        api = self._apis.get(service_url)
        if api is None:
            api = ApiClient(service_url, app.http_client.clone(share_http=True),
                            cloud=self._cloud, token_provider=app.token_provider)
            self._apis[service_url] = api
        return api

    @property
    def service_url(self) -> str:
        """The connector for posts nothing asked for."""
        return self._service_url

    def target(self, inbound: StoredMessage) -> tuple[ApiClient, str]:
        """The connector and the Teams conversation a reply to `inbound` goes to."""
        meta = inbound.metadata
        channel_id = self.delivered_here(inbound)
        service_url = str(meta.extra.get("service_url") or self._service_url)
        return (self.api_for(service_url),
                reply_conversation(channel_id=channel_id, thread_id=meta.thread_id))

    async def send_reply(self, inbound: StoredMessage, text: str, *,
                         agent_name: str | None = None) -> list[str]:
        return await self._post(inbound, split_text(text, self.max_message_chars))

    async def send_choices(self, inbound: StoredMessage, text: str,
                           choices: Sequence[CommandChoice], *,
                           agent_name: str | None = None) -> list[str]:
        """The text, its last part as an Adaptive Card with an Action.Execute button per
        choice (pressing one sends its command as the person pressing)."""
        parts = split_text(text, self.max_message_chars)
        card = command_card(parts[-1], [(c.label, c.command) for c in choices])
        return await self._post(inbound, parts[:-1]) + await self._post(
            inbound, [""], card=card)

    async def _post(self, inbound: StoredMessage, parts: list[str], *,
                    card: dict[str, Any] | None = None) -> list[str]:
        api, conversation = self.target(inbound)
        reply_to = inbound.metadata.message_id
        posted: list[str] = []
        for part in parts:
            activity = MessageActivityInput(text=part or None)
            if card is not None:
                activity = activity.add_attachments(Attachment(content_type=CARD, content=card))
            action = (api.conversations.reply_to_activity(conversation, reply_to, activity)
                      if reply_to else api.conversations.create_activity(conversation, activity))
            sent = await self.call(action, inbound=inbound,
                                   what=f"posting part {len(posted) + 1} of {len(parts)}")
            posted.append(sent.id)
        return posted

    async def _upload(self, inbound: StoredMessage, file: TurnFile, data: bytes) -> list[str]:
        """A file a tool made: offered on a consent card in a 1:1 chat (uploaded once the
        person allows it); elsewhere Teams has no way for a bot to send one, and says so."""
        if inbound.scope == "dm":
            return await self._consents.offer(inbound, file, data)
        return await self._post(inbound, [not_sent_here(file)])

    async def update(self, inbound: StoredMessage, activity_id: str, text: str) -> None:
        """Show `text` in the posted message `activity_id` instead (edit in place)."""
        api, conversation = self.target(inbound)
        await self.call(api.conversations.update_activity(
            conversation, activity_id, MessageActivityInput(text=text)),
            inbound=inbound, what="updating a reply being written")

    async def typing(self, inbound: StoredMessage) -> None:
        """Teams' typing indicator in the chat (it shows for a few seconds)."""
        api, conversation = self.target(inbound)
        await self.call(api.conversations.create_activity(conversation, TypingActivityInput()),
                        inbound=inbound, what="showing that the agent is typing")

    async def call(self, action: Awaitable[T], *, inbound: StoredMessage, what: str) -> T:
        """Await one connector call; its failure as our error, permanent or not."""
        where = (f"Teams channel {self.name!r}: {what} in conversation "
                 f"{inbound.conversation_id!r} failed")
        try:
            return await action
        except httpx.HTTPStatusError as error:
            status = error.response.status_code
            self._log.error("teams.connector_refused", conversation_id=inbound.conversation_id,
                            status=status, body=error.response.text[:300])
            if status in _PERMANENT:
                raise ChannelPermanentError(
                    f"{where} with HTTP {status}; retrying cannot help (is the app still "
                    "installed there, and app_id / app_password right?)") from error
            raise ChannelError(f"{where} with HTTP {status}; it may succeed later") from error
        except (httpx.TransportError, requests.RequestException) as error:
            raise ChannelError(f"{where}: {error!r}") from error

    def open_reply(self, inbound: StoredMessage, *, agent_name: str | None = None) -> LiveReply:
        from threadline.channels.teams.live import TeamsLiveReply

        return TeamsLiveReply(channel=self, inbound=inbound, agent_name=agent_name,
                              gate=self._gate, log=self._log)

    async def person_timezone(self, message: StoredMessage) -> str | None:
        """The IANA time zone Teams sends with each message (`localTimezone`)."""
        zone = message.metadata.extra.get("timezone")
        return str(zone) if zone else None

    def metadata_for(self, conversation_id: str) -> MessageMetadata:
        """Where a post to `conversation_id` goes (`teams:TENANT:CHAT[:ROOT]`)."""
        chat, root = self._conversation_parts(conversation_id, workspace=True)
        return MessageMetadata(channel_type=self.channel_type, channel_name=self.name,
                               channel_id=decode_id(chat),
                               thread_id=decode_id(root) if root else None)


def _wire(ctx: ActivityContext[Any]) -> dict[str, Any]:
    """The activity as Teams sent it (camelCase JSON), for `teams.activities`."""
    dumped: dict[str, Any] = ctx.activity.model_dump(by_alias=True, exclude_none=True,
                                                     mode="json")
    return dumped
