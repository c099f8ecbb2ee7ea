"""Spans leave the process redacted: the exporter wrapper every span passes on its way out.

With message content on, a span carries what people wrote, what the model saw and what tools
returned, and any of it can hold a credential the config knows (a member pasting an API key, a
tool echoing its MCP server's `env:`). Every string of a span (attributes, events, the status
line) passes the process's redactor (`inspector.redaction`) before the exporter encodes it, so
an SDK's own spans are covered as well as ours.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Status


class TextRedactor(Protocol):
    """What the exporter needs of a redactor (`threadline.inspector.redaction.Redactor`):
    text, or a JSON-like value, with every secret it knows masked, and whether it knows any."""

    def text(self, value: str) -> str: ...

    def value(self, value: Any) -> Any: ...

    def __bool__(self) -> bool: ...


class RedactingExporter(SpanExporter):
    """Hands `exporter` each span with every secret the redactor knows masked."""

    def __init__(self, exporter: SpanExporter, redactor: TextRedactor) -> None:
        self._exporter = exporter
        self._redactor = redactor

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not self._redactor:
            return self._exporter.export(spans)
        return self._exporter.export([self._redacted(span) for span in spans])

    def shutdown(self) -> None:
        self._exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._exporter.force_flush(timeout_millis)

    def _redacted(self, span: ReadableSpan) -> ReadableSpan:
        status = span.status
        return ReadableSpan(
            name=self._redactor.text(span.name), context=span.context, parent=span.parent,
            resource=span.resource, attributes=self._attributes(span.attributes),
            events=[Event(event.name, self._attributes(event.attributes), event.timestamp)
                    for event in span.events],
            links=span.links, kind=span.kind,
            status=Status(status.status_code, self._redactor.text(status.description)
                          if status.description else None),
            start_time=span.start_time, end_time=span.end_time,
            instrumentation_scope=span.instrumentation_scope)

    def _attributes(self, attributes: Any) -> dict[str, Any]:
        return {key: tuple(self._redactor.value(list(value))) if isinstance(value, tuple)
                else self._redactor.value(value) for key, value in (attributes or {}).items()}
