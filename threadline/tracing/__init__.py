"""OpenTelemetry traces of every turn, for the operator's own tracing tool (an extra).

`spans` names and fills the spans (a turn, each agent's answer, each model and tool call,
the delivery); `export` turns tracing on from the settings or the `OTEL_*` variables and
stops it cleanly. Without the `tracing` extra, or when it is not configured, every span
function returns a span that does nothing. See docs/tracing.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from threadline.plugs import lazy_exports

if TYPE_CHECKING:
    from threadline.tracing.export import Tracing, TracingOptions, start_tracing
    from threadline.tracing.spans import (
        NO_SPAN,
        agent_span,
        current_span,
        current_trace_id,
        deliver_span,
        explain_prompt,
        model_span,
        routed,
        tool_span,
        turn_span,
    )

__all__ = [
    "NO_SPAN",
    "Tracing",
    "TracingOptions",
    "agent_span",
    "current_span",
    "current_trace_id",
    "deliver_span",
    "explain_prompt",
    "model_span",
    "routed",
    "start_tracing",
    "tool_span",
    "turn_span",
]

__getattr__ = lazy_exports(__name__, {
    "Tracing": "threadline.tracing.export",
    "TracingOptions": "threadline.tracing.export",
    "start_tracing": "threadline.tracing.export",
    "NO_SPAN": "threadline.tracing.spans",
    "agent_span": "threadline.tracing.spans",
    "current_span": "threadline.tracing.spans",
    "current_trace_id": "threadline.tracing.spans",
    "deliver_span": "threadline.tracing.spans",
    "explain_prompt": "threadline.tracing.spans",
    "model_span": "threadline.tracing.spans",
    "routed": "threadline.tracing.spans",
    "tool_span": "threadline.tracing.spans",
    "turn_span": "threadline.tracing.spans",
})
