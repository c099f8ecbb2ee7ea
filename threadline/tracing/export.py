"""Turning tracing on for one process: an OTLP/HTTP exporter from the `tracing:` settings or
the standard `OTEL_*` variables, and its clean stop.

    tracing = start_tracing(settings.tracing.options())   # None: tracing is off
    ...
    tracing.stop()                                        # every span ended so far is sent

`threadline check` posts an empty export to the same receiver (`probe_receiver`).

Tracing is on when `tracing.enabled` is true, or when it is unset and `OTEL_TRACES_EXPORTER`
names `otlp` (and `OTEL_SDK_DISABLED` is not true). What the YAML leaves unset comes from the
variables the OpenTelemetry SDK reads itself: `OTEL_EXPORTER_OTLP_ENDPOINT` (or
`..._TRACES_ENDPOINT`), `OTEL_EXPORTER_OTLP_HEADERS` (for a key: keep it out of the YAML),
`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`; the content switch is
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`.

Only HTTP/protobuf is offered: every backend we point at (Jaeger, Grafana Tempo, Honeycomb, a
Collector) accepts it and Langfuse accepts nothing else, while gRPC would add `grpcio`, a large
native wheel, for no reach.

The provider becomes OpenTelemetry's global one, so SDKs that trace their own calls (the
Anthropic SDK does) put their spans in the same traces. Spans are exported in batches by the
SDK's background thread, each redacted on its way out (`tracing.redacted`); `stop` flushes them
and shuts the exporter down.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import aiohttp
import structlog

from threadline.errors import ConfigError, ThreadlineError
from threadline.tracing import spans

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

    from threadline.tracing.redacted import TextRedactor

log = structlog.get_logger("threadline.tracing")

DEFAULT_SERVICE_NAME = "threadline"
FLUSH_MILLIS = 10_000  # at stop, the longest wait for the last spans to be sent
_TRUE = frozenset({"true", "1", "yes", "on"})
# The GenAI instrumentations' values for the content switch that put content on spans.
_CONTENT_ON_SPANS = frozenset({*_TRUE, "span_only", "span_and_event"})


@dataclass(frozen=True, slots=True)
class TracingOptions:
    """What the `tracing:` section says; None leaves a choice to the `OTEL_*` variables."""

    enabled: bool | None = None
    endpoint: str | None = None
    service_name: str | None = None
    capture_message_content: bool | None = None


@dataclass(frozen=True, slots=True)
class Tracing:
    """Tracing as started in this process: where spans go and whether content is kept."""

    provider: TracerProvider
    endpoint: str
    service_name: str
    capture_message_content: bool

    def stop(self) -> None:
        """Stop making spans, send those still queued (at most `FLUSH_MILLIS`), shut down."""
        spans.deactivate()
        flushed = self.provider.force_flush(FLUSH_MILLIS)
        self.provider.shutdown()
        log.info("tracing.stopped", endpoint=self.endpoint, flushed=flushed)


def wanted(options: TracingOptions, env: Mapping[str, str] | None = None) -> bool:
    """Whether this process exports traces (see the module docstring)."""
    env = os.environ if env is None else env
    if options.enabled is not None:
        return options.enabled
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() in _TRUE:
        return False
    exporters = {e.strip().lower() for e in env.get("OTEL_TRACES_EXPORTER", "").split(",")}
    return "otlp" in exporters


def captures_content(options: TracingOptions, env: Mapping[str, str] | None = None) -> bool:
    """Whether message content goes on the spans: only when the operator opts in."""
    if options.capture_message_content is not None:
        return options.capture_message_content
    env = os.environ if env is None else env
    switch = env.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "")
    return switch.strip().lower() in _CONTENT_ON_SPANS


def start_tracing(options: TracingOptions, *, redactor: TextRedactor,
                  set_global: bool = True) -> Tracing | None:
    """Start exporting this process's spans, or None when tracing is not wanted.

    Every span is redacted by `redactor` as it leaves (the process's: the inspector's, which
    knows the config's secrets and the environment's; `inspector.redaction.redactor_for`).
    `set_global=False` keeps OpenTelemetry's global provider alone (a benchmark that turns
    tracing on and off in one process; SDKs' own spans are then not exported).
    """
    if not wanted(options):
        return None
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        from threadline.tracing.redacted import RedactingExporter
    except ImportError as exc:
        raise ConfigError(
            f"tracing is on (tracing.enabled or OTEL_TRACES_EXPORTER=otlp) but OpenTelemetry "
            f"is not installed ({exc.name}); install the extra: pip install "
            "'threadline[tracing]', or turn tracing off") from exc
    env = os.environ
    service = (options.service_name or env.get("OTEL_SERVICE_NAME")
               or DEFAULT_SERVICE_NAME)
    # Resource.create reads OTEL_RESOURCE_ATTRIBUTES; the name given here wins over it.
    resource = Resource.create({SERVICE_NAME: service})
    endpoint = traces_endpoint(options.endpoint, env)
    exporter = RedactingExporter(OTLPSpanExporter(endpoint=endpoint), redactor)
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    if set_global:
        trace.set_tracer_provider(provider)
    capture = captures_content(options, env)
    spans.activate(provider.get_tracer("threadline"), capture_content=capture)
    log.info("tracing.started", endpoint=endpoint, service_name=service,
             capture_message_content=capture)
    return Tracing(provider=provider, endpoint=endpoint, service_name=service,
                   capture_message_content=capture)


async def probe_receiver(options: TracingOptions) -> str:
    """What `threadline check` says of tracing: an empty export posted to the receiver, as
    the exporter would post spans (with `OTEL_EXPORTER_OTLP_HEADERS`). Raises `ConfigError`
    when the extra is missing, `ThreadlineError` when the receiver refuses."""
    if importlib.util.find_spec("opentelemetry.sdk") is None:
        raise ConfigError("tracing is on but OpenTelemetry is not installed; install the "
                          "extra: pip install 'threadline[tracing]', or turn tracing off")
    from opentelemetry.util.re import parse_env_headers

    env = os.environ
    endpoint = traces_endpoint(options.endpoint, env)
    headers = {**parse_env_headers(env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
                                   or env.get("OTEL_EXPORTER_OTLP_HEADERS", ""), liberal=True),
               "Content-Type": "application/x-protobuf"}
    where = "check tracing.endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT)"
    try:
        # An ExportTraceServiceRequest without spans is zero bytes of protobuf.
        async with aiohttp.ClientSession() as session, session.post(
                endpoint, data=b"", headers=headers) as response:
            if response.status >= 300:
                raise ThreadlineError(
                    f"the trace receiver at {endpoint} answered {response.status} "
                    f"{response.reason}; {where} and the headers (OTEL_EXPORTER_OTLP_HEADERS)")
    except aiohttp.ClientError as exc:
        raise ThreadlineError(f"the trace receiver at {endpoint} could not be reached ({exc}); "
                              f"is it running? {where}") from exc
    service = options.service_name or env.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME
    content = "on" if captures_content(options, env) else "off"
    return f"OTLP/HTTP to {endpoint} (service {service}; message content {content})"


def traces_endpoint(configured: str | None, env: Mapping[str, str]) -> str:
    """The URL spans are posted to: the YAML's base URL, else the SDK's variables (a
    signal-specific URL as given, a base URL with `/v1/traces`), else the local default."""
    if configured:
        return _with_traces_path(configured)
    specific = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if specific:
        return specific
    return _with_traces_path(env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
                             or "http://localhost:4318")


def _with_traces_path(base: str) -> str:
    base = base.rstrip("/")
    return base if base.endswith("/v1/traces") else f"{base}/v1/traces"
