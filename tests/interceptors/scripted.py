"""Test stand-ins shared by the agent, interceptor and team tests.

`ScriptedModel` is the model: a deterministic ModelProvider whose reply is a function of the
request, recording every request it received (what crossed the model boundary). `RecordingChannel`
is a platform: it records what the team posted and hands back platform ids. Everything else in
these tests (stores on SQLite files, assembler, capture, outbox, team) is the real thing.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Awaitable, Callable
from typing import ClassVar

from threadline.agents.llm import ModelRequest, ModelResponse
from threadline.channels.base import BotIdentity, Channel, ChannelEvents
from threadline.errors import ChannelPermanentError
from threadline.history.model import Participant, StoredMessage, ToolCall

Reply = Callable[[ModelRequest], ModelResponse | Awaitable[ModelResponse]]

ANN = Participant(kind="user", id="U_ANN", display_name="Ann")
BOB = Participant(kind="user", id="U_BOB", display_name="Bob")
CAL = Participant(kind="user", id="U_CAL", display_name="Cal")
_ids = itertools.count(1)


def last_user_text(request: ModelRequest) -> str:
    return next((m.content for m in reversed(request.messages) if m.role == "user"), "")


def echo(request: ModelRequest) -> ModelResponse:
    return ModelResponse(text=f"re: {last_user_text(request).splitlines()[-1]}")


class ScriptedModel:
    """A deterministic model: `reply(request)` decides each answer; requests are recorded."""

    def __init__(self, reply: Reply = echo) -> None:
        self.reply = reply
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        answer = self.reply(request)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer


def tool_call(name: str, **input: object) -> ToolCall:
    return ToolCall(id=f"toolu_{next(_ids)}", name=name, input=input)


def say(
    content: str,
    *,
    who: Participant = ANN,
    conversation_id: str = "local:room",
    **metadata: object,
) -> StoredMessage:
    """An inbound human turn with a platform message id, as a channel would deliver it."""
    message_id = str(metadata.pop("message_id", f"m{next(_ids)}"))
    scope = str(metadata.pop("scope", "channel"))
    return StoredMessage(
        id=f"{conversation_id}:{message_id}", conversation_id=conversation_id, participant=who,
        content=content, scope=scope,  # type: ignore[arg-type]
        metadata={"channel_type": "local", "message_id": message_id, **metadata},
    )


class RecordingChannel(Channel):
    """A platform stand-in: records each posted reply and returns a platform id for it."""

    channel_type: ClassVar[str] = "local"
    max_message_chars: ClassVar[int] = 4000

    def __init__(self, *, name: str = "room", bot_user_id: str = "UBOT",
                 username: str = "helperbot") -> None:
        super().__init__(name=name)
        self._identity = BotIdentity(user_id=bot_user_id, username=username)
        self.sent: list[tuple[str, str, str | None]] = []  # (conversation, text, agent)
        self.fail_next: int = 0

    async def start(self, events: ChannelEvents) -> None:
        self.identity = self._identity

    async def stop(self) -> None:
        return None

    async def send_reply(
        self, inbound: StoredMessage, text: str, *, agent_name: str | None = None
    ) -> list[str]:
        if self.fail_next:
            self.fail_next -= 1
            raise ChannelPermanentError(f"channel {self.name}: conversation "
                                        f"{inbound.conversation_id} is gone")
        self.sent.append((inbound.conversation_id, text, agent_name))
        return [f"sent{len(self.sent)}"]
