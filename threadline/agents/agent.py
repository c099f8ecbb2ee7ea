"""An agent: one LLM persona answering turns of a shared conversation, with tools.

    support = Agent(name="support", system_prompt="You help customers.", tools=[lookup_order],
                    conversation_history=SqlConversationStore("sqlite:///threadline.db"))
    result = await support.invoke(inbound_message)

One turn, top to bottom: the recording step (always first) -> the agent's own interceptors
-> `assemble_prompt` from the store -> model call (its text shown as it is written, where the
provider streams and the turn has a `deliver`) -> the tools it asked for (the status names
them) -> model call ... until the model ends its turn, `max_tool_rounds` tool rounds have run,
or `timeout` seconds have passed -> an `AgentResult`, which the recording step stores. With
tracing on (`threadline.tracing`) the turn, each model call and each tool call are spans.

Embedded without channels, `invoke` records through capture (`CaptureInterceptor`): the inbound
turn before the run, the reply after it, through the agent's writer; nothing is posted. With
channels, the turn pipeline (`threadline.pipeline`) owns the turn: it records the inbound turn
itself and passes its own recording step, which delivers the reply and then records it.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, cast

import structlog

from threadline.agents.approvals import ApprovalGate
from threadline.agents.grounding import ground_prompt, held_back
from threadline.agents.llm import (
    ModelChoice,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ModelUsage,
    StreamingProvider,
    Thinking,
)
from threadline.agents.observe import NO_TRACE, TurnObserver, TurnTrace
from threadline.agents.providers import build_default_provider, default_plug
from threadline.agents.search_tool import make_conversation_search_tool
from threadline.agents.seeing import (
    describe_images,
    images_cost,
    with_images,
    without_images,
)
from threadline.agents.tools import Tool, function_tool, to_tool_spec
from threadline.errors import ConfigError, ModelError, ModelUnavailableError, StoreError
from threadline.history.addressing import mentions_in_text
from threadline.history.assembler import AssemblerOptions, assemble_prompt
from threadline.history.file_store import FileStore
from threadline.history.files import (
    ToolFile,
    TurnFile,
    files_extra,
    image_size,
    sha256_of,
    sniff,
)
from threadline.history.kept_recall import KeptRecall
from threadline.history.memory import InMemoryConversationStore
from threadline.history.model import (
    MessageMetadata,
    Participant,
    StoredMessage,
    ToolCall,
    ToolExchange,
    ToolResult,
)
from threadline.history.person_memory import PersonMemory
from threadline.history.processors import (
    ToolResultMasking,
    make_retrieve_tool_result_tool,
)
from threadline.history.projection import TRANSCRIPT_NOTE, merge_roles, project_turn
from threadline.history.prompt import PromptMessage
from threadline.history.store import ConversationStore
from threadline.history.summary import Summarizer
from threadline.interceptors.base import Interceptor, run_chain
from threadline.interceptors.capture import CaptureInterceptor, DurableWriter
from threadline.people.memory import person_memory_for
from threadline.schedules.turns import nothing_to_say
from threadline.tracing import spans as tracing
from threadline.turn import (
    AgentResult,
    Deliver,
    Grounding,
    Owing,
    PromptFigures,
    TurnContext,
    reply_turn_id,
)

log = structlog.get_logger("threadline.agent")

# A name people can type as "@name" and every platform's mention parser keeps whole.
_AGENT_NAME = re.compile(r"^[A-Za-z0-9_][\w.-]{0,63}$")
# Makes a tool for one turn, bound to its conversation and person (`schedule`, `hand_off`).
TurnTool = Callable[[TurnContext], Tool]


class Toolset(Protocol):
    """Tools that may change between turns (an MCP server's, filtered for one agent)."""

    def tools(self) -> Sequence[Tool]: ...


UNFINISHED_REPLY = {
    "max_tool_rounds": "I could not finish this: I reached my limit of tool steps for one turn.",
    "timeout": "I could not finish this in time. Please try again or ask something smaller.",
}


# The least history a prompt keeps beside large pictures (the assembler's own minimum budget).
MIN_HISTORY_TOKENS = 50
# The text of a reply that is only a file a tool made (platforms post a file with no text).
FILES_ONLY_REPLY = "Here it is."


@dataclass(slots=True)
class _Run:
    """What one turn has gathered so far (kept outside the timeout so a timeout keeps it)."""

    text: str = ""
    exchanges: list[ToolExchange] = field(default_factory=list)
    usage: ModelUsage = field(default_factory=ModelUsage)
    calls: int = 0
    figures: PromptFigures | None = None
    shown_ids: tuple[str, ...] = ()  # turns the prompt shows; the search tool skips them
    person: PersonMemory | None = None  # the answered person's memory (person_memory on)
    forgotten_through: int | None = None  # the agent was asked to forget up to here (/forget)
    trace: TurnTrace = NO_TRACE
    deadline: asyncio.Timeout | None = None  # the turn's; moved on while a person decides
    # Which of the agent's models answers: a fallback that answered keeps the rest of the turn.
    answering: int = 0
    by_model: dict[str, ModelUsage] = field(default_factory=dict)
    files: list[TurnFile] = field(default_factory=list)  # files tools made, sent with the reply

    def add(self, response: ModelResponse, model: str) -> None:
        self.calls += 1
        if response.text:
            self.text = response.text
        self.usage = self.usage + response.usage
        self.by_model[model] = self.by_model.get(model, ModelUsage()) + response.usage


def _as_tool(candidate: Any, agent_name: str) -> Tool:
    if all(hasattr(candidate, a) for a in ("name", "description", "input_schema", "run")):
        return cast(Tool, candidate)
    if inspect.iscoroutinefunction(candidate):
        return function_tool(candidate)
    raise ConfigError(
        f"agent {agent_name!r}: tool {candidate!r} is neither a tool (.name, .description, "
        ".input_schema, async .run) nor an async function; define it with 'async def'"
    )


@dataclass(frozen=True, slots=True)
class Memory:
    """What the agent's prompt holds and how it keeps it: the assembler's options (budget,
    addressed-only filtering, recall, ...), the summarizer of older turns, and where turns
    wait on disk while the store is away (an agent used alone; a team gives one writer)."""

    options: AssemblerOptions = field(default_factory=AssemblerOptions)
    summarizer: Summarizer | None = None
    outbox_path: str | Path | None = None


@dataclass(frozen=True, slots=True)
class Answering:
    """How the agent answers a turn: a turn's limits, its model's output and thinking, the
    models asked when its own stays unavailable, and whether it sees pictures."""

    max_tool_rounds: int = 5
    timeout: float = 60.0
    max_tokens: int = 1024
    thinking: Thinking = "default"
    # Asked in order when the ones before stay unavailable past their retries.
    fallbacks: Sequence[ModelChoice] = ()
    sees_images: bool = True


@dataclass(frozen=True, slots=True)
class Tooling:
    """Tools beside the agent's own: made for each turn with its conversation and person in
    their closure (`schedule`, `hand_off`), ones that come and go while it runs (an MCP
    server's, read at each turn), the calls that wait for a person's approval (these
    names, or any tool with `requires_approval`), and the block a feature grounds each turn
    with (the knowledge feature's sections: `threadline.turn.Grounding`)."""

    turn_tools: Sequence[TurnTool] = ()
    toolsets: Sequence[Toolset] = ()
    approvals: ApprovalGate | None = None
    require_approval: Iterable[str] = ()
    grounding: Grounding | None = None


class Agent:
    """An LLM persona with a name, a system prompt, tools and a shared conversation store."""

    def __init__(
        self,
        *,
        name: str,
        system_prompt: str = "",
        model: str | None = None,
        provider: ModelProvider | None = None,
        tools: Iterable[Any] = (),
        conversation_history: ConversationStore | None = None,
        description: str = "",
        aliases: Iterable[str] = (),
        interceptors: Sequence[Interceptor] = (),
        observer: TurnObserver | None = None,
        memory: Memory | None = None,
        answering: Answering | None = None,
        tooling: Tooling | None = None,
    ) -> None:
        memory = memory or Memory()
        answering = answering or Answering()
        tooling = tooling or Tooling()
        max_tool_rounds, timeout = answering.max_tool_rounds, answering.timeout
        if not isinstance(name, str) or not _AGENT_NAME.match(name):
            raise ConfigError(
                f"agent name {name!r} is not usable: people address agents as '@name', so use "
                "1-64 letters, digits, '_', '.' or '-', starting with a letter or digit"
            )
        if max_tool_rounds < 0 or timeout <= 0:
            raise ConfigError(
                f"agent {name!r}: max_tool_rounds must be >= 0 and timeout > 0 "
                f"(got {max_tool_rounds} and {timeout})"
            )
        self.name = name
        self.system_prompt = system_prompt
        chosen = model or default_plug().default_model
        if chosen is None:
            raise ConfigError(f"agent {name!r}: name its model (model=...); the default "
                              f"provider {default_plug().name!r} has no default model")
        self.model = chosen
        self.description = description
        self.aliases = tuple(aliases)
        self.store: ConversationStore = conversation_history or InMemoryConversationStore()
        self.tools = tuple(_as_tool(t, name) for t in tools)
        names = [t.name for t in self.tools]
        clash = sorted({n for n in names if names.count(n) > 1 or n == "conversation_search"})
        if clash:
            raise ConfigError(
                f"agent {name!r}: tool names must be unique and 'conversation_search' is built "
                f"in; rename {', '.join(clash)}"
            )
        options = memory.options
        self.assembler_options = replace(
            options, agent_aliases=(*options.agent_aliases, *self.aliases))
        self.interceptors = tuple(interceptors)
        self.provider = provider if provider is not None else build_default_provider()
        # Asked in order when the ones before stay unavailable past their retries.
        self.fallbacks = tuple(answering.fallbacks)
        self.thinking: Thinking = answering.thinking
        self.max_tool_rounds = max_tool_rounds
        self.timeout = timeout
        self.summarizer = memory.summarizer
        # The recall block this agent last showed per conversation, kept while the topic
        # holds so the prompt cache serves it (`history.kept_recall`).
        self._kept_recall = KeptRecall()
        self.max_tokens = answering.max_tokens
        self.participant = Participant(kind="agent", id=name, display_name=name)
        self._outbox_path = memory.outbox_path
        self._writer: DurableWriter | None = None
        self._started_writer = False
        # Sees each turn's prompt, model calls and outcome (the reply record); None: nobody.
        self.observer = observer
        self.turn_tools = tuple(tooling.turn_tools)
        self.toolsets = tuple(tooling.toolsets)
        self.approvals = tooling.approvals
        self.require_approval = frozenset(tooling.require_approval)
        self.grounding = tooling.grounding
        if self.toolsets:
            # Their results can be large: older ones are hidden behind retrieve_tool_result.
            self.assembler_options = replace(self.assembler_options, processors=(
                *self.assembler_options.processors, ToolResultMasking()))
        # Where the bytes of turns' files are (set by the team); images go to the model as
        # image blocks when it sees them, else it reads the line naming the image.
        self.files: FileStore | None = None
        self.sees_images = answering.sees_images

    def __repr__(self) -> str:
        return f"Agent(name={self.name!r}, model={self.model!r})"

    @property
    def writer(self) -> DurableWriter:
        """The durable writer capture records through: the team's, or the agent's own.

        An agent used alone makes its own (with the store's default outbox, or `outbox_path`)
        on first use; a `Team` gives all its agents one, so a store has one outbox and one
        replay order.
        """
        if self._writer is None:
            self._writer = DurableWriter.for_store(self.store, self._outbox_path)
            self._started_writer = True
            self._writer.start()
        return self._writer

    @writer.setter
    def writer(self, writer: DurableWriter) -> None:
        if writer.store is not self.store:
            raise ConfigError(f"agent {self.name!r}: its writer must write to its own store")
        self._writer = writer
        self._started_writer = False

    async def invoke(
        self,
        message: StoredMessage,
        *,
        aliases: Sequence[str] = (),
        deliver: Deliver | None = None,
        reason: str | None = None,
        recording: Interceptor | None = None,
        channel: str | None = None,
        after_delivery: Owing | None = None,
    ) -> AgentResult:
        """Answer one inbound turn; see the module docstring for the path it takes.

        `recording` is the turn's outermost step, which stores what the turn says: capture by
        default, the turn pipeline's when it drives the agent. `deliver` is where the reply is
        shown while it is written (the status, streamed text). `reason` says why this agent
        answers (the team's routing decision); `channel` is the channel the turn came in on.
        `after_delivery` (the pipeline's) gathers what the turn leaves to write, to be written
        with its delivered reply.
        """
        context = TurnContext(
            agent=self, inbound=message, conversation_id=message.conversation_id,
            store=self.store,
            log=log.bind(conversation_id=message.conversation_id, agent=self.name),
            aliases=tuple(aliases), deliver=deliver, reason=reason, channel=channel,
            after_delivery=after_delivery,
        )
        chain = (recording or CaptureInterceptor(self.writer), *self.interceptors)
        with tracing.agent_span(self.name, message.conversation_id, reason=reason,
                                model=self.model) as span:
            # Inside the span: the turn's log lines and its reply record name its trace.
            context.log = context.log.bind(**tracing.log_fields())
            trace = self.observer.begin(self, context) if self.observer is not None else NO_TRACE
            try:
                result = await run_chain(chain, context, lambda c: self._turn(c, trace))
            except BaseException as exc:
                trace.finished(None, exc)
                raise
            trace.finished(result)
            span.finished(result)
        return result

    @property
    def system_text(self) -> str:
        """The system text a model is sent: the agent's prompt, then the fixed note saying how
        the conversation's turns are shown (`projection.TRANSCRIPT_NOTE`; constant, so the
        cached prefix stays the same)."""
        return "\n\n".join(p for p in (self.system_prompt, TRANSCRIPT_NOTE) if p)

    def reply_result(
        self, context: TurnContext, text: str, *, stop_reason: str, latency: float = 0.0
    ) -> AgentResult:
        """A result with a fixed reply (for interceptors that answer instead of the model)."""
        return AgentResult(
            agent_name=self.name, conversation_id=context.conversation_id, output=text,
            outbound=self._outbound(context.inbound, text, ()) if text else None,
            latency=latency, stop_reason=stop_reason,
        )

    async def close(self) -> None:
        """Stop the agent's own writer's replay (what is left stays in the outbox).

        A writer the team gave is the team's to close.
        """
        if self._writer is not None and self._started_writer:
            await self._writer.close()

    # -- one turn --------------------------------------------------------------------------

    async def _turn(self, context: TurnContext, trace: TurnTrace = NO_TRACE) -> AgentResult:
        started = time.perf_counter()
        run = _Run(trace=trace)
        deadline = run.deadline = asyncio.timeout(self.timeout)
        try:
            async with deadline:
                messages = await self._prompt(context, run)
                stop_reason = await self._loop(context, messages, run)
        except TimeoutError:
            if not deadline.expired():
                raise
            stop_reason = "timeout"
            context.log.warning("agent.timeout", timeout=self.timeout, model_calls=run.calls,
                                tool_exchanges=len(run.exchanges))
        if self.sees_images:  # by the model that answered the turn
            seer = self.models[run.answering]
            await describe_images(context.inbound, files=self.files, store=context.store,
                                  provider=seer.provider, model=seer.model)
        text = run.text or UNFINISHED_REPLY.get(stop_reason, "")
        if nothing_to_say(context.inbound, text):
            text = ""  # a scheduled prompt with nothing worth posting now posts nothing
        if run.files and not text:
            text = FILES_ONLY_REPLY
        exchanges = tuple(run.exchanges)
        return AgentResult(
            agent_name=self.name, conversation_id=context.conversation_id, output=text,
            outbound=self._outbound(context.inbound, text, exchanges, tuple(run.files))
            if text or exchanges else None,
            tool_exchanges=exchanges, usage=run.usage, usage_by_model=dict(run.by_model),
            latency=time.perf_counter() - started, prompt=run.figures,
            stop_reason=stop_reason, model_calls=run.calls,
        )

    async def _prompt(self, context: TurnContext, run: _Run) -> list[PromptMessage]:
        options = self.assembler_options
        if context.aliases:
            options = replace(options, agent_aliases=(*options.agent_aliases, *context.aliases))
        if self.sees_images and self.files is not None and images_cost(context.inbound):
            # The turn's pictures take their share of the budget; the history fits the rest.
            options = replace(options, token_budget=max(
                MIN_HISTORY_TOKENS, options.token_budget - images_cost(context.inbound)))
        # The grounding block's share; the history fits the rest.
        options, reserved = held_back(self.grounding, self.name, options,
                                      minimum=MIN_HISTORY_TOKENS)
        try:
            if options.person_memory:
                run.person = await person_memory_for(context.store, context.inbound,
                                                     by_meaning=options.recall_by_meaning)
            # The prompt is for the inbound turn, even when its write still waits in the outbox.
            prompt = await assemble_prompt(context.store, context.conversation_id, self.name,
                                           self.name, options, self.summarizer,
                                           answering=context.inbound, person=run.person,
                                           kept_recall=self._kept_recall)
            if reserved and self.grounding is not None:
                await ground_prompt(self.grounding, context, prompt, room=reserved)
        except StoreError as exc:
            # The reply matters more than the history: answer the turn on its own.
            context.log.warning("agent.history_unavailable", error=str(exc))
            note = "history unavailable; answered from the inbound turn alone"
            run.figures = PromptFigures(token_count=0, included=0, dropped_for_budget=0,
                                        filtered=0, recalled=0, summary_used=False,
                                        summary_created=False, notes=(note,))
            run.trace.prompt_assembled(None, note)
            return merge_roles([project_turn(context.inbound, self.name,
                                             tool_trace=options.tool_trace)])
        run.figures = PromptFigures.of(prompt)
        run.shown_ids = tuple(prompt.shown_ids)
        run.forgotten_through = prompt.forgotten_through
        run.trace.prompt_assembled(prompt)
        tracing.explain_prompt(prompt)
        if not self.sees_images:
            return prompt.messages
        messages, image_cost = await with_images(prompt.messages, context.inbound, self.files)
        run.figures = replace(run.figures, token_count=run.figures.token_count + image_cost)
        return messages

    async def _loop(self, context: TurnContext, messages: list[PromptMessage], run: _Run) -> str:
        search: Tool = make_conversation_search_tool(
            context.store, context.conversation_id,
            exclude_ids=(context.inbound.id, *run.shown_ids),
            forgotten_through=run.forgotten_through, person=run.person,
            by_meaning=self.assembler_options.recall_by_meaning)
        tools: list[Tool] = [*self.tools, *(make(context) for make in self.turn_tools), search]
        if self.toolsets:
            tools += [t for toolset in self.toolsets for t in toolset.tools()]
            tools.append(make_retrieve_tool_result_tool(context.store, context.conversation_id))
        by_name = {t.name: t for t in tools}
        specs = [to_tool_spec(t) for t in tools]
        history = list(messages)
        for round_number in range(self.max_tool_rounds + 1):
            request = ModelRequest(model=self.model, system=self.system_text,
                                   messages=list(history), tools=specs,
                                   max_tokens=self.max_tokens, thinking=self.thinking)
            response = await self._ask(context, request, run)
            if not response.tool_calls:
                return response.stop_reason or "end_turn"
            if round_number == self.max_tool_rounds:
                # These last calls are not run, so they are not stored: a call without its
                # result would break every later request.
                context.log.warning("agent.max_tool_rounds", max_tool_rounds=self.max_tool_rounds,
                                    unrun=[c.name for c in response.tool_calls])
                return "max_tool_rounds"
            if context.deliver is not None:
                await context.deliver.working(", ".join(c.name for c in response.tool_calls))
            exchanges = await asyncio.gather(
                *(self._run_tool(context, call, by_name, run) for call in response.tool_calls))
            if context.deliver is not None:
                await context.deliver.working()
            run.exchanges.extend(exchanges)
            history.append(PromptMessage("assistant", response.text, tuple(exchanges),
                                         in_round=True))
        raise AssertionError("unreachable: the loop returns on its last round")

    async def _ask(self, context: TurnContext, request: ModelRequest, run: _Run
                   ) -> ModelResponse:
        """One model call (`_ask_models`); a request with pictures that the model refuses (a
        rejected request, not an unavailable model) is asked again without them: the turn's
        text names each picture, so the text is still answered."""
        if not any(m.images for m in request.messages):
            return await self._ask_models(context, request, run)
        try:
            return await self._ask_models(context, request, run)
        except ModelUnavailableError:
            raise
        except ModelError as exc:
            context.log.warning("agent.image_refused", error=str(exc))
            return await self._ask_models(
                context, replace(request, messages=without_images(request.messages)), run)

    @property
    def models(self) -> tuple[ModelChoice, ...]:
        """The agent's model, then its fallbacks, in the order they are asked."""
        return (ModelChoice(self.provider, self.model), *self.fallbacks)

    async def _ask_models(self, context: TurnContext, request: ModelRequest, run: _Run
                          ) -> ModelResponse:
        """One model call, by the model answering this turn or, when it stays unavailable
        (overloaded, down, too slow, past its provider's retries), by the next in `models`;
        a rejected request (a 400) is not passed on, as another model would not fix it."""
        models = self.models
        for index in range(run.answering, len(models)):
            choice = models[index]
            attempt = replace(request, model=choice.model)
            called = time.perf_counter()
            last = index + 1 == len(models)
            try:
                with tracing.model_span(attempt, choice.provider) as span:
                    try:
                        response = await self._call(context, choice.provider, attempt)
                    except ModelUnavailableError:
                        if not last:
                            span.passed_over()
                        raise
                    span.answered(response)
            except ModelUnavailableError as exc:
                run.trace.model_called(attempt, None, latency=time.perf_counter() - called,
                                       error=exc, passed_over=not last)
                if last:
                    raise
                context.log.warning("agent.model_fallback", model=choice.model,
                                    fallback=models[index + 1].model, error=str(exc))
                continue
            except BaseException as exc:
                run.trace.model_called(attempt, None, latency=time.perf_counter() - called,
                                       error=exc)
                raise
            run.trace.model_called(attempt, response, latency=time.perf_counter() - called)
            run.answering = index
            run.add(response, choice.model)
            return response
        raise AssertionError("unreachable: the last model returns or raises")

    async def _call(self, context: TurnContext, provider: ModelProvider,
                    request: ModelRequest) -> ModelResponse:
        """One provider call; its text is shown on the platform as it is written, where both
        the provider and the turn's delivery can."""
        deliver = context.deliver
        if deliver is None or not isinstance(provider, StreamingProvider):
            return await provider.complete(request)
        draft: StoredMessage | None = None

        async def show(text: str) -> None:
            nonlocal draft
            draft = (self._outbound(context.inbound, text, ()) if draft is None
                     else replace(draft, content=text))
            await deliver.show(draft)

        return await provider.stream(request, on_text=show)

    def needs_approval(self, tool: Tool) -> bool:
        return self.approvals is not None and (
            tool.name in self.require_approval or bool(getattr(tool, "requires_approval", False)))

    async def _run_tool(
        self, context: TurnContext, call: ToolCall, by_name: Mapping[str, Tool], run: _Run
    ) -> ToolExchange:
        tool = by_name.get(call.name)
        with tracing.tool_span(call, tool.description if tool is not None else "") as span:
            content, is_error = await self._tool_result(context, call, tool, by_name, run)
            span.tool_result(content, is_error=is_error)
        return ToolExchange(call=call, result=ToolResult(
            tool_call_id=call.id, content=content, is_error=is_error))

    async def _tool_result(self, context: TurnContext, call: ToolCall, tool: Tool | None,
                           by_name: Mapping[str, Tool], run: _Run) -> tuple[str, bool]:
        """What a tool call gives the model, and whether it is an error."""
        if tool is None:
            content = (f"Error: there is no tool named {call.name!r}; available tools: "
                       f"{', '.join(sorted(by_name))}.")
            is_error = True
        elif self.approvals is not None and self.needs_approval(tool):
            loop = asyncio.get_running_loop()
            waited = loop.time()
            content, is_error = await self.approvals.run(context, call, tool)
            when = run.deadline.when() if run.deadline is not None else None
            if run.deadline is not None and when is not None:
                # The time a person took to decide is not the agent's to spend.
                run.deadline.reschedule(when + loop.time() - waited)
        else:
            try:
                made = await tool.run(dict(call.input))
                content = made if isinstance(made, str) else await self._keep_file(made, run)
                is_error = False
            except Exception as exc:
                # A failing tool is news for the model (it can apologise or try another way),
                # not a reason to lose the whole turn.
                context.log.warning("agent.tool_failed", tool=call.name, error=repr(exc))
                content = f"Error: the tool {call.name} failed: {type(exc).__name__}: {exc}"
                is_error = True
        return str(content), is_error

    async def _keep_file(self, made: ToolFile, run: _Run) -> str:
        """Keep a file a tool made and send it with the reply; what the model reads of it."""
        if self.files is None:
            raise ConfigError(f"agent {self.name!r}: a tool made the file {made.name!r}, but "
                              "no files are set up (the files section of the config)")
        file = TurnFile(name=made.name, media_type=sniff(made.data, made.name),
                        size=len(made.data), sha256=sha256_of(made.data))
        if file.kind == "image":
            width, height = image_size(made.data)
            file = replace(file, width=width, height=height)
        await self.files.put(made.data, sha256=file.sha256, media_type=file.media_type)
        run.files.append(file)
        return (f"The file {file.name} ({file.media_type}, {file.size:,} bytes) will be sent "
                "with your reply.")

    def reply_turn(self, inbound: StoredMessage, text: str) -> StoredMessage:
        """A reply to `inbound` written without the model (a command's answer), as a turn."""
        return self._outbound(inbound, text, ())

    def _outbound(
        self, inbound: StoredMessage, text: str, exchanges: tuple[ToolExchange, ...],
        files: tuple[TurnFile, ...] = (),
    ) -> StoredMessage:
        """The reply as a turn: same conversation, scope and thread, addressed to the asker."""
        source = inbound.metadata
        return StoredMessage(
            id=reply_turn_id(inbound, self.name),
            conversation_id=inbound.conversation_id,
            participant=self.participant,
            content=text,
            scope=inbound.scope,
            metadata=MessageMetadata(
                channel_type=source.channel_type, channel_name=source.channel_name,
                channel_id=source.channel_id, thread_id=source.thread_id,
                mentions=tuple(mentions_in_text(text)),
                reply_to_message_id=source.message_id,
                reply_to_participant_id=inbound.participant.id,
                extra=files_extra(files),
            ),
            tool_exchanges=exchanges,
        )
