"""discord.py wiring for the Discord channel: the client, its intents and its endpoints.

discord.py calls `on_<event>` methods on its client; `_Listener` forwards the ones Threadline
needs to the `DiscordChannel`. The API and gateway addresses live in class attributes of
discord.py (`discord.http.Route.BASE`, `discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY`), so
they are process-wide; `ENDPOINTS` hands them out and refuses conflicting values.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import discord
import yarl

from threadline.channels.discord.resume import ResumingGateway
from threadline.errors import ConfigError

if TYPE_CHECKING:
    from threadline.channels.discord.channel import DiscordChannel


def _decode_gateway_json(text: Any) -> Any:
    """discord.py's JSON decoder, tolerant of lone surrogates.

    With orjson installed (other packages often pull it in) discord.py decodes every gateway
    frame with it, and orjson refuses a lone surrogate (half an emoji, which Discord clients do
    send): the frame raised, the gateway loop ended and the message was lost. The standard
    library decodes it, and the turn is stored with U+FFFD (`history.model.storable_text`).
    """
    try:
        return _fast_json(text)
    except ValueError:
        return json.loads(text)


_fast_json = discord.utils._from_json
if discord.utils.HAS_ORJSON:
    discord.utils._from_json = _decode_gateway_json


# A bot that never joins voice needs neither voice library: without these, discord.py warns
# that "voice will NOT be supported" on every start and every `threadline check`.
discord.VoiceClient.warn_nacl = False
discord.VoiceClient.warn_dave = False

# Guilds, guild messages, DMs and message content: what a conversational bot needs, no more.
INTENTS = discord.Intents(guilds=True, guild_messages=True, dm_messages=True,
                          message_content=True)
# What the bot needs in a server, asked for by its invite URL (`invite_url`): see channels,
# read their history, post, and post in threads. Commands need the applications.commands scope.
PERMISSIONS = discord.Permissions(view_channel=True, send_messages=True,
                                  send_messages_in_threads=True, read_message_history=True)
INVITE_SCOPES = ("bot", "applications.commands")
# Agents' text must never ping @everyone or roles; replying to the asker may ping them.
ALLOWED_MENTIONS = discord.AllowedMentions(everyone=False, roles=False, users=True,
                                           replied_user=True)
# What a post that may notify a whole channel may ping (`Channel.may_broadcast`): everyone
# and roles too. Every other post keeps ALLOWED_MENTIONS, the client's default.
BROADCAST = discord.AllowedMentions.all()


class _Listener(ResumingGateway):
    """discord.py calls `on_<event>` methods on the client; these forward them to the channel."""

    channel: DiscordChannel
    shard_id: int | None  # discord.Client's: the shard this client is, None unsharded

    async def on_connect(self) -> None:
        self.channel._connected()
        self.channel._connecting(self.shard_id)

    async def on_ready(self) -> None:
        self.gateway_ready()
        self.channel._ready.set()
        self.channel._catching_up(self.shard_id)

    async def on_resumed(self) -> None:
        self.gateway_resumed()

    async def on_message(self, message: discord.Message) -> None:
        self.channel._heard_live(self.shard_id, message)
        await self.channel._handle_message(message)

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        await self.channel._handle_press(interaction)

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        await self.channel._handle_edit(payload)

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        await self.channel._handle_deletes(payload.guild_id, payload.channel_id,
                                           [payload.message_id])

    async def on_raw_bulk_message_delete(
        self, payload: discord.RawBulkMessageDeleteEvent
    ) -> None:
        await self.channel._handle_deletes(payload.guild_id, payload.channel_id,
                                           sorted(payload.message_ids))


# `ws` is a property here (`ResumingGateway`), an attribute in discord.py: the same value.
class _Client(_Listener, discord.Client):  # type: ignore[misc]
    def __init__(self, channel: DiscordChannel, **options: Any) -> None:
        super().__init__(**options)
        self.channel = channel
        self.gateway_log = channel._log


class _Endpoints:
    """discord.py's process-wide API and gateway addresses, shared by the channels using them.

    A channel claims the values it needs while it runs; a second channel asking for different
    ones is refused rather than silently moved.
    """

    def __init__(self) -> None:
        self._claims: dict[str, tuple[object, int]] = {}

    def claim(self, *, api_base_url: str | None, gateway_url: str | None, name: str) -> None:
        wanted: list[tuple[str, Any, str, object]] = []
        if api_base_url is not None:
            wanted.append(("api_base_url", discord.http.Route, "BASE", api_base_url.rstrip("/")))
        if gateway_url is not None:
            wanted.append(("gateway_url", discord.gateway.DiscordWebSocket, "DEFAULT_GATEWAY",
                           yarl.URL(gateway_url)))
        for setting, _, attribute, value in wanted:
            held, _count = self._claims.get(attribute, (value, 0))
            if held != value:
                raise ConfigError(
                    f"Discord channel '{name}': {setting}={value} conflicts with {held} used by "
                    "another Discord channel in this process; discord.py keeps one value per "
                    "process, so give every Discord channel the same one (or run them apart)."
                )
        for _, owner, attribute, value in wanted:
            _held, count = self._claims.get(attribute, (value, 0))
            self._claims[attribute] = (value, count + 1)
            setattr(owner, attribute, value)

    def release(self, *, api_base_url: str | None, gateway_url: str | None) -> None:
        for attribute, given in (("BASE", api_base_url), ("DEFAULT_GATEWAY", gateway_url)):
            if given is None or attribute not in self._claims:
                continue
            value, count = self._claims[attribute]
            if count <= 1:
                del self._claims[attribute]
            else:
                self._claims[attribute] = (value, count - 1)


ENDPOINTS = _Endpoints()


def invite_url(application_id: int) -> str:
    """The OAuth2 URL that adds the bot to a server with its scopes and permissions."""
    return discord.utils.oauth_url(application_id, permissions=PERMISSIONS, scopes=INVITE_SCOPES)


def guard_parsers(client: discord.Client,
                  skip: Callable[[object, BaseException], None]) -> None:
    """Make every gateway dispatch parser skip an event it cannot parse instead of raising.

    discord.py parses each dispatch (`MESSAGE_CREATE` with a null author, a non-numeric id)
    inside its gateway loop, and an error there ends `connect()` for good. Wrapped, the event
    is logged with its type and id, counted by `skip`, and the gateway reads the next one.
    """
    parsers: dict[str, Callable[[Any], None]] = client._connection.parsers
    for event, parse in list(parsers.items()):
        parsers[event] = _guarded(event, parse, skip)


def _guarded(event: str, parse: Callable[[Any], None],
             skip: Callable[[object, BaseException], None]) -> Callable[[Any], None]:
    def guarded(data: Any) -> None:
        try:
            parse(data)
        except Exception as error:
            event_id = data.get("id") if isinstance(data, dict) else None
            skip(f"{event} {event_id!r}", error)
    return guarded


def shard_of(guild_id: int | None, shard_count: int) -> int:
    """The shard whose connection receives a server's events (Discord's formula); direct
    messages arrive on shard 0."""
    return 0 if guild_id is None else (guild_id >> 22) % shard_count


def build_client(channel: DiscordChannel, *, shard: tuple[int, int] | None,
                 guild_ready_timeout: float) -> discord.Client:
    """A discord.py client that reports to `channel`; `shard` (id, count) makes it one shard's
    connection (it identifies as that shard and receives that shard's events only)."""
    options: dict[str, Any] = {
        "intents": INTENTS, "allowed_mentions": ALLOWED_MENTIONS,
        "guild_ready_timeout": guild_ready_timeout, "chunk_guilds_at_startup": False,
    }
    if shard is not None:
        options["shard_id"], options["shard_count"] = shard
    return _Client(channel, **options)
