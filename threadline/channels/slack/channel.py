"""The Slack channel: Events API over HTTP or Socket Mode through slack-bolt, replies in threads.

Only `message` events are handled. A post that mentions the bot arrives twice, once as
`message` and once as `app_mention`; handling both is the classic double reply. `message`
is the one that also covers DMs, thread replies and posts without a mention, and its text
carries the `<@U...>` markup, so `app_mention` is acknowledged and dropped.

Acknowledgement (the `ChannelEvents` contract): Slack is told "received" only once the turn
is recorded. bolt runs with `process_before_response=True`, so the HTTP 200 (or the Socket
Mode ack) is sent after our listener returns, and the listener awaits `on_message`: display
names (cached, and given at most `_LOOKUP_BUDGET_SECONDS` before ids are used instead) plus
the durable insert, well within Slack's 3 seconds. When `on_message` raises
`TurnNotRecordedError` the answer is 503 (no ack in Socket Mode), and Slack retries; so does a
channel that is stopping. Redeliveries of a message reach `on_message` again: the receiver
drops them by the turn's id. Edits and deletions are applied before the ack too, and a retried
one (same `event_id`) is applied once.

Slash commands (`/forget`, declared in the app's settings with this request URL; in Socket
Mode they arrive as `slash_commands` envelopes) become turns whose text is the command as
typed; they are recorded before the ack, like messages, and answered by the pipeline through
the command's `response_url` (seen only by the person who sent it). An answer's buttons (the
Forget under `/forget`'s question) are Block Kit buttons; a press (`block_actions`) is the
button's command, sent by whoever pressed it, answered through the press's `response_url`. A
command that could not be recorded is acked with a message saying to try again (Slack does not
resend commands); a reply after a restart, when the `response_url` is no longer known, is
posted in the channel. Slack runs slash commands outside threads: in a channel they act on the
channel's own conversation (its top-level posts), in a DM on the DM's.

Slack's AI app surfaces: a person who opens the app's assistant pane starts an assistant thread
in their DM with the app. `assistant_thread_started` is answered with the configured
`assistant_prompts` (assistant.threads.setSuggestedPrompts); the channel the person looks at,
given then and on every `assistant_thread_context_changed`, is recorded as a system turn of
that thread's conversation (`on_context`), before the ack. Messages in the thread are ordinary
`message` events of that thread, so the agent's conversation is the assistant thread itself.

Many workspaces (`oauth`, HTTP mode): the same app installed by OAuth in several workspaces
(`slack.oauth`). Each event is authorized with its workspace's installation, and everything
said back (replies, streams, statuses, files, name look-ups) uses the token of the workspace
the conversation belongs to, which its id carries (`slack:TEAM:CHANNEL`). The channel also
serves the install and redirect routes, and deletes a workspace's tokens on `tokens_revoked`
and `app_uninstalled` (purging its history too when so configured).

In HTTP mode `slack.requests` checks each request before bolt sees it: unsigned, forged or
stale requests get a 401 before any parsing, signed but unreadable ones a 400.

Replies: a message inside a thread is answered in that thread; a top-level channel message is
answered in a new thread under it (`reply_in_thread=True`, the default) or in the channel
(`reply_in_thread=False`); a top-level DM is answered in the DM itself. Text is escaped as
Slack asks, then split under `max_message_chars` (well under Slack's 40,000 hard limit, for
readability). Rate limits (429 with Retry-After) are waited out by slack_sdk's retry handler.
With `streaming` on, replies are shown as they are written and the assistant status says the
agent is working (`slack.live`).
"""

from __future__ import annotations

import asyncio
import re
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

import aiohttp
import structlog
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.oauth.installation_store.models.installation import Installation
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse
from slack_sdk.webhook.async_client import AsyncWebhookClient

from threadline.channels.base import BotIdentity, Channel, ChannelEvents, LiveReply
from threadline.channels.fetch_policy import FileHosts, fetch_file
from threadline.channels.files import IncomingFile, take_in
from threadline.channels.intake import RecentKeys
from threadline.channels.live import RateGate
from threadline.channels.slack.directory import SlackDirectory
from threadline.channels.slack.earlier import earlier_messages
from threadline.channels.slack.events import (
    CHANNEL_TYPE,
    CHOICE_ACTION,
    AssistantThread,
    SlackChange,
    SlackEdit,
    SlackPost,
    assistant_thread,
    choice_blocks,
    choice_turn,
    classify,
    context_turn,
    escape_outgoing,
    feedback_blocks,
    mentioned_user_ids,
    names_to_look_up,
    render_mentions,
    slash_command_turn,
    team_of_conversation,
    thread_conversation_id,
    to_stored_message,
)
from threadline.channels.slack.live import SlackLiveReply
from threadline.channels.slack.oauth import SlackOAuth, SlackWorkspace, SlackWorkspaces
from threadline.channels.slack.requests import bolt_request, unverified
from threadline.channels.text import split_text
from threadline.channels.unreachable import host_of, unreachable
from threadline.errors import (
    ChannelAuthError,
    ChannelError,
    ChannelPermanentError,
    ConfigError,
    TurnNotRecordedError,
)
from threadline.history.files import TurnFile
from threadline.history.model import StoredMessage
from threadline.listening import Listener, serve

if TYPE_CHECKING:
    from threadline.commands import CommandChoice

log = structlog.get_logger("threadline.channels.slack")

