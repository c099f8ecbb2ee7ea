"""Error replies: a failed turn answers with a short, friendly sentence instead of silence.

Why it exists: when the model is down or a bug surfaces, the person who asked should hear that
something went wrong and what to do, not see a stack trace or nothing at all; the operator gets
the full exception in the log, with the conversation and agent it happened in.
"""

from __future__ import annotations

from threadline.errors import ModelError, ModelUnavailableError, StoreError
from threadline.interceptors.base import CallNext
from threadline.turn import AgentResult, TurnContext

TEMPLATE = "Sorry, I could not answer that just now ({reason}). Please try again in a minute."


def reason_for(exc: Exception) -> str:
    """What went wrong, in words a chat user understands."""
    if isinstance(exc, ModelUnavailableError):
        return "the model is unavailable"
    if isinstance(exc, ModelError):
        return "the model's answer could not be read"
    if isinstance(exc, StoreError):
        return "the conversation history is unavailable"
    return "something went wrong on my side"


class ErrorReplyInterceptor:
    """Turns an exception from the rest of the chain into a friendly reply and a log entry."""

    def __init__(self, *, template: str = TEMPLATE) -> None:
        self.template = template

    async def __call__(self, context: TurnContext, call_next: CallNext) -> AgentResult:
        try:
            return await call_next()
        except Exception as exc:
            reason = reason_for(exc)
            context.log.exception("turn.failed", reason=reason,
                                  participant=context.inbound.participant.id)
            return context.agent.reply_result(context, self.template.format(reason=reason),
                                              stop_reason="error")
