"""Operations endpoints: `/healthz`, `/readyz` and Prometheus `/metrics` on one aiohttp server.

Bound to loopback (the default), every endpoint answers only requests whose Host is a loopback
name, like the console (no DNS rebinding). `/healthz` answers 200 while the process serves
requests (a liveness probe). `/readyz` answers 200 only when the store is reachable and every
channel is receiving (its listener alive), with a JSON body naming each check (and, under
`holds`, the shards this replica holds of a channel the replicas split), and 503 otherwise (a
readiness probe: send no traffic yet). `/metrics` is the Prometheus text format
from the runtime's own registry, so two runtimes in one process (as in tests) do not share
counters.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector

from threadline.config import addressed_to_loopback, is_loopback

if TYPE_CHECKING:
    from threadline.channels.base import Channel

from threadline.listening import Listener, serve

log = structlog.get_logger("threadline.ops")

# name -> None when fine, or what is wrong.
ReadinessCheck = Callable[[], Awaitable[dict[str, str | None]]]


class Metrics:
    """The runtime's Prometheus metrics, labelled per channel and agent."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        labels = ("channel", "agent")
        self.turns = Counter("threadline_turns", "Agent turns answered, by outcome",
                             (*labels, "stop_reason"), registry=self.registry)
        self.latency = Histogram("threadline_turn_latency_seconds",
                                 "Time from an inbound turn to the agent's reply", labels,
                                 buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
                                 registry=self.registry)
        self.tokens = Counter("threadline_model_tokens",
                              "Model tokens used: input, output, cache_read, cache_write",
                              (*labels, "kind"), registry=self.registry)
        self.turn_errors = Counter("threadline_turn_errors", "Turns that failed with an error",
                                   (*labels, "error"), registry=self.registry)
        self.store_errors = Counter("threadline_store_errors",
                                    "Store operations that failed (turns went to the outbox)",
                                    ("operation",), registry=self.registry)
        self.outbox_depth = Gauge("threadline_outbox_depth",
                                  "Turns waiting in the durable outbox for the store",
                                  registry=self.registry)
        self.inbound = Counter("threadline_inbound_messages", "Messages received per channel",
                               ("channel",), registry=self.registry)
        # Read from the shared spend ledger after each turn: every replica shows the same day.
        self.spend_tokens = Gauge("threadline_spend_tokens_today",
                                  "Model tokens an agent spent today (all processes)",
                                  ("agent",), registry=self.registry)
        self.spend_cost = Gauge("threadline_spend_cost_usd_today",
                                "Estimated model cost of an agent today from the configured "
                                "prices (all processes)", ("agent",), registry=self.registry)
        self.budget = Gauge("threadline_spend_budget_tokens", "Daily token budget by scope",
                            ("scope",), registry=self.registry)

    def record_turn(self, *, channel: str, agent: str, stop_reason: str, latency: float,
                    tokens: Mapping[str, int]) -> None:
        """One answered turn; `tokens` by kind (input, output, cache_read, cache_write)."""
        self.turns.labels(channel, agent, stop_reason).inc()
        self.latency.labels(channel, agent).observe(latency)
        for kind, count in tokens.items():
            self.tokens.labels(channel, agent, kind).inc(count)

    def record_spend(self, agent: str, tokens: int, cost: float) -> None:
        """An agent's spend today so far, as the ledger has it."""
        self.spend_tokens.labels(agent).set(tokens)
        self.spend_cost.labels(agent).set(cost)

    def count_skipped_events(self, channels: Sequence[Channel]) -> None:
        """`threadline_skipped_events_total{channel}`: platform events each channel could not
        read and skipped (`Channel.skip_event`), read from the channels when scraped."""
        self.registry.register(_SkippedEvents(tuple(channels)))

    def render(self) -> bytes:
        return generate_latest(self.registry)


def ops_listener(host: str, port: int) -> Listener:
    """Where the ops server listens, named by its `ops:` settings (`check` tries it too)."""
    return Listener(host, port, "ops.port", "ops.host")


class _SkippedEvents(Collector):
    def __init__(self, channels: tuple[Channel, ...]) -> None:
        self.channels = channels

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily("threadline_skipped_events",
                                     "Platform events a channel could not read and skipped",
                                     labels=("channel",))
        for channel in self.channels:
            family.add_metric((channel.name,), float(channel.skipped_events))
        yield family


class OpsServer:
    """Serves health, readiness and metrics on `host:port` (port 0 picks a free port)."""

    def __init__(self, *, metrics: Metrics, readiness: ReadinessCheck, host: str = "127.0.0.1",
                 port: int = 9108, apps: Mapping[str, web.Application] | None = None,
                 holding: Callable[[], Mapping[str, object]] | None = None) -> None:
        self.metrics = metrics
        self.readiness = readiness
        # What part of a split platform this replica serves (shards), shown by /readyz.
        self.holding = holding
        self.host = host
        self.port = port
        # More applications served beside the probes, by path prefix (the console).
        self.apps = dict(apps or {})
        self._runner: web.AppRunner | None = None

    @property
    def listener(self) -> Listener:
        return ops_listener(self.host, self.port)

    async def start(self) -> int:
        """Start serving; returns the bound port."""
        app = web.Application(middlewares=[self._loopback_only])
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        for prefix, subapp in self.apps.items():
            app.add_subapp(prefix, subapp)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        try:
            self.port = await serve(self._runner, self.listener)
        except BaseException:
            await self.stop()
            raise
        log.info("ops.listening", host=self.host, port=self.port)
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @web.middleware
    async def _loopback_only(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """Bound to loopback, the probes answer only requests addressed to a loopback name
        (as the console does): a page elsewhere whose DNS name points here must not read
        `/metrics` or `/readyz` through the visitor's browser. The console checks its own."""
        if (request.path.startswith(("/healthz", "/readyz", "/metrics"))
                and is_loopback(self.host) and not addressed_to_loopback(request.host)):
            return web.Response(status=403, text=(
                f"this server answers only as http://127.0.0.1 (or localhost); {request.host!r} "
                "is another name"))
        response: web.StreamResponse = await handler(request)
        return response

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def _readyz(self, request: web.Request) -> web.Response:
        checks = await self.readiness()
        ready = all(problem is None for problem in checks.values())
        body: dict[str, object] = {
            "ready": ready, "checks": {k: v or "ok" for k, v in sorted(checks.items())}}
        held = self.holding() if self.holding is not None else {}
        if held:
            body["holds"] = dict(sorted(held.items()))
        return web.json_response(body, status=200 if ready else 503)

    async def _metrics(self, request: web.Request) -> web.Response:
        response = web.Response(body=self.metrics.render())
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response
