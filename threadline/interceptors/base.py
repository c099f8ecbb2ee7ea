"""The interceptor contract: small middleware around one agent turn, as in bolt-python.

An interceptor is any async callable `(context, call_next) -> AgentResult`. It may act before
the turn, after it (on the result `await call_next()` returns), or instead of it (return a
result without calling `call_next`; `context.agent.reply_result(...)` builds one). Interceptors
are registered per agent and run in order, after the capture interceptor, which is always first.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from threadline.history.model import StoredMessage
from threadline.history.store import ConversationStore

if TYPE_CHECKING:
    from threadline.agents.agent import Agent, AgentResult

CallNext = Callable[[], Awaitable["AgentResult"]]
# Posts a reply where the inbound turn was said; returns the platform ids of the parts posted.
Deliver = Callable[[str], Awaitable[list[str]]]


@dataclass(slots=True)
class TurnContext:
    """One turn of one agent: who is answering, what, where, and a logger that says so.

    `inbound_recorded` is True when the caller (the team) already stored the inbound turn, so
    capture does not write it twice. `aliases` are extra names the agent answers to in this
    channel (the bot's platform ids). `deliver`, when given, posts the reply on the platform
    before capture records it, so the stored turn carries the platform's message id.
    `addressed_because` is why this agent answers (mention, alias, dm, reply, thread,
    respond_to_all, agent_mention), when the team routed the turn.
    """

    agent: Agent
    inbound: StoredMessage
    conversation_id: str
    store: ConversationStore
    log: Any  # a structlog BoundLogger bound with conversation_id and agent
    inbound_recorded: bool = False
    aliases: tuple[str, ...] = ()
    deliver: Deliver | None = None
    addressed_because: str | None = None


class Interceptor(Protocol):
    """Middleware around a turn; see the module docstring."""

    async def __call__(self, context: TurnContext, call_next: CallNext) -> AgentResult: ...


async def run_chain(
    interceptors: Sequence[Interceptor],
    context: TurnContext,
    turn: Callable[[TurnContext], Awaitable[AgentResult]],
) -> AgentResult:
    """Run `turn` inside the interceptors, the first one outermost."""

    async def call(index: int) -> AgentResult:
        if index == len(interceptors):
            return await turn(context)
        return await interceptors[index](context, lambda: call(index + 1))

    return await call(0)
