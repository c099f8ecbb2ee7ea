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
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from datetime import datetime
from pathlib import Path
from typing import Any

import structlog

from threadline.agents.agent import Agent, Answering, Memory, Tooling
from threadline.agents.file_setup import file_intakes
from threadline.agents.llm import ModelProvider
from threadline.agents.observe import TurnObserver
from threadline.backends import Backend, BackendOptions, build_backend
from threadline.channels.base import Channel
from threadline.channels.delivery_status import DeliveryStatuses
from threadline.channels.files import FileIntake
from threadline.channels.platform import ChannelContext
from threadline.channels.registry import platform_for
from threadline.commands import CommandRegistry
from threadline.config import Settings
from threadline.errors import ConfigError, StoreError
from threadline.features import BuiltFeatures, Service, build_features
from threadline.history.embedding_model import shared_embedder
from threadline.history.indexer import VectorIndexer, indexer_for
from threadline.history.model import StoredMessage
from threadline.history.retention import HistoryRetention
from threadline.inspector.console import PREFIX as CONSOLE_PREFIX
from threadline.inspector.setup import Inspector
from threadline.interceptors.base import CallNext, Interceptor
from threadline.interceptors.error_reply import ErrorReplyInterceptor
from threadline.interceptors.turn_log import TurnLogInterceptor
from threadline.locks import SingleProcessGuard
from threadline.ops import Metrics, OpsServer
from threadline.people.access import Access, PeopleList
from threadline.provider_setup import Providers
from threadline.spend.setup import metered
from threadline.team import Team, default_commands
from threadline.turn import AgentResult, TurnContext
from threadline.waiting import cancel_and_wait

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


def backend_for_settings(settings: Settings) -> Backend:
    """The backend the `store:` and `files:` sections describe, not opened yet."""
    outbox = settings.store.outbox_path
    return build_backend(settings.store.url, BackendOptions(
        busy_timeout=settings.store.busy_timeout,
        outbox_path=Path(outbox) if outbox else None,
        files_directory=Path(settings.files.directory),
        files_inline_max_bytes=settings.files.inline_max_bytes))


def files_for(settings: Settings, backend: Backend
              ) -> tuple[FileIntake | None, dict[str, FileIntake]]:
    """Where people's files are taken in: the team's intake and each channel's own."""
    files = settings.files
    if not files.enabled or backend.files is None:
        return None, {}
    return file_intakes(
        backend.files, max_file_mb=files.max_file_mb, max_file_mb_for=files.max_file_mb_for,
        channels=list(settings.channels),
        speech_url=files.speech.base_url if files.speech else None,
        speech_model=files.speech.model if files.speech else "",
        speech_key_env=files.speech.api_key_env if files.speech else None)


def build_agents(settings: Settings, *, backend: Backend, provider: ModelProvider | None,
                 metrics: Metrics, features: BuiltFeatures,
                 observer: TurnObserver | None) -> list[Agent]:
    """Each agent of the settings, with its model, tools and what the features add.

    `provider` (tests) replaces every agent's provider."""
    providers = Providers(settings)
    summarizer = providers.summarizer(provider, wrap=metered(settings))
    # A friendly reply instead of a stack trace, one log line per turn, the Prometheus
    # figures, then the features' (the daily budgets, checked before the model).
    interceptors: list[Interceptor] = [
        ErrorReplyInterceptor(), TurnLogInterceptor(), MetricsInterceptor(metrics),
        *features.interceptors]
    return [
        Agent(
            name=name, system_prompt=settings.system_prompt(name),
            model=providers.agents[name].model,
            tools=[load_tool(t, agent=name, settings=settings) for t in agent.tools],
            conversation_history=backend.history, description=agent.description,
            aliases=agent.aliases, interceptors=interceptors, observer=observer,
            provider=provider or providers.for_agent(name)[0],
            memory=Memory(options=agent.memory.options(settings.people.memory),
                          summarizer=summarizer, outbox_path=settings.store.outbox_path),
            answering=Answering(
                max_tokens=settings.model.max_tokens, thinking=agent.thinking,
                fallbacks=providers.fallbacks_for(name) if provider is None else (),
                sees_images=agent.sees_images),
            tooling=Tooling(turn_tools=features.turn_tools, toolsets=features.toolsets(name),
                            approvals=features.approvals,
                            require_approval=agent.require_approval,
                            grounding=features.grounding),
        )
        for name, agent in settings.agents.items()
    ]


def attach_channels(settings: Settings, team: Team, backend: Backend, *,
                    intakes: Mapping[str, FileIntake], interactive: bool,
                    request_stop: Callable[[], None],
                    delivery_statuses: DeliveryStatuses | None) -> dict[str, Channel]:
    """Each channel of the settings, built by its platform and attached to the team with the
    agents that join it (a channel no agent joins is left out, and said); a platform that
    reports what became of posted replies tells `delivery_statuses`."""
    channels: dict[str, Channel] = {}
    for name, channel_settings in settings.channels.items():
        joined = [(a, e) for a in team.agents for e in settings.agents[a.name].channels
                  if e.name == name]
        if not joined:
            log.warning("runtime.channel_without_agents", channel=name)
            continue
        context = ChannelContext(agents=tuple(a.name for a, _ in joined),
                                 interactive=interactive, request_stop=request_stop,
                                 platform_part=backend.platform_part(channel_settings.type),
                                 shard_leases=backend.shard_leases,
                                 history=backend.history,
                                 delivery_statuses=delivery_statuses,
                                 broadcasters=frozenset(a.name for a, _ in joined
                                                        if settings.agents[a.name].broadcast))
        channel = platform_for(channel_settings.type).build(name, channel_settings, context)
        channel.file_intake = intakes.get(name)
        team.attach(channel, agents=[a for a, _ in joined],
                    respond_to_all=[a.name for a, e in joined if e.respond_to_all])
        channels[name] = channel
    return channels


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

    async def last_heard(self, prefix: str, since: datetime, before: datetime | None
                         ) -> list[StoredMessage]:
        return await self.team.last_heard(prefix, since, before)


