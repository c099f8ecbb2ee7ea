"""The Matrix channel: one account on a homeserver, driven through matrix-nio's `AsyncClient`.

What to know when running it:
- Login is an access token (`whoami` names the account and device; nio's `restore_login`
  takes them). Events come from `/sync` long polls (`matrix.sync`); the sync position is kept
  by the backend once each batch is recorded, so a restart misses nothing and repeats nothing.
- Rooms and threads: the main timeline of a room is one conversation, each `m.thread` another;
  replies go into the thread of the message they answer (`matrix.outbound`). A room of two
  members (the bot and one person) is a DM: every message there is for the bot.
- Mentions: `m.mentions` user ids and the pills in `formatted_body` (`matrix.inbound`); `@name`
  written in the text addresses an agent of that name, like on every platform.
- Edits (`m.replace`) and redactions reach the inbox as `on_edit` / `on_delete`; the
  original's conversation is the one this process saw it in, else read from the homeserver.
- Approvals and other choices are numbered reactions on the bot's post (`matrix.outbound`).
- Files (`m.image`, `m.file`, `m.audio`, `m.video`) are fetched from the homeserver's
  authenticated media API with the bot's token (`threadline.channels.fetch_policy`); files an
  agent's tools make are uploaded to its media repository and posted as `m.image` / `m.file`.
- Encrypted rooms are refused in words (`matrix.encryption`): no end-to-end keys are kept.
- Invites: rooms are joined when the inviter, or the inviter's server, is in `auto_join`
  (`matrix.rooms`, which also keeps what the homeserver said of rooms and people).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import structlog
from nio import (
    AsyncClient,
    AsyncClientConfig,
    ErrorResponse,
    RoomSendResponse,
    UploadResponse,
    WhoamiResponse,
)

from threadline.channels.base import BotIdentity, Channel, ChannelEvents, LiveReply
from threadline.channels.fetch_policy import FileHosts
from threadline.channels.files import take_in
from threadline.channels.matrix.encryption import EncryptedRooms, encryption_problem
from threadline.channels.matrix.inbound import (
    command_turn,
    inbound_turn,
    incoming_files,
    relation_of,
    turn_id,
)
from threadline.channels.matrix.outbound import (
    CHOICE_KEYS,
    TYPING_MS,
    MatrixReply,
    chosen_command,
    file_content,
    matrix_to,
    reaction,
    reply_content,
    transaction_id,
    with_choices,
)
from threadline.channels.matrix.rooms import Origin, RoomDirectory, display_name
from threadline.channels.matrix.sync import SyncLoop
from threadline.channels.matrix.sync_tokens import PositionInMemory, SyncTokens
from threadline.channels.text import split_text
from threadline.channels.unreachable import host_of, unreachable
from threadline.errors import ChannelAuthError, ChannelError, ChannelPermanentError, ConfigError
from threadline.history.files import TurnFile
from threadline.history.model import StoredMessage

if TYPE_CHECKING:
    from threadline.commands import CommandChoice

log = structlog.get_logger("threadline.channels.matrix")

_AUTH_CODES = frozenset({"M_UNKNOWN_TOKEN", "M_MISSING_TOKEN"})
_PERMANENT_CODES = frozenset({"M_FORBIDDEN", "M_NOT_FOUND", "M_TOO_LARGE", "M_BAD_JSON",
                              "M_NOT_JSON", "M_UNKNOWN_TOKEN", "M_MISSING_TOKEN"})


class MatrixChannel(Channel):
    """A Matrix account as a Threadline channel (see the module docstring)."""

    channel_type = "matrix"
    # An event is at most 65,536 bytes of JSON; 4 bytes a character leaves room for the rest.
    max_message_chars = 15_000

    def __init__(self, *, name: str, homeserver: str, access_token: str,
                 sync_tokens: SyncTokens | None = None, auto_join: Sequence[str] = (),
                 file_hosts: Sequence[str] = (), sync_timeout_ms: int = 30_000,
                 allow_bots: bool = False, streaming: bool = True) -> None:
        super().__init__(name=name, allow_bots=allow_bots, streaming=streaming)
        where = f"matrix channel {name!r}"
        if not homeserver.startswith(("https://", "http://")):
            raise ConfigError(f"{where}: homeserver must be the homeserver's URL "
                              f"(https://matrix.example.org), got {homeserver!r}.")
        if not access_token:
            raise ConfigError(f"{where}: access_token is empty; set it to the bot account's "
                              "access token (docs/platforms/matrix.md says how to get one).")
        self._homeserver = homeserver.rstrip("/")
        self._token = access_token
        self._tokens = sync_tokens or PositionInMemory()
        self.keeps_position = sync_tokens is not None
        self._auto_join = tuple(a.strip() for a in auto_join if a.strip())
        self._file_hosts = FileHosts.of(channel=name, setting=f"channels.{name}.file_hosts",
                                        platform_hosts=(),
                                        configured=[host_of(self._homeserver), *file_hosts])
        self._sync_timeout_ms = sync_timeout_ms
        self._client: AsyncClient | None = None
        self._sync: SyncLoop | None = None
        self._events: ChannelEvents | None = None
        self._directory: RoomDirectory | None = None
        self._log = log.bind(channel=name)
        self._encrypted = EncryptedRooms(log=self._log)

    # -- lifecycle -------------------------------------------------------------------------

    def _new_client(self) -> AsyncClient:
        config = AsyncClientConfig(max_limit_exceeded=5, max_timeouts=2, request_timeout=60,
                                   store_sync_tokens=False, encryption_enabled=False)
        client = AsyncClient(self._homeserver, config=config)
        client.access_token = self._token
        return client

    async def _log_in(self, client: AsyncClient) -> None:
        """Who the token belongs to (`whoami`), restored into the client as nio requires."""
        try:
            me = await client.whoami()
        except Exception as exc:
            raise ChannelError(unreachable(
                where=f"matrix channel {self.name!r}", service="the Matrix homeserver",
                action="ask who the bot is (whoami)", url=self._homeserver,
                setting=f"channels.{self.name}.homeserver", error=exc)) from exc
        if not isinstance(me, WhoamiResponse):
            raise self._failure(me, action="ask who the bot is (whoami)")
        client.restore_login(me.user_id, me.device_id or "", self._token)
        self.identity = BotIdentity(user_id=me.user_id,
                                    username=me.user_id.partition(":")[0].lstrip("@"),
                                    display_name=await display_name(client, me.user_id))

    async def start(self, events: ChannelEvents) -> None:
        if self._client is not None:
            raise ChannelError(f"matrix channel {self.name!r} is already started; call stop() "
                               "before starting it again.")
        client = self._new_client()
        try:
            await self._log_in(client)
            joined = await client.joined_rooms()
            assert self.identity is not None
            self._events = events
            self._directory = RoomDirectory(client, joined=getattr(joined, "rooms", []),
                                            log=self._log)
            self._sync = SyncLoop(client=client, tokens=self._tokens,
                                  account=self.identity.user_id, take=self._take,
                                  invited=self._invited, skip=self.skip_event, log=self._log,
                                  channel=self.name, timeout_ms=self._sync_timeout_ms)
            self._client = client
            await self._sync.start()
        except BaseException:
            self._client = None
            await client.close()
            raise
        self._log.info("matrix.started", user=self.identity.user_id,
                       position_kept=self.keeps_position)
        if not self.keeps_position:
            self._log.warning("matrix.position_not_kept", outcome=(
                "the store keeps no sync position (the memory backend): after a restart, what "
                "was said while the bot was stopped is not answered; use SQLite or PostgreSQL"))

    async def stop(self) -> None:
        if self._client is None:
            return
        if self._sync is not None:
            await self._sync.stop()  # the event in hand is finished with the client open
        client, self._client = self._client, None
        await client.close()
        self._log.info("matrix.stopped")

    def receiving(self) -> str | None:
        if self._client is None or self._sync is None:
            return "not connected"
        return self._sync.listener.problem() or self._sync.failure

    # -- inbound ---------------------------------------------------------------------------

    async def _take(self, room_id: str, event: Mapping[str, Any]) -> None:
        """One timeline event; returns once it is handled (`TurnNotRecordedError` escapes)."""
        assert self._events is not None and self.identity is not None
        assert self._directory is not None
        kind, sender = event.get("type"), event.get("sender")
        if sender == self.identity.user_id or not isinstance(sender, str):
            return
        if kind == "m.room.member":  # who is in the room, or what they are called, changed
            self._directory.membership_changed(room_id, event.get("state_key"))
        elif kind == "m.room.encrypted":
            await self._encrypted.refuse(self._started("refuse an encrypted room"), room_id)
        elif kind == "m.room.redaction":
            redacted = event.get("redacts") or event.get("content", {}).get("redacts")
            if isinstance(redacted, str):
                origin = await self._directory.origin(room_id, redacted)
                await self._events.on_delete(origin.conversation_id, turn_id(room_id, redacted))
        elif kind == "m.reaction":
            await self._take_reaction(room_id, event)
        elif kind == "m.room.message":
            content = event.get("content")
            relates = content.get("m.relates_to") if isinstance(content, Mapping) else None
            if isinstance(relates, Mapping) and relates.get("rel_type") == "m.replace":
                await self._take_edit(room_id, sender, relates, content or {})
            else:
                await self._take_message(room_id, event)

    async def _take_message(self, room_id: str, event: Mapping[str, Any]) -> None:
        assert self._events is not None and self.identity is not None
        assert self._directory is not None
        turn = inbound_turn(event, room=await self._directory.room(room_id), bot=self.identity,
                            sender_name=await self._directory.name_of(event["sender"]))
        if turn is None:
            return
        self._directory.remember(str(event["event_id"]),
                                 Origin(turn.conversation_id, turn.participant.id))
        files = incoming_files(event["content"], homeserver=self._homeserver,
                               token=self._token, hosts=self._file_hosts)
        turn = await take_in(turn, files, self.file_intake)
        await self._events.on_message(turn, self)

    async def _take_edit(self, room_id: str, sender: str, relates: Mapping[str, Any],
                         content: Mapping[str, Any]) -> None:
        """An edit by the original's own author (homeservers let anyone send one: clients
        must check, and so do we)."""
        assert self._events is not None and self._directory is not None
        original, new = relates.get("event_id"), content.get("m.new_content")
        body = new.get("body") if isinstance(new, Mapping) else None
        if not isinstance(original, str) or not isinstance(body, str):
            return
        origin = await self._directory.origin(room_id, original)
        if origin.sender != sender:
            self._log.warning("matrix.edit_refused", room_id=room_id, event_id=original,
                              editor=sender, author=origin.sender,
                              outcome="ignored: only a message's author may edit it")
            return
        await self._events.on_edit(origin.conversation_id, turn_id(room_id, original), body)

    async def _take_reaction(self, room_id: str, event: Mapping[str, Any]) -> None:
        """A reaction to one of our choice posts is that choice's command, said by its author."""
        assert self._events is not None and self.identity is not None
        assert self._directory is not None
        relates = event.get("content", {}).get("m.relates_to", {})
        target, key = relates.get("event_id"), relates.get("key")
        if not isinstance(target, str) or key not in CHOICE_KEYS:
            return
        post = await self._directory.event(room_id, target)
        if post is None or post.get("sender") != self.identity.user_id:
            return
        command = chosen_command(post, str(key))
        if command is None:
            return
        thread = relation_of(post.get("content") or {}).thread_root
        turn = command_turn(event, room=await self._directory.room(room_id), command=command,
                            sender_name=await self._directory.name_of(event["sender"]),
                            thread_root=thread)
        await self._events.on_message(turn, self)

    async def _invited(self, room_id: str, invite_state: Sequence[Mapping[str, Any]]) -> None:
        assert self._directory is not None and self.identity is not None
        await self._directory.invited(room_id, invite_state, me=self.identity.user_id,
                                      auto_join=self._auto_join,
                                      setting=f"channels.{self.name}.auto_join")

    # -- outbound --------------------------------------------------------------------------

    def _started(self, action: str) -> AsyncClient:
        if self._client is None:
            raise ChannelError(f"matrix channel {self.name!r} cannot {action} before start().")
        return self._client

    def open_reply(self, inbound: StoredMessage, *, agent_name: str | None = None) -> LiveReply:
        return MatrixReply(channel=self, inbound=inbound, agent_name=agent_name, log=self._log)

    async def set_typing(self, inbound: StoredMessage, *, typing: bool) -> None:
        """Show (or clear) the bot typing in the room of `inbound`; a refusal is only logged
        when clearing, and raised when showing (the renewal logs it once)."""
        if self._client is None and not typing:
            return  # stopped: nothing is shown any more
        client = self._started("show typing")
        answer = await client.room_typing(self.delivered_here(inbound), typing_state=typing,
                                          timeout=TYPING_MS)
        if isinstance(answer, ErrorResponse):
            if typing:
                raise self._failure(answer, action="show typing", conversation=inbound.
                                    conversation_id)
            self._log.info("matrix.typing_not_cleared", error=str(answer))

    async def send_reply(self, inbound: StoredMessage, text: str, *,
                         agent_name: str | None = None) -> list[str]:
        return await self._post(inbound, text, agent_name=agent_name)

    async def send_choices(self, inbound: StoredMessage, text: str,
                           choices: Sequence[CommandChoice], *,
                           agent_name: str | None = None) -> list[str]:
        """The text with its choices as reactions; the bot reacts with each key first."""
        posted = await self._post(inbound, text, agent_name=agent_name, choices=choices)
        client = self._started("offer choices")
        room_id = self.delivered_here(inbound)
        for key in CHOICE_KEYS[:len(choices)]:
            await client.room_send(room_id, "m.reaction", reaction(posted[-1], key),
                                   tx_id=transaction_id(inbound, agent_name, -1, posted[-1] + key))
        return posted

    async def _post(self, inbound: StoredMessage, text: str, *, agent_name: str | None,
                    choices: Sequence[CommandChoice] = ()) -> list[str]:
        client = self._started("send a reply")
        room_id = self.delivered_here(inbound)
        broadcast = self.may_broadcast(inbound, agent_name)
        parts = split_text(text, self.max_message_chars)
        posted: list[str] = []
        for index, part in enumerate(parts):
            content = reply_content(inbound, part, broadcast=broadcast)
            if choices and index == len(parts) - 1:
                content = with_choices(content, choices)
            sent = await client.room_send(room_id, "m.room.message", content,
                                          tx_id=transaction_id(inbound, agent_name, index, part))
            if not isinstance(sent, RoomSendResponse):
                error = self._failure(sent, action=f"post part {index + 1} of {len(parts)} "
                                      "of a reply", conversation=inbound.conversation_id)
                self._log.error("matrix.reply_failed", conversation_id=inbound.conversation_id,
                                error=str(error))
                raise error
            posted.append(sent.event_id)
        return posted

    def link_to(self, message: StoredMessage) -> str | None:
        """A matrix.to link to the message (any client opens it), with the room's server to
        find the room through."""
        room, event = message.metadata.channel_id, message.metadata.message_id
        return matrix_to(room, event) if room and event else None

    async def _upload(self, inbound: StoredMessage, file: TurnFile, data: bytes) -> list[str]:
        """The file into the homeserver's media repository, then an `m.image` (shown inline)
        or `m.file` where `inbound` was said; the post's transaction id is the file's, so a
        retry is the same event."""
        client = self._started("send a file")
        room_id = self.delivered_here(inbound)
        action = f"send the file {file.name!r}"
        uploaded, _ = await client.upload(io.BytesIO(data), content_type=file.media_type
                                          or "application/octet-stream",
                                          filename=file.name, filesize=len(data))
        if not isinstance(uploaded, UploadResponse):
            raise self._failure(uploaded, action=action, conversation=inbound.conversation_id)
        content = file_content(inbound, file, url=uploaded.content_uri, size=len(data))
        sent = await client.room_send(room_id, "m.room.message", content,
                                      tx_id=transaction_id(inbound, None, -2, file.sha256))
        if not isinstance(sent, RoomSendResponse):
            raise self._failure(sent, action=action, conversation=inbound.conversation_id)
        return [sent.event_id]

    def _failure(self, answer: Any, *, action: str, conversation: str | None = None
                 ) -> ChannelError:
        """Our error for a refused request: what failed, where, and what to do."""
        where = f"matrix channel {self.name!r}" + (f", {conversation}" if conversation else "")
        code = getattr(answer, "status_code", None)
        what = f"{where}: could not {action}: {answer}"
        if code in _AUTH_CODES:
            return ChannelAuthError(f"{where}: could not {action}: the homeserver refused the "
                                    f"access token ({code}); log the bot in again and set "
                                    f"channels.{self.name}.access_token.")
        if code in _PERMANENT_CODES:
            return ChannelPermanentError(f"{what}. Not retrying (is the bot still in the "
                                         "room, and allowed to post there?).")
        return ChannelError(f"{what}. Check that {self._homeserver} is up and try again.")

    # -- diagnostics -----------------------------------------------------------------------

    async def check(self) -> list[str]:
        """Who the token belongs to, and the rooms this channel cannot read. Before `start()`
        it connects just long enough to ask (`threadline check`)."""
        client = self._client
        opened = client is None
        if client is None:
            client = self._new_client()
        try:
            if opened:
                await self._log_in(client)
            joined = await client.joined_rooms()
            rooms = list(getattr(joined, "rooms", []))
            where = f"matrix channel {self.name!r}"
            problems = [await encryption_problem(client, room, where=where) for room in rooms]
        finally:
            if opened:
                await client.close()
        found = [p for p in problems if p]
        if not rooms and not self._auto_join:
            found.append(f"matrix channel {self.name!r}: the account is in no room and "
                         f"channels.{self.name}.auto_join is empty, so invites are not "
                         "accepted; invite it and list the inviter's server there.")
        if self._sync is not None and self._sync.failure:
            found.append(f"matrix channel {self.name!r}: {self._sync.failure}")
        return found
