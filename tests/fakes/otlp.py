"""A fake OTLP/HTTP trace receiver on 127.0.0.1: what a Collector, Jaeger or Tempo would take.

It accepts `POST /v1/traces` with an `ExportTraceServiceRequest` in protobuf (gzip or not),
decodes it with `opentelemetry-proto` and keeps every span, with its resource's attributes.
Anything else gets the status a real receiver answers (415 for JSON, 400 for a body that does
not decode), so an exporter that sends the wrong thing fails the test that uses it.

    async with FakeOtlp() as otlp:   # otlp.url: the base URL, as OTEL_EXPORTER_OTLP_ENDPOINT
        ...                           # a process exporting there, stopped cleanly
    [turn] = otlp.named("threadline.turn")
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from aiohttp import web
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

PROTOBUF = "application/x-protobuf"


@dataclass(frozen=True)
class ReceivedSpan:
    """One exported span, decoded: ids in hex, attributes and events as plain values."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status_code: int  # 0 unset, 1 ok, 2 error
    resource: dict[str, Any]
    scope: str

    @property
    def content_attributes(self) -> dict[str, Any]:
        """The attributes that carry message content under the GenAI conventions."""
        return {k: v for k, v in self.attributes.items() if k in CONTENT_KEYS
                or k.endswith((".content", ".input.messages", ".output.messages"))}


CONTENT_KEYS = frozenset({"gen_ai.input.messages", "gen_ai.output.messages",
                          "gen_ai.system_instructions", "gen_ai.tool.call.arguments",
                          "gen_ai.tool.call.result", "gen_ai.prompt", "gen_ai.completion"})


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, which) if which else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs if isinstance(pair, KeyValue)}


@dataclass
class FakeOtlp:
    """The receiver; see the module docstring."""

    spans: list[ReceivedSpan] = field(default_factory=list)
    requests: int = 0
    _runner: web.AppRunner | None = None
    _port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    async def __aenter__(self) -> FakeOtlp:
        app = web.Application()
        app.router.add_post("/v1/traces", self._traces)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    async def _traces(self, request: web.Request) -> web.Response:
        if request.content_type != PROTOBUF:
            return web.Response(status=415, text=f"send {PROTOBUF}")
        body = await request.read()
        if request.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        export = ExportTraceServiceRequest()
        try:
            export.ParseFromString(body)
        except DecodeError as exc:
            return web.Response(status=400, text=f"not an ExportTraceServiceRequest: {exc}")
        self.requests += 1
        for resource_spans in export.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.spans.append(ReceivedSpan(
                        name=span.name, trace_id=span.trace_id.hex(), span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(), kind=span.kind,
                        attributes=_attributes(span.attributes),
                        events=[(e.name, _attributes(e.attributes)) for e in span.events],
                        status_code=span.status.code, resource=resource,
                        scope=scope_spans.scope.name))
        return web.Response(body=ExportTraceServiceResponse().SerializeToString(),
                            content_type=PROTOBUF)

    def named(self, prefix: str) -> list[ReceivedSpan]:
        return [s for s in self.spans if s.name.startswith(prefix)]
