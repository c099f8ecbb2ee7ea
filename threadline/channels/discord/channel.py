"""The Discord channel: one bot token's gateway connection, turned into Threadline events.

It connects with the intents a conversational bot needs: guilds, guild messages, direct messages
and message content. Message content is privileged: enable "Message Content Intent" under Bot
in the Discord Developer Portal, or Discord refuses the connection (we then fail at `start` with
that instruction) and, for bots in 100+ servers, the app must be approved for it.

Conversation ids, stored ids and mention handling are described in `discord.normalize`.

Acknowledgement: the gateway has none, and Discord never delivers a message event again
(a resume replays only what the connection missed). `on_message` is awaited as each event
arrives; a replayed copy reaches it again and the receiver drops it by turn id. When it raises
`TurnNotRecordedError` the message is lost to the history: that is logged as an error naming
the message, its conversation and what to do.
Catching up: what was said while no process listened (a restart, a crash, a message that
reached a process killed before it recorded it) is never sent to a new session. On each new
session (READY) the channel reads, in every conversation heard within `catch_up` seconds, the
platform history after the newest turn a person said there (`channels.catch_up`), and hands
over what it finds as events; the receiver drops what it already has. Messages older than
`catch_up` are left unanswered. With `shards` set, each shard's session catches up its own
servers' conversations: a shard taken over from a dead replica answers what was said while
nobody held it.
Application commands (`/forget`, ...) are registered when the gateway is ready and answered
through their interaction (see `discord_commands`). An invocation is deferred at once (Discord
wants an answer within 3 s and never sends it again, so there is no redelivery to keep), then
recorded; the pipeline's answer is the deferred reply's follow-up. After a restart, when the
interaction is no longer known, the answer is posted in the channel.
Rate limits are waited out by discord.py's own per-route buckets; Forbidden, NotFound and other
4xx answers become `ChannelPermanentError`. While an agent works the channel shows typing;
with `streaming` on, replies are shown as they are written (`discord.live`).

With `shards` set the channel's own client stays on REST and this replica connects only the
shards it holds, one client each (`discord.shards`); an event of a shard it no longer surely
holds is dropped, its new holder answers it.

`api_base_url` (like `https://discord.com/api/v10`) and `gateway_url` (like
`wss://gateway.discord.gg/`) exist for proxies and tests. discord.py keeps both process-wide,
so two channels asking for different values are refused at start (see `discord.client`).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

import discord
import structlog

from threadline.channels.base import BotIdentity, Channel, ChannelEvents, LiveReply
from threadline.channels.discord.client import (
    BROADCAST,
    ENDPOINTS,
    build_client,
    guard_parsers,
    invite_url,
    shard_of,
)
from threadline.channels.discord.commands import (
    choice_view,
    command_tree,
    command_turn,
    pressed_command,
)
from threadline.channels.discord.live import DiscordLiveReply
from threadline.channels.discord.normalize import (
    CHANNEL_TYPE,
    DM_GUILD,
    DiscordLocation,
    dm_location,
    guild_part,
    incoming_files,
    locate,
    render_text,
    stored_id,
    to_stored_message,
)
from threadline.channels.discord.shards import DiscordShards
from threadline.channels.fetch_policy import FileHosts
from threadline.channels.files import take_in
from threadline.channels.intake import RecentKeys
from threadline.channels.live import RateGate
from threadline.channels.shard_leases import ShardLeases
from threadline.channels.supervise import SupervisedListener
from threadline.channels.text import split_text
from threadline.channels.unreachable import unreachable
from threadline.errors import (
    ChannelAuthError,
    ChannelError,
    ChannelPermanentError,
    ConfigError,
    TurnNotRecordedError,
)
from threadline.history.files import TurnFile
from threadline.history.model import StoredMessage, utc_now

if TYPE_CHECKING:
    from threadline.commands import CommandChoice

log = structlog.get_logger("threadline.channels.discord")

_ACCEPTED_TYPES = frozenset({discord.MessageType.default, discord.MessageType.reply})
# The most messages one conversation's catch-up reads (Discord pages them 100 at a time).
CATCH_UP_MESSAGES = 200
# Where attachments are served (the URLs an event carries are signed for these hosts).
DISCORD_FILE_HOSTS = ("cdn.discordapp.com", "media.discordapp.net")
# Invocations waiting for their answer (an interaction token lasts 15 minutes).
_MAX_PENDING_COMMANDS = 1000


def message_content_help(name: str) -> str:
    return (
        f"Discord channel '{name}': the bot is not allowed the Message Content intent, so it "
        "would see empty text in servers and stay silent there. Enable it in the Discord "
        "Developer Portal: Applications -> your app -> Bot -> Privileged Gateway Intents -> "
        "Message Content Intent (bots in 100+ servers need Discord's approval for it)."
    )


class DiscordChannel(Channel):
    """A Discord bot as a Threadline channel (see the module docstring)."""

    channel_type = CHANNEL_TYPE
    max_message_chars = 2000
    no_earlier_messages = None  # a channel's history (`earlier_messages`)

    def __init__(
        self,
        *,
        token: str,
        name: str = "discord",
        allow_bots: bool = False,
        api_base_url: str | None = None,
        gateway_url: str | None = None,
        file_hosts: Sequence[str] = (),
        shards: int | Literal["auto"] | None = None,
        shard_leases: ShardLeases | None = None,
        shard_lease_seconds: float = 15.0,
        guild_ready_timeout: float = 2.0,
        start_timeout: float = 60.0,
        dedup_size: int = 10_000,
        streaming: bool = True,
        broadcasters: Iterable[str] = (),
        stream_interval: float = 1.0,
        catch_up: float = 900.0,
    ) -> None:
        """`shards` splits the gateway into that many shards ("auto": as many as Discord
        recommends; Discord requires shards from 2,500 servers), this replica holding its
        share of them through `shard_leases` (the backend's; None: this process holds them
        all) for `shard_lease_seconds` at a time (see `discord.shards`).
        Attachments are fetched from Discord's CDN, or a host `file_hosts` names (a proxy;
        see `channels.fetch_policy`), and never past the file limit.
        `guild_ready_timeout` is how long start waits for more servers to arrive after the last;
        `start_timeout` how long it waits for the gateway in all. `streaming` shows replies as
        they are written, editing at most once per `stream_interval` seconds per channel
        (see `discord.live`). `catch_up` is how far back, in seconds, a new session reads
        what it was not sent (0: not at all; see the module docstring).
        """
        super().__init__(name=name, allow_bots=allow_bots, streaming=streaming,
                         broadcasters=broadcasters)
        if not isinstance(token, str) or not token.strip():
            raise ConfigError(
                f"Discord channel '{name}': the `token` setting is empty; copy the bot token "
                "from the Discord Developer Portal (Applications -> your app -> Bot)."
            )
        if stream_interval <= 0:
            raise ConfigError(f"Discord channel '{name}': stream_interval must be > 0 seconds, "
                              f"got {stream_interval}")
        if catch_up < 0:
            raise ConfigError(f"Discord channel '{name}': catch_up must be 0 (off) or more "
                              f"seconds, got {catch_up}")
        self._catch_up = timedelta(seconds=catch_up)
        self._token = token.strip()
        self._gate = RateGate(stream_interval)
        self._api_base_url = api_base_url
        self._gateway_url = gateway_url
        self._file_hosts = FileHosts.of(channel=name, platform_hosts=DISCORD_FILE_HOSTS,
                                        configured=file_hosts,
                                        setting=f"channels.{name}.file_hosts")
        if isinstance(shards, int) and shards < 1:
            raise ConfigError(f"Discord channel '{name}': shards must be 1 or more (or auto), "
                              f"got {shards}")
        self._shards_wanted = shards
        self._shard_leases = shard_leases
        self._shard_lease_seconds = shard_lease_seconds
        self._shards: DiscordShards | None = None
        self._guild_ready_timeout = guild_ready_timeout
        self._start_timeout = start_timeout
        self._applied_changes = RecentKeys(dedup_size)  # edits and deletions seen
        self._log = log.bind(channel=name)
        self._client: discord.Client | None = None
        self._tree: discord.app_commands.CommandTree[discord.Client] | None = None
        self._events: ChannelEvents | None = None
        self._listener: SupervisedListener | None = None
        self._ready = asyncio.Event()
        self._in_flight: set[asyncio.Task[Any]] = set()
        # discord.py runs each event in its own task; edits and deletions take this FIFO lock
        # in arrival order so two quick edits of one message reach the store in order.
        self._change_order = asyncio.Lock()
        self._closing = False
        self._interactions: OrderedDict[str, discord.Interaction] = OrderedDict()
        self._catching_up_on: dict[int | None, asyncio.Task[None]] = {}  # by shard
        # When the first message each shard's newest connection was sent live was said.
        self._first_live: dict[int | None, datetime] = {}

    # -- lifecycle -------------------------------------------------------------------------

    async def _logged_in_client(self) -> discord.Client:
        if self._client is not None:
            return self._client
        ENDPOINTS.claim(api_base_url=self._api_base_url, gateway_url=self._gateway_url,
                        name=self.name)
        client = build_client(self, shard=None, guild_ready_timeout=self._guild_ready_timeout)
        self._client = client
        guard_parsers(client, self.skip_event)
        if self.commands:
            self._tree = command_tree(client, self.commands, self._handle_command)
        try:
            await client.login(self._token)
        except discord.LoginFailure as exc:
            await self._close_client()
            raise ChannelAuthError(
                f"Discord channel '{self.name}': Discord rejected the bot token (401). Reset it "
                "in the Developer Portal (Bot -> Reset Token) and update the `token` setting."
            ) from exc
        except discord.HTTPException as exc:
            await self._close_client()
            raise ChannelError(
                f"Discord channel '{self.name}': Discord refused the log-in (HTTP {exc.status}: "
                f"{exc.text or exc}); try again later, or check the `api_base_url` setting if "
                "you set it."
            ) from exc
        except OSError as exc:  # aiohttp's connection errors are OSErrors
            await self._close_client()
            raise ChannelError(unreachable(
                where=f"Discord channel '{self.name}'", service="the Discord API",
                action="log in", url=self._api_base_url or discord.http.Route.BASE,
                setting="api_base_url" if self._api_base_url else None, error=exc)) from exc
        except BaseException:  # cancelled (check's time limit): close the HTTP session too
            await self._close_client()
            raise
        return client

    async def start(self, events: ChannelEvents) -> None:
        """Log in, open the gateway and return once Discord has sent the bot's servers."""
        if self._listener is not None or self._shards is not None:
            raise ChannelError(f"Discord channel '{self.name}' is already started")
        client = await self._logged_in_client()
        self._events = events
        self._closing = False
        if self._shards_wanted is not None:
            await self._start_shards(client, self._shards_wanted)
            return
        # The gateway task is supervised: an exception discord.py does not reconnect on
        # (a frame it cannot decode) ends it, and it is started again with backoff.
        self._listener = SupervisedListener(
            channel=self.name, listen=lambda: client.connect(reconnect=True),
            before_restart=self._drop_dead_gateway)
        self._listener.start()
        runner = self._listener.task
        assert runner is not None
        ready = asyncio.create_task(self._ready.wait())
        await asyncio.wait({runner, ready}, timeout=self._start_timeout,
                           return_when=asyncio.FIRST_COMPLETED)
        if not ready.done():
            ready.cancel()
            await self._fail_start(runner)
        await self._register_commands()
        self._log.info("discord.started", user_id=self._bot_user_id, guilds=len(client.guilds))

    async def _start_shards(self, client: discord.Client, wanted: int | Literal["auto"]
                            ) -> None:
        """Hold this replica's share of the shards; the channel's own client stays on REST."""
        self._connected()  # the log-in said who the bot is
        try:
            count = wanted if wanted != "auto" else (await client.http.get_bot_gateway())[0]
        except discord.GatewayNotFound as exc:
            await self._close_client()
            raise ChannelError(
                f"Discord channel '{self.name}': Discord did not say how many shards to use "
                f"(GET /gateway/bot failed: {exc.__cause__ or exc}); try again, or set "
                "`shards:` to a number.") from exc
        self._shards = DiscordShards(
            self, token=self._token, on_command=self._handle_command, leases=self._shard_leases,
            shard_count=count, lease_seconds=self._shard_lease_seconds,
            guild_ready_timeout=self._guild_ready_timeout, start_timeout=self._start_timeout)
        await self._shards.holder.start()
        await self._register_commands()
        self._log.info("discord.started", user_id=self._bot_user_id, shard_count=count,
                       shards=self._shards.holder.held, replica=self._shards.holder.replica)

    def holding(self) -> dict[str, object] | None:
        return self._shards.holding() if self._shards is not None else None

    def _ours(self, guild_id: int | None) -> bool:
        """Whether this replica handles the server's events (always, unsharded)."""
        return self._shards is None or self._shards.ours(guild_id)

    async def _drop_dead_gateway(self) -> None:
        """Close the websocket a dead gateway run left open (its heartbeat thread with it)."""
        client = self._client
        ws = getattr(client, "ws", None) if client is not None else None
        if ws is not None and not ws.socket.closed:
            await ws.close(code=4000)

    def receiving(self) -> str | None:
        if self._shards is not None:
            return self._shards.problem()
        if self._listener is None or self._client is None or self._client.is_closed():
            return "not connected"
        return self._listener.problem()

    async def _register_commands(self) -> None:
        """Make the application's commands the team's (one bulk overwrite, global scope)."""
        if self._tree is None:
            return
        try:
            await self._tree.sync()
        except (discord.HTTPException, discord.app_commands.AppCommandError) as exc:
            self._log.error("discord.commands_not_registered", error=str(exc),
                            what_to_do="invite the bot with the applications.commands scope; "
                                       "typed commands still work")

    def _connected(self) -> None:
        """READY told us who we are: from now on events can be placed and filtered."""
        user = self._client.user if self._client is not None else None
        if user is None:
            return
        self.identity = BotIdentity(user_id=str(user.id), username=user.name,
                                    display_name=user.global_name)

    async def _fail_start(self, runner: asyncio.Task[None]) -> None:
        listener, self._listener = self._listener, None
        timed_out = not runner.done()
        if listener is not None:
            listener.halt()
        await self._close_client()
        if listener is not None:
            await listener.stop()
        if timed_out:
            raise ChannelError(
                f"Discord channel '{self.name}': the gateway was not ready after "
                f"{self._start_timeout:g} s; check the network or the `gateway_url` setting."
            )
        error = runner.exception() if not runner.cancelled() else None
        if isinstance(error, discord.PrivilegedIntentsRequired):
            raise ConfigError(message_content_help(self.name)) from error
        if isinstance(error, discord.ConnectionClosed) and error.code == 4004:
            raise ChannelAuthError(
                f"Discord channel '{self.name}': the gateway rejected the bot token (4004); "
                "reset it in the Developer Portal and update the `token` setting."
            ) from error
        raise ChannelError(
            f"Discord channel '{self.name}': the gateway connection ended before it was ready "
            f"({error!r}); check the network or the `gateway_url` setting."
        ) from error

    async def stop(self) -> None:
        """Stop taking events, let handlers in flight finish, then close the connection."""
        self._closing = True
        # A catch-up stopped mid-way reads the rest at the next start (within `catch_up`).
        catching_up, self._catching_up_on = list(self._catching_up_on.values()), {}
        for task in catching_up:
            task.cancel()
        await asyncio.gather(*catching_up, return_exceptions=True)
        current = asyncio.current_task()
        pending = [task for task in self._in_flight if task is not current]
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        shards, self._shards = self._shards, None
        if shards is not None:
            await shards.holder.stop()
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.halt()
        await self._close_client()
        if listener is not None:
            await listener.stop(grace=10)
        self._ready.clear()

    async def _close_client(self) -> None:
        client, self._client = self._client, None
        self._tree = None
        if client is not None:
            await client.close()
            ENDPOINTS.release(api_base_url=self._api_base_url, gateway_url=self._gateway_url)

    async def check(self) -> list[str]:
        """Problems that would keep the bot silent: a missing intent, no servers to talk in.

        Before `start()` it logs in (which asks who the bot is), checks, and logs out again.
        """
        started = self._listener is not None
        client = await self._logged_in_client()
        try:
            if self.identity is None:
                self._connected()
            return self._problems(client)
        finally:
            if not started:
                await self._close_client()

    def _problems(self, client: discord.Client) -> list[str]:
        if client.application_id is not None:
            self.invite_url = invite_url(client.application_id)
        problems = []
        flags = client.application_flags
        if not (flags.gateway_message_content or flags.gateway_message_content_limited):
            problems.append(message_content_help(self.name))
        application = client.application
        servers = len(client.guilds) if client.is_ready() else (
            application.approximate_guild_count if application is not None else 0)
        if servers == 0:
            problems.append(
                f"Discord channel '{self.name}': the bot is in no servers, so only DMs reach "
                f"it. Open {self.invite_url or 'its invite URL'} in a browser and pick a server "
                "(it asks for the bot and applications.commands scopes and the permissions "
                "View Channels, Send Messages, Send Messages in Threads, Read Message History)."
            )
        return problems

    # -- inbound ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def _handling(self, event: str, **context: object) -> Iterator[dict[str, object]]:
        """Track a running handler so `stop` can let it finish, and log what it fails on.

        Handlers add what they learn (the conversation id) to the yielded context, so a failure
        is logged with it; discord.py would otherwise log a bare traceback.
        """
        task = asyncio.current_task()
        if task is not None:
            self._in_flight.add(task)
        try:
            yield context
        except Exception as error:
            self._log.exception("discord.event_failed", discord_event=event, **context)
            self.skip_event(f"{event} {context.get('message_id')!r}", error)
        finally:
            if task is not None:
                self._in_flight.discard(task)

    def _taking_events(self) -> bool:
        return not self._closing and self._events is not None and self.identity is not None

    def _from_someone_we_hear(self, author: discord.abc.User) -> bool:
        assert self.identity is not None
        if str(author.id) == self.identity.user_id:
            return False
        return self.allow_bots or not author.bot

    async def _locate(self, channel: object, *, guild_id: int | None,
                      channel_id: int) -> DiscordLocation:
        location = locate(channel, guild_id=guild_id, channel_id=channel_id)
        if location is None and self._client is not None:
            # A thread discord.py has not cached: one fetch tells us its parent.
            fetched = await self._client.fetch_channel(channel_id)
            location = locate(fetched, guild_id=guild_id, channel_id=channel_id)
        if location is None:
            raise ChannelError(f"Discord channel '{self.name}': cannot place channel "
                               f"{channel_id} of server {guild_id} in a conversation")
        return location

    async def _handle_message(self, message: discord.Message) -> None:
        with self._handling("message", message_id=message.id) as context:
            if (not self._taking_events() or message.type not in _ACCEPTED_TYPES
                    or not self._ours(message.guild.id if message.guild else None)
                    or not self._from_someone_we_hear(message.author)):
                return
            location = await self._locate(
                message.channel, guild_id=message.guild.id if message.guild else None,
                channel_id=message.channel.id)
            context["conversation_id"] = location.conversation_id
            inbound = await take_in(
                to_stored_message(message, location=location, bot_user_id=self._bot_user_id),
                incoming_files(message, self._file_hosts), self.file_intake)
            assert self._events is not None
            try:
                await self._events.on_message(inbound, self)
            except TurnNotRecordedError as error:
                self._log.error(
                    "discord.message_lost", conversation_id=location.conversation_id,
                    message_id=message.id, author_id=message.author.id,
                    jump_url=message.jump_url, error=str(error),
                    outcome="not recorded and not answered; Discord does not deliver it again",
                    what_to_do="fix the store (see the error), then ask the author to send "
                               "the message again or answer it by hand")

    def _connecting(self, shard: int | None) -> None:
        """A connection of `shard` opens (a new session or a resumed one): its events follow."""
        self._first_live.pop(shard, None)

    def _heard_live(self, shard: int | None, message: discord.Message) -> None:
        """A message the gateway sent: those said before the first are what catch-up reads."""
        self._first_live.setdefault(shard, message.created_at)

    def _catching_up(self, shard: int | None) -> None:
        """A new session began (of `shard`, None unsharded): read what it will not be sent,
        beside the live events."""
        if self._catch_up and self._taking_events():
            earlier = self._catching_up_on.pop(shard, None)
            if earlier is not None:
                earlier.cancel()
            self._catching_up_on[shard] = asyncio.create_task(self._catch_up_now(shard))

    def _on_shard(self, conversation_id: str, shard: int | None) -> bool:
        """Whether a conversation's events arrive on `shard` (any, unsharded)."""
        if shard is None or self._shards is None:
            return True
        guild = guild_part(conversation_id)
        return shard_of(None if guild == DM_GUILD else int(guild),
                        self._shards.shard_count) == shard

    async def _catch_up_now(self, shard: int | None) -> None:
        """Hand over what was said after the newest turn heard in each recent conversation
        (of `shard`)."""
        assert self._events is not None
        since = utc_now() - self._catch_up
        try:
            # Read from the newest turn said before the first message this session was sent
            # (Discord's clock dates both); when none had come, read again if one came and
            # may have been stored meanwhile.
            before = self._first_live.get(shard)
            heard = await self._events.last_heard(f"{CHANNEL_TYPE}:", since, before)
            if before is None and (before := self._first_live.get(shard)) is not None:
                heard = await self._events.last_heard(f"{CHANNEL_TYPE}:", since, before)
        except Exception as error:  # the store is away: live events still flow
            self._log.error("discord.catch_up_failed", error=str(error),
                            outcome="messages said while the bot was away are not read",
                            what_to_do="check the store; they are answered only if said again")
            return
        heard = [turn for turn in heard if self._on_shard(turn.conversation_id, shard)]
        read = 0
        for turn in heard:
            read += await self._read_after(turn, since)
        self._log.info("discord.caught_up", shard=shard, conversations=len(heard),
                       messages_read=read, since=since.isoformat())

    async def _read_after(self, turn: StoredMessage, since: datetime) -> int:
        """Hand over the messages of `turn`'s channel (or thread) said after it and since
        `since`; how many were read. A channel the bot cannot read any more is logged."""
        meta = turn.metadata
        where, after = meta.thread_id or meta.channel_id, meta.message_id
        if self._closing or self._client is None or where is None or after is None:
            return 0
        read = 0
        try:
            channel = (self._client.get_channel(int(where))
                       or await self._client.fetch_channel(int(where)))
            if not isinstance(channel, discord.abc.Messageable):
                return 0
            async for message in channel.history(after=discord.Object(int(after)),
                                                 limit=CATCH_UP_MESSAGES, oldest_first=True):
                if self._closing:
                    break
                if message.created_at >= since:
                    await self._handle_message(message)
                    read += 1
        except (discord.HTTPException, OSError, ValueError) as error:
            self._log.warning("discord.catch_up_skipped", conversation_id=turn.conversation_id,
                              error=str(error),
                              outcome="messages said there while the bot was away are not read")
        return read

    async def earlier_messages(self, message: StoredMessage, *, limit: int
                               ) -> list[StoredMessage]:
        """The channel's (or thread's) messages before `message`, read from its history and
        read as events are (the same ids, the bot's own and unheard bots' left out)."""
        meta = message.metadata
        where = meta.thread_id or meta.channel_id
        if self._client is None or not where or not meta.message_id:
            raise ChannelError(f"Discord channel '{self.name}': cannot read the history of "
                               f"{message.conversation_id} (not started, or no channel id)")
        try:
            channel = (self._client.get_channel(int(where))
                       or await self._client.fetch_channel(int(where)))
            if not isinstance(channel, discord.abc.Messageable):
                raise ChannelError(f"Discord channel '{self.name}': {where} has no messages")
            found = [m async for m in channel.history(
                limit=limit, before=discord.Object(int(meta.message_id)))]
        except discord.HTTPException as error:
            raise ChannelError(f"Discord channel '{self.name}': reading the history of "
                               f"{where} failed ({error}); the bot needs the Read Message "
                               "History permission there") from error
        earlier = []
        for said in reversed(found):  # oldest first
            if said.type not in _ACCEPTED_TYPES or not self._from_someone_we_hear(said.author):
                continue
            location = await self._locate(said.channel, channel_id=said.channel.id,
                                          guild_id=said.guild.id if said.guild else None)
            earlier.append(to_stored_message(said, location=location,
                                             bot_user_id=self._bot_user_id))
        return earlier

    async def _handle_press(self, interaction: discord.Interaction) -> None:
        """A button of a command's answer: the command it carries, as an invocation."""
        call = pressed_command(interaction)
        if call is not None:
            await self._handle_command(interaction, call.name, call.args)

    async def _handle_command(self, interaction: discord.Interaction, name: str,
                              text: str) -> None:
        """An application command: deferred at once, recorded, answered by the pipeline."""
        with self._handling("command", interaction_id=interaction.id) as context:
            if not self._ours(interaction.guild_id):
                return  # a replica whose lease ran out: the shard's next holder answers
            if not self._taking_events():
                await interaction.response.send_message(
                    "Threadline is restarting; please run the command again in a moment.",
                    ephemeral=True)
                return
            await interaction.response.defer(ephemeral=True, thinking=True)
            location = await self._locate(interaction.channel, guild_id=interaction.guild_id,
                                          channel_id=interaction.channel_id or 0)
            context["conversation_id"] = location.conversation_id
            turn = command_turn(interaction, name=name, text=text, location=location)
            self._interactions[turn.id] = interaction
            while len(self._interactions) > _MAX_PENDING_COMMANDS:
                self._interactions.popitem(last=False)
            assert self._events is not None
            try:
                await self._events.on_message(turn, self)
            except TurnNotRecordedError as error:
                self._interactions.pop(turn.id, None)
                self._log.error("discord.command_not_recorded",
                                conversation_id=location.conversation_id, error=str(error))
                await interaction.followup.send(
                    "This command could not be recorded, so it was not run; please run it "
                    "again in a moment.", ephemeral=True)

    async def _handle_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        with self._handling("edit", message_id=payload.message_id) as context:
            message = payload.message
            edited = message.edited_at
            # No edit time: Discord added an embed or link preview, which is not a user edit.
            if (not self._taking_events() or edited is None or not self._ours(payload.guild_id)
                    or not self._from_someone_we_hear(message.author)
                    or not self._applied_changes.first_sighting(("edit", message.id, edited))):
                return
            async with self._change_order:
                location = await self._locate(message.channel, guild_id=payload.guild_id,
                                              channel_id=payload.channel_id)
                context["conversation_id"] = location.conversation_id
                text, _ = render_text(message, bot_user_id=self._bot_user_id)
                assert self._events is not None
                await self._events.on_edit(location.conversation_id, stored_id(message.id), text)

    async def _handle_deletes(self, guild_id: int | None, channel_id: int,
                              message_ids: list[int]) -> None:
        with self._handling("delete", message_ids=message_ids) as context:
            if not self._taking_events() or self._client is None or not self._ours(guild_id):
                return
            fresh = [m for m in message_ids
                     if self._applied_changes.first_sighting(("delete", m))]
            if not fresh:
                return
            async with self._change_order:
                if guild_id is None:
                    location = dm_location(channel_id)
                else:
                    channel = self._client.get_channel(channel_id)
                    location = await self._locate(channel, guild_id=guild_id,
                                                  channel_id=channel_id)
                context["conversation_id"] = location.conversation_id
                assert self._events is not None
                for message_id in fresh:
                    await self._events.on_delete(location.conversation_id, stored_id(message_id))

    @property
    def _bot_user_id(self) -> int:
        assert self.identity is not None
        return int(self.identity.user_id)

    # -- outbound --------------------------------------------------------------------------

    def reply_target(self, inbound: StoredMessage
                     ) -> tuple[discord.PartialMessageable, discord.MessageReference | None]:
        """Where a reply to `inbound` goes, and the message it replies to."""
        client = self._client
        if client is None or (self._listener is None and self._shards is None):
            raise ChannelError(f"Discord channel '{self.name}' is not started; call start first")
        metadata = inbound.metadata
        target_id = int(metadata.thread_id or self.delivered_here(inbound))
        # A reply to a message that may be gone by now.
        reference = discord.MessageReference(
            message_id=int(metadata.message_id), channel_id=target_id,
            fail_if_not_exists=False) if metadata.message_id else None
        return client.get_partial_messageable(target_id), reference

    def _conversation_parts(self, conversation_id: str, *, workspace: bool = True
                            ) -> tuple[str, str | None]:
        return super()._conversation_parts(conversation_id, workspace=True)

    def link_to(self, message: StoredMessage) -> str | None:
        """The message's jump link (`@me` for a DM)."""
        meta = message.metadata
        guild = guild_part(message.conversation_id)
        where = meta.thread_id or meta.channel_id
        if not guild or not where or not meta.message_id:
            return None
        return f"https://discord.com/channels/{guild}/{where}/{meta.message_id}"

    def open_reply(self, inbound: StoredMessage, *, agent_name: str | None = None) -> LiveReply:
        client = self._client
        if client is None:
            raise ChannelError(f"Discord channel '{self.name}' is not started; call start first")
        return DiscordLiveReply(channel=self, client=client, inbound=inbound,
                                agent_name=agent_name, gate=self._gate, log=self._log)

    async def send_reply(
        self, inbound: StoredMessage, text: str, *, agent_name: str | None = None
    ) -> list[str]:
        """Post `text` as a reply to `inbound` in its channel or thread; returns message ids.

        Discord shows every part under the bot's own name; `agent_name` is only logged.
        """
        bound = self._log.bind(conversation_id=inbound.conversation_id, agent=agent_name)
        interaction = self._interactions.pop(inbound.id, None)
        if interaction is not None:
            return await self._answer_command(interaction, inbound, text, bound, choices=())
        return await self._post_parts(inbound, text, bound, choices=(), agent_name=agent_name)

    async def _post_parts(self, inbound: StoredMessage, text: str, bound: Any, *,
                          choices: Sequence[CommandChoice],
                          agent_name: str | None = None) -> list[str]:
        target, reference = self.reply_target(inbound)
        # Only the first part is a reply; the rest follow; buttons go under the last.
        first: dict[str, Any] = {"reference": reference} if reference else {}
        loud = {"allowed_mentions": BROADCAST} if self.may_broadcast(inbound, agent_name) else {}
        parts = split_text(text, self.max_message_chars)
        posted: list[str] = []
        for number, part in enumerate(parts):
            extra = {**(first if not posted else {}), **loud}
            view = choice_view(choices) if choices and number == len(parts) - 1 else None
            if view is not None:
                extra["view"] = view
            try:
                sent = await target.send(part, **extra)
            except discord.HTTPException as exc:
                raise self.send_failure(exc, inbound, len(posted), bound) from exc
            finally:
                if view is not None:
                    view.stop()  # presses are handled by custom_id, not by this view
            posted.append(str(sent.id))
        bound.debug("discord.replied", parts=len(posted))
        return posted

    async def _upload(self, inbound: StoredMessage, file: TurnFile, data: bytes) -> list[str]:
        """A message carrying the file as its attachment (multipart), where `inbound` was."""
        target, _ = self.reply_target(inbound)
        try:
            sent = await target.send(file=discord.File(io.BytesIO(data), filename=file.name))
        except discord.HTTPException as exc:
            raise self.send_failure(exc, inbound, 0, self._log.bind(
                conversation_id=inbound.conversation_id)) from exc
        return [str(sent.id)]

    async def send_choices(
        self, inbound: StoredMessage, text: str, choices: Sequence[CommandChoice], *,
        agent_name: str | None = None,
    ) -> list[str]:
        """A button per choice under the last part: the command's follow-up when `inbound` is
        a command's interaction, else a message in the channel (a tool call to approve)."""
        bound = self._log.bind(conversation_id=inbound.conversation_id, agent=agent_name)
        interaction = self._interactions.pop(inbound.id, None)
        if interaction is not None:
            return await self._answer_command(interaction, inbound, text, bound,
                                              choices=choices)
        return await self._post_parts(inbound, text, bound, choices=choices,
                                      agent_name=agent_name)

    async def offer_feedback(self, reply: StoredMessage, platform_ids: Sequence[str],
                             choices: Sequence[CommandChoice]) -> bool:
        """The buttons as components added to the reply's last message (an edit)."""
        target, _ = self.reply_target(reply)
        view = choice_view(choices)
        try:
            await target.get_partial_message(int(platform_ids[-1])).edit(view=view)
        except discord.HTTPException as exc:
            raise self.send_failure(exc, reply, len(platform_ids), self._log.bind(
                conversation_id=reply.conversation_id)) from exc
        finally:
            view.stop()  # presses are handled by custom_id, not by this view
        return True

    async def _answer_command(self, interaction: discord.Interaction, inbound: StoredMessage,
                              text: str, bound: Any, *, choices: Sequence[CommandChoice]
                              ) -> list[str]:
        """The deferred answer to an application command: its follow-up messages."""
        posted: list[str] = []
        parts = split_text(text, self.max_message_chars)
        for number, part in enumerate(parts):
            view = choice_view(choices) if choices and number == len(parts) - 1 else None
            try:
                if view is None:
                    sent = await interaction.followup.send(part, ephemeral=True, wait=True)
                else:
                    sent = await interaction.followup.send(part, ephemeral=True, wait=True,
                                                           view=view)
                    view.stop()  # presses are handled by custom_id, not by this view
            except discord.HTTPException as exc:
                raise self.send_failure(exc, inbound, len(posted), bound) from exc
            posted.append(str(sent.id))
        return posted

    def send_failure(self, exc: discord.HTTPException, inbound: StoredMessage,
                     posted: int, bound: Any) -> ChannelError:
        """Our error for a reply Discord refused: permanent or not, with what was posted."""
        where = (f"Discord channel '{self.name}', conversation {inbound.conversation_id!r} "
                 f"(after {posted} part(s) posted)")
        bound.error("discord.reply_failed", status=exc.status, code=exc.code, text=exc.text)
        if isinstance(exc, discord.Forbidden):
            return ChannelPermanentError(
                f"{where}: Discord refused the post (403 {exc.text}); the bot lacks Send "
                "Messages (or Send Messages in Threads) there, or was removed.")
        if isinstance(exc, discord.NotFound):
            return ChannelPermanentError(
                f"{where}: the channel or thread no longer exists (404 {exc.text}).")
        if 400 <= exc.status < 500:
            return ChannelPermanentError(f"{where}: Discord rejected the message "
                                         f"({exc.status} {exc.text}).")
        return ChannelError(f"{where}: Discord failed after retries ({exc.status} {exc.text}).")
