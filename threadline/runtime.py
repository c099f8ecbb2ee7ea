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
from typing import Any

import structlog

from threadline.agents.agent import Agent
from threadline.agents.llm import ModelProvider
from threadline.agents.team import Team
from threadline.channels.base import Channel
from threadline.channels.local import TERMINAL_PROMPT, LocalChannel, LocalReply, typed_lines
from threadline.config import (
    AgentSettings,
    ChannelSettings,
    DiscordChannelSettings,
    LocalChannelSettings,
    Settings,
    SlackChannelSettings,
    TelegramChannelSettings,
)
from threadline.errors import ConfigError, StoreError
from threadline.history.assembler import AssemblerOptions
from threadline.history.model import StoredMessage
from threadline.history.sql_store import SqlConversationStore
from threadline.inspector.console import PREFIX as CONSOLE_PREFIX
from threadline.inspector.setup import Inspector
from threadline.interceptors.base import CallNext, Interceptor
from threadline.interceptors.error_reply import ErrorReplyInterceptor
from threadline.interceptors.turn_log import TurnLogInterceptor
from threadline.locks import PostgresConversationLock, SingleProcessGuard
from threadline.ops import Metrics, OpsServer
from threadline.provider_setup import Providers
from threadline.spend.setup import build_spend_limit, metered, publish_today
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


def assembler_options(agent: AgentSettings) -> AssemblerOptions:
    memory = agent.memory
    return AssemblerOptions(
        token_budget=memory.token_budget, addressed_only_mode=memory.addressed_only_mode,
        rolling_summary_threshold=memory.rolling_summary_threshold,
        time_window_minutes=memory.time_window_minutes,
        max_turns_to_load=memory.max_turns_to_load, recall=memory.recall,
        recall_limit=memory.recall_limit,
    )


def print_reply(reply: LocalReply) -> None:
    print(f"{reply.agent_name}> {reply.text}", flush=True)


def reads_input(channel: LocalChannelSettings) -> bool:
    """Whether the local channel takes its lines from this process's standard input."""
    return channel.stdin is True or (channel.stdin == "auto" and sys.stdin.isatty())


