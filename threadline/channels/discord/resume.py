"""A gateway frame discord.py cannot read ends the connection, not the session: it resumes.

discord.py decodes every gateway frame inside its read loop (`received_message`): a frame it
cannot decompress or parse (cut short by a proxy, corrupted on the way) raised out of
`Client.connect` for good, and connecting again identified anew, a new session, so every
message Discord dispatched in between was lost. `ResumingGateway` wraps each websocket the
client opens: such a frame closes the socket with a code that keeps the session and hands
`connect`'s own loop a `ReconnectWebSocket(resume=True)`, which sends RESUME with the session
id and the last sequence read; Discord replays what was dispatched since.

When it cannot resume, it says so in the log (`discord.session_not_resumed`): before the first
READY there is no session; a frame that fails again at the same sequence (an event nobody can
decode, replayed by every resume) is passed by identifying anew; and Discord may refuse the
resume (the next event is READY, not RESUMED).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import discord
from discord.gateway import DiscordWebSocket, ReconnectWebSocket

# Discord ends a session whose connection closed with 1000 or 1001; any 4000 code keeps it.
RESUMABLE_CLOSE = 4000

Receive = Callable[[Any], Coroutine[Any, Any, None]]


class ResumingGateway:
    """A `discord.Client` mixin: each websocket it opens resumes past a frame it cannot read.
    `gateway_log` is the channel's bound logger."""

    gateway_log: Any = None
    _gateway: DiscordWebSocket | None = None
    _unreadable_at: tuple[str | None, int | None] | None = None
    _resuming = False

    @property
    def ws(self) -> DiscordWebSocket | None:
        return self._gateway

    @ws.setter
    def ws(self, ws: DiscordWebSocket | None) -> None:
        # discord.py assigns each websocket it opens here (`Client.connect`).
        self._gateway = ws
        if ws is not None:
            ws.received_message = self._reading(ws, ws.received_message)  # type: ignore[method-assign]

    def _reading(self, ws: DiscordWebSocket, receive: Receive) -> Receive:
        async def received_message(frame: Any) -> None:
            try:
                await receive(frame)
            except (ReconnectWebSocket, OSError, discord.DiscordException):
                raise  # discord.py's own ways of ending a connection, handled by `connect`
            except Exception as error:
                raise await self._unreadable(ws, error) from error

        return received_message

    async def _unreadable(self, ws: DiscordWebSocket, error: Exception) -> ReconnectWebSocket:
        at = (ws.session_id, ws.sequence)
        resume = ws.session_id is not None and at != self._unreadable_at
        self._unreadable_at = at
        self._resuming = resume
        await ws.close(code=RESUMABLE_CLOSE)
        if resume:
            self._log("warning", "discord.frame_unreadable", error=repr(error)[:300],
                      sequence=ws.sequence, then="resuming the session")
        else:
            self._log("error", "discord.session_not_resumed", error=repr(error)[:300],
                      sequence=ws.sequence,
                      reason="no session yet" if ws.session_id is None else
                      "the same frame could not be read after resuming",
                      lost="events dispatched since the last one read")
        return ReconnectWebSocket(ws.shard_id, resume=resume)

    def gateway_resumed(self) -> None:
        """RESUMED: nothing was lost."""
        if self._resuming:
            self._log("info", "discord.session_resumed", sequence=getattr(self.ws, "sequence",
                                                                          None))
        self._resuming = False

    def gateway_ready(self) -> None:
        """READY: a new session; after a resume was asked for, Discord refused it."""
        if self._resuming:
            self._log("error", "discord.session_not_resumed",
                      reason="Discord refused the resume and a new session began",
                      lost="events dispatched while disconnected")
        self._resuming = False

    def _log(self, level: str, event: str, **fields: Any) -> None:
        if self.gateway_log is not None:
            getattr(self.gateway_log, level)(event, **fields)
