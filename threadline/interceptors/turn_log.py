"""Turn logging: one structured line per turn, saying who, where, what it cost and how long.

Why it exists: an operator answering "why was the bot slow / expensive / silent in #support?"
needs every turn as one searchable event, bound to its conversation and agent.
"""

from __future__ import annotations

import time

from threadline.interceptors.base import CallNext
from threadline.turn import AgentResult, TurnContext


class TurnLogInterceptor:
    """Logs `turn.done` (or `turn.raised`) with the participant, tokens, tools and latency."""

    async def __call__(self, context: TurnContext, call_next: CallNext) -> AgentResult:
        started = time.perf_counter()
        participant = context.inbound.participant
        try:
            result = await call_next()
        except BaseException as exc:
            context.log.warning("turn.raised", participant=participant.id,
                                error=type(exc).__name__,
                                latency_ms=round((time.perf_counter() - started) * 1000, 2))
            raise
        context.log.info(
            "turn.done", participant=participant.id, participant_kind=participant.kind,
            stop_reason=result.stop_reason, model_calls=result.model_calls,
            input_tokens=result.usage.input_tokens, output_tokens=result.usage.output_tokens,
            tool_calls=len(result.tool_exchanges),
            prompt_tokens=result.prompt.token_count if result.prompt else None,
            latency_ms=round((time.perf_counter() - started) * 1000, 2),
        )
        return result
