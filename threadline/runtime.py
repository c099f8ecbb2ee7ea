"""The runtime: a `Settings` turned into a running team of agents on its channels.

    runtime = Runtime.build(settings)
    await runtime.start()        # store ready, channels connected, ops server listening
    await runtime.wait()         # until SIGTERM/SIGINT (or `request_stop()`)
    await runtime.stop()         # stop taking events, finish turns in flight, flush the outbox

Shutdown order matters for losing nothing. A channel that has stopped cannot send, so turns in
flight are finished first, with the channels still connected (readiness already says 503, so a
load balancer sends nothing new; events the platform still delivers are answered too), for at
most `shutdown_timeout` seconds. Then the channels stop, the team finishes whatever is left
(capture records each inbound turn and reply), the durable writer flushes the outbox, and only
then the store closes.
"""

from __future__ import annotations

import asyncio
import importlib
import signal
import sys
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

import structlog

from threadline.agents.agent import Agent
from threadline.agents.approvals import ApprovalGate
from threadline.agents.file_setup import file_intakes
from threadline.agents.llm import ModelProvider
from threadline.agents.mcp import McpServer, McpToolset
from threadline.backends import Backend, BackendOptions, build_backend
from threadline.channels.base import Channel
from threadline.channels.platform import ChannelContext
from threadline.channels.registry import platform_for
from threadline.config import Settings
from threadline.errors import ConfigError, StoreError
from threadline.history.embedding_model import shared_embedder
from threadline.history.indexer import VectorIndexer, indexer_for
from threadline.history.model import StoredMessage
from threadline.history.retention import HistoryRetention
from threadline.inspector.console import PREFIX as CONSOLE_PREFIX
from threadline.inspector.setup import Inspector
from threadline.interceptors.base import CallNext, Interceptor
from threadline.interceptors.error_reply import ErrorReplyInterceptor
from threadline.interceptors.rate_limit import Rate, RateLimitInterceptor
from threadline.interceptors.turn_log import TurnLogInterceptor
from threadline.locks import SingleProcessGuard
from threadline.ops import Metrics, OpsServer
from threadline.people.access import Access, AccessInterceptor, PeopleList
from threadline.people.link_codes import link_command
from threadline.proactive import Proactive
from threadline.provider_setup import Providers
from threadline.spend.setup import build_spend_limit, metered, publish_today
from threadline.team import Team, default_commands
from threadline.tracing import Tracing, start_tracing
from threadline.turn import AgentResult, TurnContext

log = structlog.get_logger("threadline.runtime")


def load_tool(reference: str, *, agent: str, settings: Settings) -> Any:
    """Import `module:attribute`; modules beside the config file are found first."""
    module_name, _, attribute = reference.partition(":")
    base = str(settings.base_dir)
    added = base not in sys.path
    if added:
        sys.path.insert(0, base)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"agents.{agent}.tools: cannot import module {module_name!r} for "
                          f"{reference!r} ({exc}); check the name and that it is beside the "
                          f"config or installed") from exc
    finally:
        if added:
            sys.path.remove(base)
    try:
        return getattr(module, attribute)
    except AttributeError as exc:
        raise ConfigError(f"agents.{agent}.tools: module {module_name!r} has no {attribute!r}"
                          ) from exc


def access_for(settings: Settings) -> Access:
    """The `access:` section and each agent's `access:` list, as the lists turns are held to."""
    return Access(
        channels={name: PeopleList.of(entry.allow, entry.deny)
                  for name, entry in settings.access.channels.items()},
        agents={name: PeopleList.of(agent.access.allow, agent.access.deny)
                for name, agent in settings.agents.items() if agent.access is not None},
        admins=frozenset(settings.access.admins))


