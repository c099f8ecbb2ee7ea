"""Interceptors: middleware around an agent run. Capture (the recording step) is always first."""

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