def build_channel(name: str, channel: ChannelSettings) -> Channel:
    """The channel object for one `channels:` entry; SDKs are imported only when used."""
    if isinstance(channel, LocalChannelSettings):
        return LocalChannel(name=name, room=channel.room, allow_bots=channel.allow_bots,
                            on_reply=print_reply if reads_input(channel) else None)
    options = channel.model_dump(exclude={"type"})
    if isinstance(channel, SlackChannelSettings):
        from threadline.channels.slack import SlackChannel

        return SlackChannel(name=name, **options)
    if isinstance(channel, TelegramChannelSettings):
        from threadline.channels.telegram import TelegramChannel

        return TelegramChannel(name=name, **options)
    if isinstance(channel, DiscordChannelSettings):
        from threadline.channels.discord_channel import DiscordChannel

        return DiscordChannel(name=name, **options)
    raise ConfigError(f"channels.{name}: unsupported channel type")


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

    def __init__(self, *, settings: Settings, store: SqlConversationStore, team: Team,
                 channels: Sequence[Channel], metrics: Metrics, inspector: Inspector) -> None:
        self.settings = settings
        self.store = store
        self.team = team
        self.inspector = inspector
        self.channels = tuple(channels)
        self.metrics = metrics
        self.ops: OpsServer | None = None
        self.events = CountedEvents(team, metrics)
        self._started: set[str] = set()
        self._stop = asyncio.Event()
        self._readers: list[asyncio.Task[None]] = []
        self._guard: SingleProcessGuard | None = None

    @classmethod
    def build(cls, settings: Settings, *, provider: ModelProvider | None = None) -> Runtime:
        """Everything the settings describe, constructed but not started."""
        store = SqlConversationStore(settings.store.url, busy_timeout=settings.store.busy_timeout)
        metrics = Metrics()
        # Each agent's own provider and model; `provider` (tests) replaces every provider.
        providers = Providers(settings)
        summarizer = providers.summarizer(provider, wrap=metered(settings))
        # Capture first (always), then a friendly reply instead of a stack trace, one log line
        # per turn, the Prometheus figures, and the daily budgets (checked before the model).
        interceptors: list[Interceptor] = [
            ErrorReplyInterceptor(), TurnLogInterceptor(), MetricsInterceptor(metrics),
            build_spend_limit(settings, store, providers, metrics)]
        inspector = Inspector.for_settings(settings, store)
        agents = [
            Agent(
                name=name, system_prompt=settings.system_prompt(name),
                model=providers.agents[name].model,
                tools=[load_tool(t, agent=name, settings=settings) for t in agent.tools],
                conversation_history=store, description=agent.description,
                assembler_options=assembler_options(agent), aliases=agent.aliases,
                interceptors=interceptors, summarizer=summarizer,
                provider=provider or providers.for_agent(name)[0],
                max_tokens=settings.model.max_tokens, outbox_path=settings.store.outbox_path,
                observer=inspector.recorder,
            )
            for name, agent in settings.agents.items()
        ]
        lock = (PostgresConversationLock(settings.store.url)
                if store.dialect == "postgresql" else None)
        team = Team(agents, lock=lock)
        channels = []
        for name, channel_settings in settings.channels.items():
            joined = [(a, e) for a in agents for e in settings.agents[a.name].channels
                      if e.name == name]
            if not joined:
                log.warning("runtime.channel_without_agents", channel=name)
                continue
            channel = build_channel(name, channel_settings)
            team.attach(channel, agents=[a for a, _ in joined],
                        respond_to_all=[a.name for a, e in joined if e.respond_to_all])
            channels.append(channel)
        return cls(settings=settings, store=store, team=team, channels=channels, metrics=metrics,
                   inspector=inspector)

    async def start(self) -> None:
        """Open the store (migrating it), start the ops server, then connect every channel."""
        if self.store.dialect == "sqlite" and self.store.url.database:
            self._guard = SingleProcessGuard(f"{self.store.url.database}.owner-lock")
            self._guard.acquire()  # SQLite serves one process: a second one stops here
        await self.store.__aenter__()
        await publish_today(self.settings, self.store, self.metrics)
        writer = self.team.writer
        if writer.outbox is not None:
            outbox = writer.outbox
            self.metrics.outbox_depth.set_function(
                lambda: float(len(outbox.pending_now())) if outbox.has_pending() else 0.0)
        self.inspector.start()
        if self.settings.ops.enabled:
            console = self.settings.inspector.console
            apps = {CONSOLE_PREFIX: self.inspector.console(self.team.agents)} if console else {}
            self.ops = OpsServer(metrics=self.metrics, readiness=self.readiness,
                                 host=self.settings.ops.host, port=self.settings.ops.port,
                                 apps=apps)
            await self.ops.start()
            if console:
                log.info("console.listening", url=self.console_url)
        await self.team.start(self.events)
        self._started.update(channel.name for channel in self.channels)
        for name, channel_settings in self.settings.channels.items():
            room = next((c for c in self.channels if c.name == name), None)
            if isinstance(channel_settings, LocalChannelSettings) and isinstance(
                    room, LocalChannel) and reads_input(channel_settings):
                self._readers.append(asyncio.ensure_future(
                    self._read_stdin(room, channel_settings.user)))
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

    async def _read_stdin(self, room: LocalChannel, user: str) -> None:
        """Lines typed on stdin go to the local room; end of input stops the runtime."""
        terminal = sys.stdin.isatty()
        if terminal:
            names = [f"@{a}" for a, s in self.settings.agents.items()
                     if any(c.name == room.name for c in s.channels)]
            print(f"Talk to {', '.join(names)} here, for example: {names[0]} hello. "
                  "Leave with Ctrl-D (or Ctrl-C).", flush=True)
        async for line in typed_lines(sys.stdin, prompt=TERMINAL_PROMPT if terminal else "",
                                      echo=sys.stdout):
            if line.strip():
                await room.say(line.strip(), user=user)
        if terminal:
            print(flush=True)  # Ctrl-D leaves the cursor after the prompt
        self.request_stop()

    async def readiness(self) -> dict[str, str | None]:
        """Each check's problem, or None: the store answers and every channel is connected."""
        checks: dict[str, str | None] = {}
        try:
            async with asyncio.timeout(5):
                await self.store.get("threadline:readyz", limit=1)
            checks["store"] = None
        except (StoreError, TimeoutError) as exc:
            self.metrics.store_errors.labels("readyz").inc()
            checks["store"] = str(exc) or "timed out after 5 s"
        for channel in self.channels:
            connected = channel.name in self._started and channel.identity is not None
            checks[f"channel:{channel.name}"] = None if connected else "not connected"
        return checks

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
        for reader in self._readers:
            reader.cancel()  # stop reading; a line being answered finishes (say is shielded)
        try:
            await self.team.stop(drain_timeout=self.settings.shutdown_timeout)
        finally:
            for agent in self.team.agents:
                await agent.close()
            await self.inspector.stop()
            if self.ops is not None:
                await self.ops.stop()
            await self.team.lock.close()
            with suppress(StoreError):
                await self.store.close()
            if self._guard is not None:
                self._guard.release()
        log.info("runtime.stopped")