class MetricsInterceptor:
    """Counts each agent turn, its latency and tokens, labelled with channel and agent."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    async def __call__(self, context: TurnContext, call_next: CallNext) -> AgentResult:
        channel = context.inbound.metadata.channel_name or context.inbound.metadata.channel_type
        try:
            result = await call_next()
        except Exception as exc:
            self.metrics.turn_errors.labels(channel, context.agent.name,
                                            type(exc).__name__).inc()
            raise
        usage = result.usage
        self.metrics.record_turn(channel=channel, agent=context.agent.name,
                                 stop_reason=result.stop_reason, latency=result.latency,
                                 tokens={"input": usage.input_tokens,
                                         "output": usage.output_tokens,
                                         "cache_read": usage.cache_read_input_tokens,
                                         "cache_write": usage.cache_creation_input_tokens})
        return result


class CountedEvents:
    """The `ChannelEvents` the channels see: the team's, with each inbound message counted."""

    def __init__(self, team: Team, metrics: Metrics) -> None:
        self.team = team
        self.metrics = metrics

    async def on_message(self, message: StoredMessage, channel: Channel) -> None:
        self.metrics.inbound.labels(channel.name).inc()
        await self.team.on_message(message, channel)

    async def until_answered(self, message: StoredMessage, channel: Channel) -> None:
        self.metrics.inbound.labels(channel.name).inc()
        await self.team.until_answered(message, channel)

    async def on_edit(self, conversation_id: str, message_id: str, content: str) -> None:
        await self.team.on_edit(conversation_id, message_id, content)

    async def on_delete(self, conversation_id: str, message_id: str) -> None:
        await self.team.on_delete(conversation_id, message_id)

    async def on_context(self, message: StoredMessage) -> None:
        await self.team.on_context(message)


