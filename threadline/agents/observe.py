"""What an agent tells an observer about one turn: the prompt, each model call, the outcome.

The agent calls these hooks and nothing else; what is kept (and where) is the observer's
business. `threadline.inspector.ReplyRecorder` keeps a reply record per turn. Hooks must be
cheap and must not raise: they run inside the turn, between the prompt and the model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from threadline.agents.agent import Agent
    from threadline.agents.llm import ModelRequest, ModelResponse
    from threadline.history.prompt import AssembledPrompt
    from threadline.turn import AgentResult, TurnContext


class TurnTrace(Protocol):
    """One turn as it happens; each hook is called in the order the turn runs."""

    def prompt_assembled(self, prompt: AssembledPrompt | None, note: str = "") -> None:
        """The assembled prompt (None when the history was unavailable), before any call."""

    def model_called(self, request: ModelRequest, response: ModelResponse | None, *,
                     latency: float, error: BaseException | None = None,
                     passed_over: bool = False) -> None:
        """One model call: the exact request, the response (or the error) and its latency;
        `passed_over` when the model was unavailable and the agent's next model was asked."""

    def finished(self, result: AgentResult | None, error: BaseException | None = None) -> None:
        """The turn is over: the result as delivered and stored, or the error it raised."""


class TurnObserver(Protocol):
    """Starts a `TurnTrace` for each turn an agent answers."""

    def begin(self, agent: Agent, context: TurnContext) -> TurnTrace: ...


class _NoTrace:
    """The trace of an agent nobody observes: every hook does nothing."""

    def prompt_assembled(self, prompt: AssembledPrompt | None, note: str = "") -> None:
        return None

    def model_called(self, request: ModelRequest, response: ModelResponse | None, *,
                     latency: float, error: BaseException | None = None,
                     passed_over: bool = False) -> None:
        return None

    def finished(self, result: AgentResult | None, error: BaseException | None = None) -> None:
        return None


NO_TRACE: TurnTrace = _NoTrace()