SlackMode = Literal["http", "socket"]
# Display names are worth this long before the ack; after it the turn keeps the user ids (the
# lookup goes on in the background and is cached for the next message).
_LOOKUP_BUDGET_SECONDS = 1.0
# Where Slack serves `url_private`: the only host that gets the bot token with a file request.
SLACK_FILE_HOSTS = ("files.slack.com",)
PERMANENT_ERRORS = frozenset({
    "channel_not_found", "not_in_channel", "is_archived", "msg_too_long", "invalid_auth",
    "account_inactive", "token_revoked", "no_permission", "restricted_action",
})
# Slash commands waiting for their answer, by turn id -> response_url (valid 30 minutes).
_MAX_PENDING_COMMANDS = 1000
_AUTH_ERRORS = frozenset({"invalid_auth", "not_authed", "account_inactive", "token_revoked",
                          "not_allowed_token_type"})
# Installed workspaces `threadline check` names one by one (the rest are counted).
_LISTED = 20
# Scopes without which the bot is silent somewhere, and what the user would see.
_NEEDED_SCOPES = {
    "chat:write": "cannot post any reply",
    "channels:history": "will not receive messages from public channels",
    "groups:history": "will not receive messages from private channels",
    "im:history": "will not receive direct messages",
    "users:read": "will show user ids instead of display names",
}


