"""The interceptor contract: small middleware around one agent turn, as in bolt-python.

An interceptor is any async callable `(context, call_next) -> AgentResult`. It may act before
the turn, after it (on the result `await call_next()` returns), or instead of it (return a
result without calling `call_next`; `context.agent.reply_result(...)` builds one). Interceptors
are registered per agent and run in order, inside the turn's recording step, which is always
first: the turn pipeline's (which also delivers the reply, so a friendly error reply an
interceptor returns is posted too), or capture for an agent used on its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from threadline.turn import AgentResult, TurnContext

CallNext = Callable[[], Awaitable[AgentResult]]


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