class Runtime:
    """One process's store, agents, team, channels and ops server; see the module docstring."""

    def __init__(self, *, settings: Settings, backend: Backend, team: Team,
                 channels: Sequence[Channel], metrics: Metrics, inspector: Inspector,
                 proactive: Proactive | None = None,
                 stop_requested: asyncio.Event | None = None,
                 mcp_servers: Sequence[McpServer] = ()) -> None:
        self.settings = settings
        self.backend = backend
        self.store = store = backend.history
        self.team = team
        self.inspector = inspector
        self.proactive = proactive or Proactive(settings, backend)
        history = settings.history
        self.retention = HistoryRetention(store, history.retention_days,
                                          history.retention_days_for,
                                          every=history.prune_every_minutes * 60)
        # Turns' vectors are made in the background, never on a turn's path; made at start
        # when both halves are there (the embeddings extra's model, a backend keeping vectors).
        self.indexer: VectorIndexer | None = None
        self.channels = tuple(channels)
        self.mcp_servers = tuple(mcp_servers)
        self.metrics = metrics
        self.ops: OpsServer | None = None
        self.events = CountedEvents(team, metrics)
        metrics.count_skipped_events(self.channels)
        self._started: set[str] = set()
        self._stop = stop_requested or asyncio.Event()
        self._guard: SingleProcessGuard | None = None
        self.tracing: Tracing | None = None  # exporting spans between start and stop

    @classmethod
    def build(cls, settings: Settings, *, provider: ModelProvider | None = None,
              interactive: bool = True) -> Runtime:
        """Everything the settings describe, constructed but not started.

        `interactive=False` keeps channels off this process's terminal (`run --no-input`).
        """
        outbox = settings.store.outbox_path
        backend = build_backend(settings.store.url, BackendOptions(
            busy_timeout=settings.store.busy_timeout,
            outbox_path=Path(outbox) if outbox else None,
            files_directory=Path(settings.files.directory),
            files_inline_max_bytes=settings.files.inline_max_bytes))
        store = backend.history
        metrics = Metrics()
        # Each agent's own provider and model; `provider` (tests) replaces every provider.
        providers = Providers(settings)
        summarizer = providers.summarizer(provider, wrap=metered(settings))
        # Capture first (always), then a friendly reply instead of a stack trace, one log line
        # per turn, the Prometheus figures, and the daily budgets (checked before the model).
        interceptors: list[Interceptor] = [
            ErrorReplyInterceptor(), TurnLogInterceptor(), MetricsInterceptor(metrics)]
        spend_limit = build_spend_limit(settings, backend, providers, metrics)
        if spend_limit is not None:
            interceptors.append(spend_limit)
        access = access_for(settings)
        # Before anything that answers or spends: who may ask, then how often.
        interceptors.insert(1, AccessInterceptor(access))
        rate = settings.access.rate_limit
        if rate is not None:
            interceptors.insert(2, RateLimitInterceptor(
                per_conversation=None, per_user=None,
                per_person=Rate(rate.turns, rate.per_seconds),
                reply=settings.access.rate_limit_reply))
        inspector = Inspector.for_settings(settings, backend)
        proactive = Proactive(settings, backend)  # schedules and handoff
        mcp_servers = {name: McpServer(name, entry)
                       for name, entry in settings.mcp_servers.items()}
        channel_by_name: dict[str, Channel] = {}
        # Without the backend's approval book, tools that need approval are refused, not run.
        approvals = ApprovalGate(backend.approvals, store=store, channels=channel_by_name,
                                 access=access, approvers=settings.approvals.approvers,
                                 timeout=settings.approvals.timeout_seconds)

        def toolsets(agent: str) -> list[McpToolset]:
            chosen = settings.agents[agent].mcp
            if not chosen.allow:
                return []
            used = {entry.partition("/")[0] for entry in chosen.allow}
            return [McpToolset([s for n, s in mcp_servers.items() if n in used],
                               allow=tuple(chosen.allow), deny=tuple(chosen.deny))]

        agents = [
            Agent(
                name=name, system_prompt=settings.system_prompt(name),
                model=providers.agents[name].model,
                tools=[load_tool(t, agent=name, settings=settings) for t in agent.tools],
                conversation_history=store, description=agent.description,
                assembler_options=agent.memory.options(settings.people.memory),
                aliases=agent.aliases,
                interceptors=interceptors, summarizer=summarizer,
                provider=provider or providers.for_agent(name)[0],
                fallbacks=providers.fallbacks_for(name) if provider is None else (),
                thinking=agent.thinking,
                max_tokens=settings.model.max_tokens, outbox_path=settings.store.outbox_path,
                observer=inspector.recorder, turn_tools=proactive.turn_tools(),
                toolsets=toolsets(name), approvals=approvals,
                require_approval=agent.require_approval,
            )
            for name, agent in settings.agents.items()
        ]
        files = settings.files
        intake, own_intake = file_intakes(
            backend.files,
            max_file_mb=files.max_file_mb, max_file_mb_for=files.max_file_mb_for,
            channels=list(settings.channels),
            speech_url=files.speech.base_url if files.speech else None,
            speech_model=files.speech.model if files.speech else "",
            speech_key_env=files.speech.api_key_env if files.speech else None,
        ) if files.enabled and backend.files is not None else (None, {})
        for agent in agents:
            agent.sees_images = settings.agents[agent.name].sees_images
        commands = default_commands()
        if settings.people.link_codes and backend.people is not None:
            commands.register(link_command(minutes=settings.people.code_minutes))
        team = Team(agents, lock=backend.lock, inbox=backend.inbox, commands=commands,
                    answer_edits=settings.history.answer_edits, files=intake)
        team.pipeline.access = access
        if any(a.require_approval for a in settings.agents.values()) or any(
                s.require_approval for s in settings.mcp_servers.values()):
            team.pipeline.approvals = approvals
            for command in approvals.commands():
                team.pipeline.commands.register(command)
        proactive.register(team)
        channels = []
        stop_requested = asyncio.Event()
        for name, channel_settings in settings.channels.items():
            joined = [(a, e) for a in agents for e in settings.agents[a.name].channels
                      if e.name == name]
            if not joined:
                log.warning("runtime.channel_without_agents", channel=name)
                continue
            context = ChannelContext(agents=tuple(a.name for a, _ in joined),
                                     interactive=interactive, request_stop=stop_requested.set,
                                     platform_part=backend.platform_part(
                                         channel_settings.type),
                                     shard_leases=backend.shard_leases)
            channel = platform_for(channel_settings.type).build(name, channel_settings, context)
            channel.file_intake = own_intake.get(name)
            team.attach(channel, agents=[a for a, _ in joined],
                        respond_to_all=[a.name for a, e in joined if e.respond_to_all])
            channels.append(channel)
            proactive.channels[name] = channel
            channel_by_name[name] = channel
        return cls(settings=settings, backend=backend, team=team, channels=channels,
                   metrics=metrics, inspector=inspector, proactive=proactive,
                   stop_requested=stop_requested, mcp_servers=list(mcp_servers.values()))

    async def start(self) -> None:
        """Start tracing (when configured), open the store (migrating it), start the ops
        server, then connect every channel."""
        # First: a tracing setting that cannot work stops the start before anything opens.
        self.tracing = start_tracing(self.settings.tracing.options(),
                                     redactor=self.inspector.redactor)
        if self.backend.owner_file is not None:
            self._guard = SingleProcessGuard(str(self.backend.owner_file))
            self._guard.acquire()  # SQLite serves one process: a second one stops here
        for line in self.backend.missing():
            log.warning(line, backend=self.backend.name)
        await self.backend.__aenter__()
        await publish_today(self.settings, self.backend, self.metrics)
        writer = self.team.writer
        if writer.outbox is not None:
            outbox = writer.outbox
            self.metrics.outbox_depth.set_function(
                lambda: float(len(outbox.pending_now())) if outbox.has_pending() else 0.0)
        self.inspector.start()
        self.retention.start()
        if self.indexer is None and self.backend.vectors is not None:
            self.indexer = indexer_for(self.store, self.backend.vectors,
                                       await shared_embedder())
        if self.indexer is not None:
            self.indexer.start()
        for server in self.mcp_servers:
            server.start()  # in the background: a server that is down is retried, not awaited
        if self.settings.ops.enabled:
            console = self.settings.inspector.console
            app = self.inspector.console(self.team.agents) if console else None
            apps = {CONSOLE_PREFIX: app} if app is not None else {}
            self.ops = OpsServer(metrics=self.metrics, readiness=self.readiness,
                                 host=self.settings.ops.host, port=self.settings.ops.port,
                                 apps=apps, holding=self.holding)
            await self.ops.start()
            if console:
                log.info("console.listening", url=self.console_url)
        await self.team.start(self.events)
        await self.proactive.start(self.team)
        self._started.update(channel.name for channel in self.channels)
        log.info("runtime.started", channels=sorted(self._started),
                 agents=[a.name for a in self.team.agents],
                 model=self.settings.resolved_provider())

    @property
    def console_url(self) -> str | None:
        """Where the console is served, once the ops server listens (None without it)."""
        if self.ops is None or not self.settings.inspector.console:
            return None
        host = self.ops.host if ":" not in self.ops.host else f"[{self.ops.host}]"
        return f"http://{host}:{self.ops.port}{CONSOLE_PREFIX}/"

    async def readiness(self) -> dict[str, str | None]:
        """Each check's problem, or None: the store answers and every channel is receiving
        (its listener alive, not just connected once: `Channel.receiving`)."""
        checks: dict[str, str | None] = {}
        try:
            async with asyncio.timeout(5):
                await self.store.get("threadline:readyz", limit=1)
            checks["store"] = None
        except (StoreError, TimeoutError) as exc:
            self.metrics.store_errors.labels("readyz").inc()
            checks["store"] = str(exc) or "timed out after 5 s"
        for channel in self.channels:
            checks[f"channel:{channel.name}"] = (
                channel.receiving() if channel.name in self._started else "not connected")
        return checks

    def holding(self) -> dict[str, dict[str, object]]:
        """What part of each split platform this replica serves (a Discord channel's shards),
        by channel; channels that serve all of theirs are left out."""
        return {f"channel:{channel.name}": held for channel in self.channels
                if channel.name in self._started and (held := channel.holding()) is not None}

    def install_signal_handlers(self) -> None:
        """SIGTERM and SIGINT ask for a clean stop instead of killing turns in flight."""
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self.request_stop, signum)

    def request_stop(self, signum: int | None = None) -> None:
        if signum is not None:
            log.info("runtime.signal", signal=signal.Signals(signum).name)
        self._stop.set()

    async def wait(self) -> None:
        await self._stop.wait()

    async def stop(self) -> None:
        """Stop channels, finish turns in flight, flush the outbox, close the store."""
        log.info("runtime.stopping")
        self._started.clear()
        try:
            await self.proactive.stop()
            await self.team.stop(drain_timeout=self.settings.shutdown_timeout)
        finally:
            for agent in self.team.agents:
                await agent.close()
            await self.inspector.stop()
            await self.retention.stop()
            if self.indexer is not None:
                await self.indexer.stop()
            for server in self.mcp_servers:
                await server.stop()
            if self.ops is not None:
                await self.ops.stop()
            await self.team.lock.close()
            with suppress(StoreError):
                await self.backend.close()
            if self._guard is not None:
                self._guard.release()
            if self.tracing is not None:
                # Last: every turn has ended, so every span has; the flush waits in a thread.
                await asyncio.to_thread(self.tracing.stop)
        log.info("runtime.stopped")