class SlackChannel(Channel):
    """One Slack app over the Events API or Socket Mode: in one workspace with its bot token,
    or installed by OAuth in many, each answered with its own token."""

    channel_type = CHANNEL_TYPE
    max_message_chars = 3900
    no_earlier_messages = None  # conversations.replies / conversations.history: `earlier`

    def __init__(
        self,
        *,
        bot_token: str,
        name: str = "slack",
        mode: SlackMode = "http",
        signing_secret: str | None = None,
        app_token: str | None = None,
        host: str = "127.0.0.1",
        port: int = 3000,
        path: str = "/slack/events",
        api_base_url: str | None = None,
        reply_in_thread: bool = True,
        agent_name_as_username: bool = False,
        allow_bots: bool = False,
        rate_limit_retries: int = 5,
        connect_timeout: float = 30.0,
        assistant_prompts: Sequence[Mapping[str, str]] = (),
        streaming: bool = True,
        broadcasters: Iterable[str] = (),
        stream_interval: float = 1.0,
        oauth: SlackOAuth | None = None,
        file_hosts: Sequence[str] = (),
    ) -> None:
        """`api_base_url` is the Web API root (default slack_sdk's); `host`/`port`/`path` are
        where HTTP mode listens (put TLS in front); `agent_name_as_username` posts as the
        agent's name, which needs the `chat:write.customize` scope. `assistant_prompts`
        (`{"title": ..., "message": ...}`, at most 4) are suggested in each new assistant
        thread. `streaming` shows replies as they are written, calling Slack at most once per
        `stream_interval` seconds per Slack channel (see `slack.live`). With `oauth` the app
        is installed in many workspaces and each is answered with its own token (`slack.oauth`);
        `bot_token` is then unused. Files are fetched from `files.slack.com` only, plus the
        `file_hosts` named (`host` or `host:port`, for a proxy; see `channels.fetch_policy`)."""
        super().__init__(name=name, allow_bots=allow_bots, streaming=streaming,
                         broadcasters=broadcasters)
        where = f"Slack channel {name!r}"
        if not bot_token and oauth is None:
            raise ConfigError(f"{where}: bot_token is empty; set it to the app's xoxb- token")
        if oauth is not None and mode != "http":
            raise ConfigError(f"{where}: oauth needs mode 'http' (Slack does not accept Socket "
                              "Mode apps for installing in other workspaces)")
        if mode not in ("http", "socket"):
            raise ConfigError(f"{where}: mode must be 'http' or 'socket', got {mode!r}")
        if mode == "http" and not signing_secret:
            raise ConfigError(f"{where}: HTTP mode needs signing_secret (Basic Information > "
                              "App Credentials) so forged requests are refused")
        if mode == "socket" and not app_token:
            raise ConfigError(f"{where}: socket mode needs app_token (an xapp- app-level token "
                              "with the connections:write scope)")
        if not 0 <= port <= 65535:
            raise ConfigError(f"{where}: port must be 0..65535, got {port}")
        if not path.startswith("/"):
            raise ConfigError(f"{where}: path must start with '/', got {path!r}")
        if stream_interval <= 0:
            raise ConfigError(f"{where}: stream_interval must be > 0 seconds, got "
                              f"{stream_interval}")
        if len(assistant_prompts) > 4 or not all(
                p.get("title") and p.get("message") for p in assistant_prompts):
            raise ConfigError(f"{where}: assistant_prompts takes at most 4 entries, each with a "
                              "non-empty title and message")
        self._assistant_prompts = [{"title": p["title"], "message": p["message"]}
                                   for p in assistant_prompts]
        self.mode = mode
        self.reply_in_thread = reply_in_thread
        self.agent_name_as_username = agent_name_as_username
        self._bot_token = bot_token
        self._oauth = oauth
        self._workspaces: SlackWorkspaces | None = None  # with oauth, once started
        self._home: SlackWorkspace | None = None  # without oauth: the one workspace
        self._signing_secret = signing_secret or ""
        self._app_token = app_token or ""
        self._host, self._port, self._path = host, port, path
        self._api_base_url = api_base_url or AsyncWebClient.BASE_URL
        self._api_base_url_set = api_base_url is not None  # named in errors only when set
        self._rate_limit_retries = rate_limit_retries
        self._connect_timeout = connect_timeout
        self._applied_changes = RecentKeys()  # edits and deletions, by event_id
        self._file_hosts = FileHosts.of(channel=name, platform_hosts=SLACK_FILE_HOSTS,
                                        configured=file_hosts,
                                        setting=f"channels.{name}.file_hosts")
        # Posts recorded (or being taken in) by this process, by stored id: Slack's retry of
        # one is acknowledged without downloading its files again.
        self._taken_posts = RecentKeys()
        self._posts_in_flight: set[str] = set()
        self._in_flight = 0  # listeners recording an event; `stop` waits for them
        self._idle = asyncio.Event()
        self._idle.set()
        self._closing = False
        self._events: ChannelEvents | None = None
        self._session: aiohttp.ClientSession | None = None
        self._client: AsyncWebClient | None = None
        self._runner: web.AppRunner | None = None
        self._socket: AsyncSocketModeHandler | None = None
        self._team_id = ""
        self._own_ids: frozenset[str] = frozenset()
        self._gate = RateGate(stream_interval)
        # Conversations where Slack refused the assistant status or chat streaming: not
        # asked again (each refusal is logged once).
        self._no_status: set[str] = set()
        self._no_stream: set[str] = set()
        self._response_urls: OrderedDict[str, str] = OrderedDict()
        self._log = log.bind(channel=name)

    @property
    def events_url(self) -> str:
        """Where HTTP mode receives events (with the port actually bound), once started."""
        if self._runner is None:
            raise ChannelError(f"Slack channel {self.name!r} is not serving HTTP; start() it "
                               "in mode 'http' first")
        host, port = self._runner.addresses[0][:2]
        return f"http://{host}:{port}{self._path}"

    async def start(self, events: ChannelEvents) -> None:
        if self._session is not None:
            raise ChannelError(f"Slack channel {self.name!r} is already started")
        self._events = events
        self._closing = False
        self._session = aiohttp.ClientSession()
        self._client = self._new_client(self._bot_token or None)
        try:
            if self._oauth is None:
                directory = SlackDirectory(self._client)
                await self._learn_identity(self._client, directory)
                self._home = SlackWorkspace(self._team_id, self._client, directory)
            else:
                self._workspaces = await self._open_workspaces(self._oauth, self._client)
            app = self._build_app(self._client)
            if self.mode == "http":
                await self._serve_http(app)
            else:
                await self._connect_socket(app, self._client)
        except BaseException:
            await self.stop()
            raise
        self._log.info("slack_channel_started", mode=self.mode, team_id=self._team_id,
                       bot_user_id=self.identity.user_id if self.identity else None)

    async def stop(self) -> None:
        if self._session is None:
            return
        self._closing = True  # from now on events are refused, so Slack redelivers them
        await self._idle.wait()  # let events being recorded finish and be acknowledged
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._socket is not None:
            await self._socket.close_async()  # type: ignore[no-untyped-call]
            self._socket = None
        await self._session.close()
        self._session = self._client = None
        self._home = self._workspaces = None

    def _new_client(self, token: str | None) -> AsyncWebClient:
        """A Web API client on this channel's session, waiting out rate limits and retrying
        dropped connections and server errors."""
        return AsyncWebClient(
            token=token, base_url=self._api_base_url, session=self._session,
            retry_handlers=[
                AsyncRateLimitErrorRetryHandler(max_retry_count=self._rate_limit_retries),
                AsyncConnectionErrorRetryHandler(),
                AsyncServerErrorRetryHandler(),
            ],
        )

    async def _open_workspaces(self, oauth: SlackOAuth, client: AsyncWebClient
                               ) -> SlackWorkspaces:
        """The installed workspaces, their bots known as ours (a key that does not decrypt
        their tokens stops the start here, saying so)."""
        workspaces = SlackWorkspaces(oauth, client=client,
                                     new_client=lambda: self._new_client(None),
                                     channel=self.name, on_installed=self._installed)
        installed = await workspaces.installed()
        for workspace in installed:
            self._know_bot(workspace.bot_user_id)
        if self.identity is None:  # nobody installed it yet: the app itself, until then
            self.identity = BotIdentity(user_id=oauth.client_id)
        self._log.info("slack_workspaces", installed=len(installed),
                       install_path=oauth.install_path)
        return workspaces

    async def _check_installations(self, oauth: SlackOAuth) -> list[str]:
        """`threadline check` with oauth: the installed workspaces (in `installations`)."""
        workspaces = SlackWorkspaces(oauth, client=AsyncWebClient(base_url=self._api_base_url),
                                     new_client=lambda: self._new_client(None),
                                     channel=self.name, on_installed=lambda _: None)
        installed = await workspaces.installed()
        self.installations = tuple(
            f"{w.team_id} ({w.team_name or 'unnamed'}): bot {w.bot_user_id or 'none'}, "
            f"installed {w.installed_at:%Y-%m-%d %H:%M} UTC" for w in installed[:_LISTED])
        if len(installed) > _LISTED:
            self.installations += (f"and {len(installed) - _LISTED} more",)
        if installed:
            return []
        return [f"Slack channel {self.name!r}: no workspace has installed the app yet; open "
                f"{oauth.install_path} on this channel's public address to install it"]

    def _know_bot(self, *ids: str | None) -> None:
        """A workspace's bot user and bot ids: its own posts are dropped, and a mention of it
        addresses the channel's first agent."""
        new = [i for i in dict.fromkeys(ids) if i and i not in self._own_ids]
        if not new:
            return
        self._own_ids |= frozenset(new)
        waiting = self._oauth is not None and self.identity is not None and (
            self.identity.user_id == self._oauth.client_id)  # the app's id until a first install
        if self.identity is None or waiting:
            self.identity = BotIdentity(user_id=new[0], extra_ids=tuple(new[1:]))
        else:
            self.identity = replace(self.identity,
                                    extra_ids=(*self.identity.extra_ids, *new))

    def _installed(self, installation: Installation) -> None:
        self._know_bot(installation.bot_user_id, installation.bot_id)

    def team_of(self, message: StoredMessage) -> str:
        """The workspace a conversation belongs to (its id carries it)."""
        return team_of_conversation(message.conversation_id) or self._team_id

    async def _workspace_of(self, message: StoredMessage) -> SlackWorkspace:
        """Where a reply to `message` goes: the one workspace, or the message's own, with a
        token valid now (a permanent error when the workspace has no installation)."""
        if self._workspaces is None:
            return self._require_home()
        return await self._workspaces.authorized(self.team_of(message),
                                                 conversation_id=message.conversation_id)

    def _inbound_workspace(self, team_id: str, context: AsyncBoltContext) -> SlackWorkspace:
        """The workspace an event came from, with the token bolt authorized it with."""
        if self._workspaces is None or not context.token:
            return self._require_home()
        self._know_bot(context.bot_user_id, context.bot_id)
        return self._workspaces.workspace(team_id, context.token)

    async def check(self) -> list[str]:
        """Missing OAuth scopes that would leave the bot deaf or mute somewhere.

        Event subscriptions cannot be read through the Web API; if the bot hears nothing in
        channels, check that the app subscribes to `message.channels`, `message.groups` and
        `message.im` (Event Subscriptions > Subscribe to bot events). Before `start()` it asks
        `auth.test` itself, once, and learns who the bot is (`threadline check`).
        """
        if self._oauth is not None:
            return await self._check_installations(self._oauth)
        if self._client is None:
            client = AsyncWebClient(token=self._bot_token, base_url=self._api_base_url)
            response = await self._learn_identity(client, SlackDirectory(client))
        else:
            response = await self._client.auth_test()
        granted_header = response.headers.get("x-oauth-scopes")
        if granted_header is None:
            return []
        granted = {s.strip() for s in str(granted_header).split(",")}
        return [
            f"Slack channel {self.name!r}: the bot token lacks the {scope!r} scope, so the bot "
            f"{effect}; add it under OAuth & Permissions and reinstall the app."
            for scope, effect in _NEEDED_SCOPES.items() if scope not in granted
        ]

    def listeners(self) -> list[Listener]:
        """HTTP mode listens for events on `host:port`; Socket Mode dials out."""
        if self.mode != "http":
            return []
        return [Listener(self._host, self._port, f"channels.{self.name}.port",
                         f"channels.{self.name}.host")]

    def _opens_thread(self, inbound: StoredMessage) -> bool:
        return (inbound.metadata.thread_id is None and self.reply_in_thread
                and inbound.scope != "dm")

    def reply_conversation_id(self, inbound: StoredMessage) -> str:
        """A channel post answered in a new thread: the reply lives in that thread's history."""
        if not self._opens_thread(inbound) or not inbound.metadata.message_id:
            return inbound.conversation_id
        return thread_conversation_id(inbound.conversation_id, inbound.metadata.message_id)

    def reply_target(self, inbound: StoredMessage) -> tuple[str, str | None]:
        """The Slack channel id and the thread (None: the channel itself) a reply goes to."""
        meta = inbound.metadata
        channel_id = self.delivered_here(inbound)
        thread_ts = meta.message_id if self._opens_thread(inbound) else meta.thread_id
        return channel_id, thread_ts

    def _conversation_parts(self, conversation_id: str, *, workspace: bool = True
                            ) -> tuple[str, str | None]:
        return super()._conversation_parts(conversation_id, workspace=True)

    def link_to(self, message: StoredMessage) -> str | None:
        """The message's archive link (Slack opens it in the workspace of whoever clicks)."""
        meta = message.metadata
        if not meta.channel_id or not meta.message_id:
            return None
        link = f"https://slack.com/archives/{meta.channel_id}/p{meta.message_id.replace('.', '')}"
        return f"{link}?thread_ts={meta.thread_id}" if meta.thread_id else link

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[None]:
        """The bot token's workspace, to read earlier messages in, without taking events
        (the running bot, if any, keeps taking them)."""
        if self._session is not None:
            yield  # started: read with what it holds
            return
        if self._oauth is not None:
            raise ChannelError(f"Slack channel {self.name!r} serves the workspaces it is "
                               "installed in: their earlier messages are read by the running "
                               "bot, when an agent is first addressed (backfill: enabled)")
        self._session = aiohttp.ClientSession()
        try:
            self._client = self._new_client(self._bot_token or None)
            directory = SlackDirectory(self._client)
            await self._learn_identity(self._client, directory)
            self._home = SlackWorkspace(self._team_id, self._client, directory)
            yield
        finally:
            await self._session.close()
            self._session = self._client = self._home = None

    async def earlier_messages(self, message: StoredMessage, *, limit: int
                               ) -> list[StoredMessage]:
        """What was said in the thread (or channel) before `message`: `slack.earlier`."""
        workspace = await self._workspace_of(message)
        bound = self._log.bind(conversation_id=message.conversation_id)
        return await earlier_messages(
            message, client=workspace.client, team_id=self.team_of(message),
            own_ids=self._own_ids, allow_bots=self.allow_bots, limit=limit,
            make_turn=lambda post: self._turn(post, workspace, bound))

    async def person_timezone(self, message: StoredMessage) -> str | None:
        """The author's time zone from `users.info` (cached by the directory)."""
        if self._session is None or message.participant.kind != "user":
            return None
        try:
            workspace = await self._workspace_of(message)
        except ChannelError:
            return None
        return await workspace.directory.user_timezone(message.participant.id)

    def open_reply(self, inbound: StoredMessage, *, agent_name: str | None = None) -> LiveReply:
        async def client() -> AsyncWebClient:
            return (await self._workspace_of(inbound)).client

        return SlackLiveReply(channel=self, client=client, inbound=inbound,
                              agent_name=agent_name, gate=self._gate, log=self._log)

    def may_set_status(self, channel_id: str) -> bool:
        return channel_id not in self._no_status

    def status_refused(self, channel_id: str, error: Exception) -> None:
        self._no_status.add(channel_id)
        self._log.info("slack_status_refused", slack_channel=channel_id, error=_code(error),
                       outcome="replies there go on without an assistant status")

    def may_stream(self, channel_id: str) -> bool:
        return self.streaming and channel_id not in self._no_stream

    def stream_refused(self, channel_id: str, error: Exception) -> None:
        self._no_stream.add(channel_id)
        self._log.info("slack_stream_refused", slack_channel=channel_id, error=_code(error),
                       outcome="replies there are posted and updated as they are written")

    async def send_reply(
        self, inbound: StoredMessage, text: str, *, agent_name: str | None = None
    ) -> list[str]:
        return await self._post(inbound, text, agent_name=agent_name)

    async def send_choices(
        self, inbound: StoredMessage, text: str, choices: Sequence[CommandChoice], *,
        agent_name: str | None = None,
    ) -> list[str]:
        """The text with a button per choice under its last part (Block Kit actions)."""
        return await self._post(inbound, text, agent_name=agent_name, choices=choices)

    async def offer_feedback(self, reply: StoredMessage, platform_ids: Sequence[str],
                             choices: Sequence[CommandChoice]) -> bool:
        """Slack's feedback buttons under the reply's last message (chat.update with the same
        text as blocks); none when that part is too long for a section block."""
        agent_name = reply.participant.id
        parts = split_text(escape_outgoing(reply.content, broadcast=self.may_broadcast(
            reply, agent_name)), self.max_message_chars)
        blocks = feedback_blocks(parts[-1], choices)
        if blocks is None:
            return False
        client = (await self._workspace_of(reply)).client
        try:
            await client.chat_update(channel=self.delivered_here(reply), ts=platform_ids[-1],
                                     text=parts[-1], blocks=blocks)
        except SlackApiError as error:
            raise ChannelError(f"Slack channel {self.name!r}: adding feedback buttons to a reply "
                               f"in {reply.conversation_id!r} failed ({_code(error)})") from error
        except (aiohttp.ClientError, TimeoutError) as error:
            raise ChannelError(f"Slack channel {self.name!r}: adding feedback buttons to a reply "
                               f"in {reply.conversation_id!r} failed: {error!r}") from error
        return True

    async def _post(self, inbound: StoredMessage, text: str, *, agent_name: str | None,
                    choices: Sequence[CommandChoice] = ()) -> list[str]:
        parts = split_text(escape_outgoing(text, broadcast=self.may_broadcast(inbound, agent_name)),
                           self.max_message_chars)
        last = len(parts) - 1
        response_url = self._response_urls.pop(inbound.id, None)
        if response_url is not None:
            return await self._answer_command(inbound, parts, response_url,
                                              blocks=choice_blocks(parts[last], choices))
        client = (await self._workspace_of(inbound)).client
        channel_id, thread_ts = self.reply_target(inbound)
        username = agent_name if self.agent_name_as_username else None
        posted: list[str] = []
        for number, part in enumerate(parts):
            blocks = choice_blocks(part, choices) if number == last else None
            try:
                response = await client.chat_postMessage(
                    channel=channel_id, text=part, thread_ts=thread_ts, username=username,
                    blocks=blocks)
            except SlackApiError as error:
                raise self.reply_error(inbound, error, posted=len(posted),
                                       total=len(parts)) from error
            except (aiohttp.ClientError, TimeoutError) as error:
                raise ChannelError(
                    f"Slack channel {self.name!r}: posting to conversation "
                    f"{inbound.conversation_id!r} failed after {len(posted)} of {len(parts)} "
                    f"parts: {error!r}") from error
            posted.append(str(response["ts"]))
        return posted

    async def _upload(self, inbound: StoredMessage, file: TurnFile, data: bytes) -> list[str]:
        """Share a file where `inbound` was said with files upload v2 (an upload URL, the
        bytes, then completeUploadExternal in the channel and thread)."""
        client = (await self._workspace_of(inbound)).client
        channel_id, thread_ts = self.reply_target(inbound)
        try:
            response = await client.files_upload_v2(
                channel=channel_id, thread_ts=thread_ts, file=data, filename=file.name,
                title=file.name)
        except SlackApiError as error:
            raise self.reply_error(inbound, error, posted=0, total=1) from error
        except (aiohttp.ClientError, TimeoutError) as error:
            raise ChannelError(f"Slack channel {self.name!r}: sending {file.name!r} to "
                               f"conversation {inbound.conversation_id!r} failed: {error!r}"
                               ) from error
        return [str(f["id"]) for f in response.get("files") or ()]

    async def _answer_command(self, inbound: StoredMessage, parts: list[str], response_url: str,
                              *, blocks: list[dict[str, Any]] | None) -> list[str]:
        """Answer a command through its response_url (no message ts comes back)."""
        webhook = AsyncWebhookClient(response_url, session=self._session)
        for number, part in enumerate(parts):
            try:
                response = await webhook.send(
                    text=part, response_type="ephemeral",
                    blocks=blocks if number == len(parts) - 1 else None)
            except (aiohttp.ClientError, TimeoutError) as error:
                raise ChannelError(f"Slack channel {self.name!r}: answering a command in "
                                   f"conversation {inbound.conversation_id!r} failed: {error!r}"
                                   ) from error
            if response.status_code != 200:
                raise ChannelError(
                    f"Slack channel {self.name!r}: the response_url of a command in "
                    f"conversation {inbound.conversation_id!r} answered {response.status_code} "
                    f"({response.body[:200]!r}); it expires 30 minutes after the command")
        return []

    def reply_error(
        self, inbound: StoredMessage, error: SlackApiError, *, posted: int, total: int
    ) -> ChannelError:
        """Our error for a reply Slack refused: permanent or not, with what was posted."""
        code = str(error.response.get("error", "unknown_error"))
        where = (f"Slack channel {self.name!r}: posting a reply to conversation "
                 f"{inbound.conversation_id!r} failed with {code!r} after {posted} of {total} "
                 "parts were posted")
        self._log.error("slack_reply_failed", conversation_id=inbound.conversation_id,
                        error=code, posted=posted, total=total)
        if code in PERMANENT_ERRORS:
            return ChannelPermanentError(f"{where}; retrying cannot help (invite the bot to the "
                                         "channel, or check the token)")
        return ChannelError(f"{where}; it may succeed later")

    def _require_home(self) -> SlackWorkspace:
        if self._home is None:
            raise ChannelError(f"Slack channel {self.name!r} is not started (or serves many "
                               "workspaces); call start() first")
        return self._home

    async def _learn_identity(self, client: AsyncWebClient, directory: SlackDirectory
                              ) -> AsyncSlackResponse:
        """Who the bot is (`auth.test`, then its display name); returns the auth answer."""
        try:
            auth = await client.auth_test()
        except SlackApiError as error:
            # A server that is not Slack's answers with text, not a JSON object.
            data = error.response.data
            code = data.get("error") if isinstance(data, dict) else None
            if code in _AUTH_ERRORS:
                raise ChannelAuthError(
                    f"Slack channel {self.name!r}: auth.test rejected bot_token ({code}); "
                    "copy the Bot User OAuth Token (xoxb-) again") from error
            raise ChannelError(self._auth_test_refused(code, error.response.status_code)
                               ) from error
        except (aiohttp.ClientError, OSError) as error:
            raise ChannelError(unreachable(
                where=f"Slack channel {self.name!r}", service="the Slack Web API",
                action="ask who the bot is (auth.test)", url=self._api_base_url,
                setting="api_base_url" if self._api_base_url_set else None, error=error),
            ) from error
        user_id = str(auth["user_id"])
        bot_id = auth.get("bot_id")
        self._team_id = str(auth.get("team_id") or "")
        self._own_ids = frozenset(i for i in (user_id, bot_id) if i)
        names = await directory.user_names([user_id])
        self.identity = BotIdentity(
            user_id=user_id, username=auth.get("user"),
            display_name=names[user_id] if names[user_id] != user_id else None,
            extra_ids=(str(bot_id),) if bot_id else (),
        )
        return auth

    def _auth_test_refused(self, code: str | None, status: int) -> str:
        """Why `auth.test` failed when it was not the token: Slack's error code, or an HTTP
        answer without one (an address that is not the Web API)."""
        where = f"Slack channel {self.name!r}"
        if code:
            return (f"{where}: Slack refused auth.test with {code!r}; the auth.test page of "
                    "Slack's API reference says what it means")
        host = host_of(self._api_base_url)
        if self._api_base_url_set:
            return (f"{where}: {host} answered auth.test with HTTP {status} and no Slack "
                    f"answer, so it is not the Slack Web API; check the api_base_url setting "
                    f"({self._api_base_url}): it is the Web API root, ending in /api/")
        return (f"{where}: {host} answered auth.test with HTTP {status} and no Slack answer; "
                "Slack may be having trouble (status.slack.com): try again later")

    def _build_app(self, client: AsyncWebClient) -> AsyncApp:
        # Requests are verified by `slack.requests` before bolt parses them, so bolt does not.
        workspaces = self._workspaces
        # bolt's own authorize class answers None for a workspace it does not know, which its
        # AsyncApp annotation leaves out.
        authorize: Any = workspaces.authorize if workspaces else None
        app = AsyncApp(client=client, signing_secret=self._signing_secret or None,
                       request_verification_enabled=False, process_before_response=True,
                       name=f"threadline-{self.name}", authorize=authorize,
                       oauth_flow=workspaces.flow if workspaces else None)
        if workspaces is not None:
            app.event("app_uninstalled")(workspaces.on_uninstalled)
            app.event("tokens_revoked")(workspaces.on_tokens_revoked)
        app.event("message")(self._on_message_event)
        app.event("app_mention")(self._drop_app_mention)
        app.command(re.compile(r"^/"))(self._on_slash_command)
        app.action(re.compile(f"^{CHOICE_ACTION}"))(self._on_choice)
        app.event("assistant_thread_started")(self._on_assistant_thread)
        app.event("assistant_thread_context_changed")(self._on_assistant_thread)
        return app

    async def _serve_http(self, app: AsyncApp) -> None:
        verifier = SignatureVerifier(self._signing_secret)

        async def receive(request: web.Request) -> web.Response:
            body = await request.read()
            refusal = unverified(verifier, body, request.headers, channel=self.name)
            if refusal is not None:
                return refusal
            parsed = bolt_request(body, request, channel=self.name)
            if isinstance(parsed, web.Response):
                return parsed
            return await to_aiohttp_response(await app.async_dispatch(parsed))

        server = web.Application()
        server.router.add_post(self._path, receive)
        if self._workspaces is not None:
            self._workspaces.serve_installs(server)
        self._runner = web.AppRunner(server, access_log=None)
        await self._runner.setup()
        await serve(self._runner, self.listeners()[0])
        self._log.info("slack.listening", url=self.events_url)  # the port bound, for port 0

    async def _connect_socket(self, app: AsyncApp, client: AsyncWebClient) -> None:
        # Ask for the WebSocket URL ourselves: the SDK's connect() retries a rejected app
        # token forever, and start() should fail with a clear error instead.
        try:
            opened = await client.apps_connections_open(app_token=self._app_token)
        except SlackApiError as error:
            code = error.response.get("error")
            raise ChannelAuthError(
                f"Slack channel {self.name!r}: apps.connections.open rejected app_token "
                f"({code}); use an xapp- token with the connections:write scope") from error
        self._socket = AsyncSocketModeHandler(app, app_token=self._app_token, web_client=client)
        self._socket.client.wss_uri = str(opened["url"])
        try:
            async with asyncio.timeout(self._connect_timeout):
                await self._socket.connect_async()  # type: ignore[no-untyped-call]
        except TimeoutError as error:
            raise ChannelError(f"Slack channel {self.name!r}: no Socket Mode connection after "
                               f"{self._connect_timeout:.0f} s") from error

    def receiving(self) -> str | None:
        if self.identity is None:
            return "not connected"
        if self._socket is not None:
            client = self._socket.client
            session = client.current_session
            if client.closed or session is None or session.closed:
                return "not receiving: the Socket Mode connection is down (reconnecting)"
        elif self._runner is None:
            return "not receiving: the events endpoint is not served"
        return None

    async def _drop_app_mention(self) -> None:
        """Acked by bolt and ignored: the same post also arrives as a `message` event."""

    @contextmanager
    def _handling(self) -> Iterator[None]:
        """Count a listener in flight, so `stop` lets it finish and acknowledge its event."""
        self._in_flight += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._in_flight -= 1
            if not self._in_flight:
                self._idle.set()

    async def _on_message_event(self, body: dict[str, Any], context: AsyncBoltContext
                                ) -> BoltResponse | None:
        """bolt's listener: None acknowledges the event, a 5xx response withholds the ack."""
        if self._closing:
            return BoltResponse(status=503, body="stopping; deliver again later")
        event = body.get("event")
        team_id = str(body.get("team_id") or self._team_id)
        event_id = str(body.get("event_id") or "")
        workspace = self._inbound_workspace(team_id, context)
        try:
            change = classify(event, team_id=team_id, own_ids=self._own_ids,
                              allow_bots=self.allow_bots) if isinstance(event, dict) else None
        except Exception as error:  # fields missing or of the wrong kind: acked and skipped
            self.skip_event(event_id, error)
            return None
        if change is None:
            return None
        with self._handling():
            return await self._deliver(change, event_id=event_id, workspace=workspace)

    async def _on_assistant_thread(self, body: dict[str, Any], context: AsyncBoltContext
                                   ) -> BoltResponse | None:
        """An assistant thread started or its context changed (see the module docstring)."""
        if self._closing:
            return BoltResponse(status=503, body="stopping; deliver again later")
        event = body.get("event") or {}
        team_id = str(body.get("team_id") or self._team_id)
        thread = assistant_thread(event, team_id=team_id)
        events = self._events
        if thread is None or events is None:
            return None
        workspace = self._inbound_workspace(team_id, context)
        directory = workspace.directory
        with self._handling():
            if event.get("type") == "assistant_thread_started":
                await self._suggest_prompts(thread, workspace.client)
            turn = context_turn(thread, event_ts=str(event.get("event_ts") or ""),
                                team_id=team_id,
                                channel_name=await self._channel_name(thread, directory))
            if turn is None:
                return None
            try:
                await events.on_context(turn)
            except Exception:
                self._log.exception("slack_context_not_recorded",
                                    conversation_id=thread.conversation_id,
                                    outcome="answered 500 so Slack delivers it again")
                return BoltResponse(status=500, body="not recorded; deliver again later")
        return None

    async def _channel_name(self, thread: AssistantThread, directory: SlackDirectory
                            ) -> str | None:
        """The name of the channel the person looks at, if it comes within the budget."""
        if thread.context_channel_id is None:
            return None
        try:
            async with asyncio.timeout(_LOOKUP_BUDGET_SECONDS):
                return await directory.channel_name(thread.context_channel_id)
        except TimeoutError:
            return None

    async def _suggest_prompts(self, thread: AssistantThread, client: AsyncWebClient) -> None:
        """The configured prompts under a new assistant thread (a failure only loses them)."""
        if not self._assistant_prompts:
            return
        try:
            await client.assistant_threads_setSuggestedPrompts(
                channel_id=thread.channel_id, thread_ts=thread.thread_ts,
                prompts=self._assistant_prompts)
        except (SlackApiError, aiohttp.ClientError, TimeoutError) as error:
            self._log.warning("slack_prompts_not_set", conversation_id=thread.conversation_id,
                              error=str(error))

    async def _on_slash_command(self, ack: AsyncAck, command: dict[str, Any]) -> None:
        """bolt's slash command listener: record the command turn, then ack (see the module
        docstring); the answer comes later through the command's response_url."""
        team_id = str(command.get("team_id") or self._team_id)
        await self._take_command(ack, slash_command_turn(command, team_id=team_id),
                                 response_url=command.get("response_url"))

    async def _on_choice(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """A button of a command's answer was pressed: its command, sent by whoever pressed."""
        team_id = str((body.get("team") or {}).get("id") or self._team_id)
        await self._take_command(ack, choice_turn(body, team_id=team_id),
                                 response_url=body.get("response_url"))

    async def _take_command(self, ack: AsyncAck, turn: StoredMessage | None, *,
                            response_url: object) -> None:
        """Record a command turn, then ack; its answer goes to `response_url` when given."""
        events = self._events
        if events is None or self._closing or turn is None:
            await ack(text="Threadline is restarting or could not read this command; please "
                           "send it again in a moment.")
            return
        with self._handling():
            if response_url:
                self._response_urls[turn.id] = str(response_url)
            while len(self._response_urls) > _MAX_PENDING_COMMANDS:
                self._response_urls.popitem(last=False)
            try:
                await events.on_message(turn, self)
            except Exception as error:
                self._response_urls.pop(turn.id, None)
                report = (self._log.warning if isinstance(error, TurnNotRecordedError)
                          else self._log.exception)
                report("slack_command_not_recorded", conversation_id=turn.conversation_id,
                       error=str(error), outcome="acked with a message asking to send it again")
                await ack(text="This command could not be recorded, so it was not run; please "
                               "send it again in a moment.")
                return
            await ack()

    async def _deliver(self, change: SlackChange, *, event_id: str, workspace: SlackWorkspace
                       ) -> BoltResponse | None:
        events, directory = self._events, workspace.directory
        if events is None:
            return BoltResponse(status=503, body="not started")
        bound = self._log.bind(conversation_id=change.conversation_id, event_id=event_id)
        if isinstance(change, SlackPost):
            if change.stored_id in self._posts_in_flight:
                return BoltResponse(status=503, body="being taken in; deliver again later")
            if not self._taken_posts.first_sighting(change.stored_id):
                bound.info("slack_retry_already_taken", message_id=change.stored_id)
                return None
            self._posts_in_flight.add(change.stored_id)
            try:
                refusal = await self._take_post(change, workspace, events, bound,
                                                event_id=event_id)
            finally:
                self._posts_in_flight.discard(change.stored_id)
            if refusal is not None:
                self._taken_posts.forget(change.stored_id)  # so Slack's retry takes it
            return refusal
        if event_id and not self._applied_changes.first_sighting(event_id):
            bound.debug("slack_duplicate_change", change=type(change).__name__)
            return None
        try:
            if isinstance(change, SlackEdit):
                names = await directory.user_names(mentioned_user_ids(change.text))
                await events.on_edit(change.conversation_id, change.stored_id,
                                     render_mentions(change.text, names))
            else:
                await events.on_delete(change.conversation_id, change.stored_id)
        except Exception:
            self._applied_changes.forget(event_id)  # so Slack's retry applies it
            bound.exception("slack_change_failed", change=type(change).__name__,
                            outcome="answered 500 so Slack delivers it again")
            return BoltResponse(status=500, body="not applied; deliver again later")
        return None

    async def _take_post(self, post: SlackPost, workspace: SlackWorkspace,
                         events: ChannelEvents, bound: Any, *, event_id: str
                         ) -> BoltResponse | None:
        """Record a post with its files kept (not read: see `channels.files`); None acks it."""
        try:
            turn = await self._turn(post, workspace, bound)
        except Exception as error:  # an event we cannot read: acked and skipped
            self.skip_event(event_id or post.stored_id, error)
            return None
        try:
            await events.on_message(turn, self)
        except TurnNotRecordedError as error:
            bound.warning("slack_turn_not_recorded", message_id=post.stored_id,
                          error=str(error), outcome="answered 503 so Slack delivers it again")
            return BoltResponse(status=503, body="not recorded; deliver again later")
        except Exception:
            bound.exception("slack_event_failed", message_id=post.stored_id,
                            outcome="answered 500 so Slack delivers it again")
            return BoltResponse(status=500, body="not recorded; deliver again later")
        return None

    async def _turn(self, post: SlackPost, workspace: SlackWorkspace, bound: Any
                    ) -> StoredMessage:
        """The normalized turn, with display names if they come within the lookup budget."""
        directory = workspace.directory
        names: dict[str, str] = {}
        channel_name = None
        try:
            async with asyncio.timeout(_LOOKUP_BUDGET_SECONDS):
                names = await directory.user_names(names_to_look_up(post))
                channel_name = (None if post.scope == "dm"
                                else await directory.channel_name(post.channel_id))
        except TimeoutError:
            bound.warning("slack_names_late", budget_seconds=_LOOKUP_BUDGET_SECONDS,
                          outcome="turn recorded with user ids instead of names")
        turn = to_stored_message(post, names=names, channel_name=channel_name)
        return await take_in(turn, [self._incoming(f, workspace.client) for f in post.files],
                             self.file_intake)

    def _incoming(self, shared: Mapping[str, Any], client: AsyncWebClient) -> IncomingFile:
        """A shared file, fetched from its `url_private` with the workspace's bot token
        (Slack's rule), only from Slack's file hosts (the URL comes with the event)."""
        url = str(shared.get("url_private_download") or shared.get("url_private") or "")

        async def fetch(limit: int) -> bytes:
            if not url:
                raise ChannelError(f"Slack file {shared.get('id')!r} has no url_private")
            return await fetch_file(url, hosts=self._file_hosts, limit=limit,
                                    credential={"Authorization": f"Bearer {client.token}"})

        return IncomingFile(name=str(shared.get("name") or shared.get("id") or "file"),
                            platform_id=str(shared.get("id") or ""),
                            declared_size=int(shared.get("size") or 0), fetch=fetch)


def _code(error: Exception) -> str:
    if isinstance(error, SlackApiError):
        return str(error.response.get("error", "unknown_error"))
    return repr(error)
