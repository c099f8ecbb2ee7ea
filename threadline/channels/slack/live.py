"""A Slack reply written live: the assistant status while the agent works, the text as it comes.

Status: `assistant.threads.setStatus` ("is thinking...", "is running lookup_order...") in the
reply's thread, cleared on every path. Slack allows it in assistant threads (and refuses it
elsewhere); a refusal is logged once per conversation and the reply goes on without a status.

Text: in a thread, Slack's chat streaming (`chat.startStream`, `chat.appendStream` with what
was added since, `chat.stopStream`); where Slack refuses it (the workspace, the conversation
type, an older API) the reply is posted and then updated with `chat.update`. Either way the
platform is called at most once per `stream_interval` per conversation, with the newest text.
When a later model round starts its text over (after a tool call), the streamed message cannot
be taken back: it is stopped and updated to the final text at the end.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from threadline.channels.base import LiveReply
from threadline.channels.live import RateGate, TextPacer
from threadline.channels.slack.events import escape_outgoing, inert_markdown
from threadline.channels.text import split_text
from threadline.errors import ChannelError
from threadline.history.model import StoredMessage

if TYPE_CHECKING:
    from threadline.channels.slack.channel import SlackChannel

THINKING = "is thinking..."


class SlackLiveReply(LiveReply):
    """One reply in one Slack conversation (see the module docstring)."""

    def __init__(self, *, channel: SlackChannel,
                 client: Callable[[], Awaitable[AsyncWebClient]], inbound: StoredMessage,
                 agent_name: str | None, gate: RateGate, log: Any) -> None:
        """`client` gives the Web API client of the inbound's workspace, with a token valid
        now (asked at each call: a rotating token may change while a reply is written)."""
        self._channel = channel
        self._client = client
        self._inbound = inbound
        self._agent_name = agent_name
        self._channel_id, self._thread_ts = channel.reply_target(inbound)
        self._username = agent_name if channel.agent_name_as_username else None
        self._broadcast = channel.may_broadcast(inbound, agent_name)
        self._log = log.bind(conversation_id=inbound.conversation_id, agent=agent_name)
        self._gate = gate
        self._pacer = TextPacer(self._push, gate=gate, key=self._channel_id, log=self._log)
        self._status_shown = False
        self._ts: str | None = None
        self._native = False  # the message is a chat stream (else a post kept up to date)
        self._streamed = ""  # what the chat stream holds so far
        self._diverged = False  # the text started over: the stream cannot follow it

    async def working(self, activity: str | None = None) -> None:
        await self._status(f"is running {activity}..." if activity else THINKING)

    def show(self, text: str) -> None:
        self._pacer.offer(text)

    async def finish(self, text: str) -> list[str]:
        await self._pacer.stop()
        try:
            if self._ts is None:
                return await self._channel.send_reply(self._inbound, text,
                                                      agent_name=self._agent_name)
            async with self._gate.slot(self._channel_id):
                return await self._finish_shown(self._ts, text)
        finally:
            await self.close()

    async def close(self) -> None:
        await self._pacer.stop()
        if self._status_shown:
            await self._status("")

    # -- status ----------------------------------------------------------------------------

    async def _status(self, status: str) -> None:
        if self._thread_ts is None or not self._channel.may_set_status(self._channel_id):
            return
        api = await self._client()
        try:
            await api.assistant_threads_setStatus(
                channel_id=self._channel_id, thread_ts=self._thread_ts, status=status)
        except (SlackApiError, aiohttp.ClientError, TimeoutError) as error:
            self._channel.status_refused(self._channel_id, error)
            return
        self._status_shown = bool(status)

    # -- text ------------------------------------------------------------------------------

    async def _push(self, text: str) -> None:
        text = text if self._broadcast else inert_markdown(text)
        api = await self._client()
        if self._ts is None:
            await self._open(api, text)
        elif self._native:
            if self._diverged or not text.startswith(self._streamed):
                self._diverged = True
                return
            await api.chat_appendStream(channel=self._channel_id, ts=self._ts,
                                        markdown_text=text[len(self._streamed):])
            self._streamed = text
        else:
            await api.chat_update(channel=self._channel_id, ts=self._ts,
                                  text=self._preview(text))

    async def _open(self, api: AsyncWebClient, text: str) -> None:
        if self._thread_ts is not None and self._channel.may_stream(self._channel_id):
            try:
                started = await api.chat_startStream(
                    channel=self._channel_id, thread_ts=self._thread_ts, markdown_text=text,
                    recipient_team_id=self._channel.team_of(self._inbound) or None,
                    recipient_user_id=self._inbound.participant.id, username=self._username)
            except SlackApiError as error:
                self._channel.stream_refused(self._channel_id, error)
            else:
                self._ts, self._native, self._streamed = str(started["ts"]), True, text
                return
        posted = await api.chat_postMessage(
            channel=self._channel_id, text=self._preview(text), thread_ts=self._thread_ts,
            username=self._username)
        self._ts = str(posted["ts"])

    def _preview(self, text: str) -> str:
        return split_text(escape_outgoing(text, broadcast=self._broadcast),
                          self._channel.max_message_chars)[0]

    async def _finish_shown(self, ts: str, text: str) -> list[str]:
        """End the shown message as `text`: the rest appended (or the whole updated) on a
        stream; on a kept-up-to-date post, the first part updated and the others posted."""
        text = text if self._broadcast else inert_markdown(text)
        posted = [ts]
        parts = split_text(escape_outgoing(text, broadcast=self._broadcast),
                           self._channel.max_message_chars)
        api = await self._client()
        try:
            if self._native:
                follows = not self._diverged and text.startswith(self._streamed)
                rest = text[len(self._streamed):] if follows else ""
                await api.chat_stopStream(channel=self._channel_id, ts=ts,
                                          markdown_text=rest or None)
                if not follows:
                    await api.chat_update(channel=self._channel_id, ts=ts,
                                          text=escape_outgoing(text, broadcast=self._broadcast))
                return posted
            await api.chat_update(channel=self._channel_id, ts=ts, text=parts[0])
            for part in parts[1:]:
                response = await api.chat_postMessage(
                    channel=self._channel_id, text=part, thread_ts=self._thread_ts,
                    username=self._username)
                posted.append(str(response["ts"]))
        except SlackApiError as error:
            raise self._channel.reply_error(self._inbound, error, posted=len(posted),
                                            total=len(parts)) from error
        except (aiohttp.ClientError, TimeoutError) as error:
            raise ChannelError(
                f"Slack channel {self._channel.name!r}: finishing the reply in conversation "
                f"{self._inbound.conversation_id!r} failed: {error!r}") from error
        return posted