class Runtime:
    """One process's store, agents, team, channels and ops server; see the module docstring."""

    def __init__(self, *, settings: Settings, backend: Backend, team: Team,
                 channels: Sequence[Channel], metrics: Metrics, inspector: Inspector,
                 features: Mapping[str, Service] | None = None,
                 stop_requested: asyncio.Event | None = None) -> None:
        self.settings = settings
        self.backend = backend
        self.store = store = backend.history
        self.team = team
        self.inspector = inspector
        self.features = dict(features or {})  # services, by feature name, in start order
        history = settings.history
        self.retention = HistoryRetention(store, history.retention_days,
                                          history.retention_days_for,
                                          every=history.prune_every_minutes * 60)
        # Turns' vectors are made in the background, never on a turn's path; made at start
        # when both halves are there (the embeddings extra's model, a backend keeping vectors).
        self.indexer: VectorIndexer | None = None
        self.channels = tuple(channels)
        self.metrics = metrics
        self.ops: OpsServer | None = None
        self.events = CountedEvents(team, metrics)
        metrics.count_skipped_events(self.channels)
        self._started: set[str] = set()
        self._features_started: list[Service] = []
        self._not_ready: dict[str, str] = {}  # feature -> why it gave up at start
        self._stop = stop_requested or asyncio.Event()
        self._guard: SingleProcessGuard | None = None

    @classmethod
    def build(cls, settings: Settings, *, provider: ModelProvider | None = None,
              interactive: bool = True) -> Runtime:
        """Everything the settings describe, constructed but not started.

        `interactive=False` keeps channels off this process's terminal (`run --no-input`).
        """
        backend = backend_for_settings(settings)
        metrics = Metrics()
        access = access_for(settings)
        channels: dict[str, Channel] = {}  # filled below, after the agents that post there
        features = build_features(settings, backend, access=access, channels=channels,
                                  metrics=metrics)
        inspector = Inspector.for_settings(settings, backend)
        agents = build_agents(settings, backend=backend, provider=provider, metrics=metrics,
                              features=features, observer=inspector.recorder)
        intake, own_intake = files_for(settings, backend)
        team = Team(agents, lock=backend.lock, inbox=backend.inbox,
                    commands=CommandRegistry((*default_commands(), *features.commands)),
                    answer_edits=settings.history.answer_edits, files=intake,
                    stages=features.stages, approvals=features.approvals)
        stop_requested = asyncio.Event()
        channels.update(attach_channels(settings, team, backend, intakes=own_intake,
                                        interactive=interactive,
                                        request_stop=stop_requested.set,
                                        delivery_statuses=inspector.delivery_statuses))
        return cls(settings=settings, backend=backend, team=team, channels=list(channels.values()),
                   metrics=metrics, inspector=inspector, features=features.services,
                   stop_requested=stop_requested)

    async def start(self) -> None:
        """Open the store (migrating it), start the ops server and the features, then connect
        every channel, and answer once the features are ready."""
        if self.backend.owner_file is not None:
            self._guard = SingleProcessGuard(str(self.backend.owner_file))
            self._guard.acquire()  # SQLite serves one process: a second one stops here
        for line in self.backend.missing():
            log.warning(line, backend=self.backend.name)
        await self.backend.__aenter__()
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
        for service in self.features.values():
            await service.start(self.team)
            self._features_started.append(service)
        await self.team.start(self.events, before_answering=self._features_ready)
        self._started.update(channel.name for channel in self.channels)
        log.info("runtime.started", channels=sorted(self._started),
                 agents=[a.name for a in self.team.agents],
                 model=self.settings.resolved_provider())

    async def start_unless_stopped(self) -> bool:
        """`start`, given up where it is when a stop is asked for meanwhile (a signal while
        a channel connects or a feature gets ready); True when it started. `stop` then stops
        whatever had started."""
        starting = asyncio.ensure_future(self.start())
        stopping = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
        if starting.done():
            starting.result()
            return True
        await cancel_and_wait(starting)
        log.info("runtime.start_interrupted", detail="asked to stop while starting")
        return False

    async def _features_ready(self) -> None:
        """Every feature ready, or given up after its own timeout (said, in the log and in
        `/readyz`): only then are turns answered."""
        names = list(self.features)
        problems = await asyncio.gather(*(self.features[n].ready() for n in names))
        self._not_ready = {n: p for n, p in zip(names, problems, strict=True) if p}
        for name, problem in self._not_ready.items():
            log.warning("runtime.feature_not_ready", feature=name, problem=problem,
                        detail="answering without it")

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
        for name in self._not_ready:
            checks[f"feature:{name}"] = self._not_ready[name]
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
            await self.team.stop(drain_timeout=self.settings.shutdown_timeout)
        finally:
            for agent in self.team.agents:
                await agent.close()
            await self.inspector.stop()
            await self.retention.stop()
            if self.indexer is not None:
                await self.indexer.stop()
            # After the turns that use their tools, in reverse order of starting (a schedule
            # firing meanwhile is recorded and answered after the next start).
            while self._features_started:
                await self._features_started.pop().stop()
            if self.ops is not None:
                await self.ops.stop()
            await self.team.lock.close()
            with suppress(StoreError):
                await self.backend.close()
            if self._guard is not None:
                self._guard.release()
        log.info("runtime.stopped")
