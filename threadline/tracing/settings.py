"""Tracing settings: where spans go and what they carry (`tracing:`)."""

from __future__ import annotations

from pydantic import (
    field_validator,
)

from threadline.settings_section import Section
from threadline.tracing.export import TracingOptions


class TracingSettings(Section):
    """OpenTelemetry traces of every turn, exported over OTLP/HTTP to the operator's tracing
    tool (the `tracing` extra; docs/tracing.md).

    Each key left unset is taken from the standard variables: `OTEL_TRACES_EXPORTER=otlp` turns
    tracing on, `OTEL_EXPORTER_OTLP_ENDPOINT` (and `OTEL_EXPORTER_OTLP_HEADERS` for a key, which
    stays out of this file), `OTEL_SERVICE_NAME`,
    `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`.
    """

    enabled: bool | None = None
    """Export traces (null: only when OTEL_TRACES_EXPORTER names otlp)."""
    endpoint: str | None = None
    """The OTLP/HTTP base URL, such as http://127.0.0.1:4318 (/v1/traces is added; null:
    OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318)."""
    service_name: str | None = None
    """The service.name traces carry (null: OTEL_SERVICE_NAME, else threadline)."""
    capture_message_content: bool | None = None
    """Put message content (prompts, replies, tool arguments and results) on the spans; off
    unless set here or by OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true."""
    trace_url: str | None = None
    """The console's link to a reply's trace in your tracing tool, with {trace_id} where the
    id goes, such as https://tempo.example/trace/{trace_id} (null: no link)."""

    @field_validator("trace_url")
    @classmethod
    def _has_placeholder(cls, value: str | None) -> str | None:
        if value is not None and "{trace_id}" not in value:
            raise ValueError("write {trace_id} where the trace's id goes, such as "
                             "https://tempo.example/trace/{trace_id}")
        return value

    def options(self) -> TracingOptions:
        return TracingOptions(enabled=self.enabled, endpoint=self.endpoint,
                              service_name=self.service_name,
                              capture_message_content=self.capture_message_content)
