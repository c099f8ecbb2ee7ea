"""Interceptors: middleware around an agent run. Capture (the recording step) is always first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from threadline.plugs import lazy_exports

if TYPE_CHECKING:
    from threadline.interceptors.base import Interceptor
    from threadline.interceptors.capture import CaptureInterceptor, DurableWriter
    from threadline.interceptors.error_reply import ErrorReplyInterceptor
    from threadline.interceptors.outbox import Outbox
    from threadline.interceptors.rate_limit import Rate, RateLimitInterceptor
    from threadline.interceptors.turn_log import TurnLogInterceptor
    from threadline.turn import TurnContext

__all__ = [
    "CaptureInterceptor",
    "DurableWriter",
    "ErrorReplyInterceptor",
    "Interceptor",
    "Outbox",
    "Rate",
    "RateLimitInterceptor",
    "TurnContext",
    "TurnLogInterceptor",
]

__getattr__ = lazy_exports(__name__, {
    "Interceptor": "threadline.interceptors.base",
    "CaptureInterceptor": "threadline.interceptors.capture",
    "DurableWriter": "threadline.interceptors.capture",
    "ErrorReplyInterceptor": "threadline.interceptors.error_reply",
    "Outbox": "threadline.interceptors.outbox",
    "Rate": "threadline.interceptors.rate_limit",
    "RateLimitInterceptor": "threadline.interceptors.rate_limit",
    "TurnLogInterceptor": "threadline.interceptors.turn_log",
    "TurnContext": "threadline.turn",
})
