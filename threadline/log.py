"""Logging set-up: readable console lines in a terminal, JSON lines in production.

Every Threadline module logs through `structlog.get_logger(...)` with the conversation and
channel bound; this module only decides how those events are rendered and which are kept.
Logs go to stderr, so the `threadline` command's stdout stays for its own output.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Literal, TextIO, cast

import structlog

LogFormat = Literal["auto", "console", "json"]


class _CurrentStderr:
    """Whatever `sys.stderr` is at each write (a test harness or a daemon may replace it)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()

    def isatty(self) -> bool:
        return sys.stderr.isatty()

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
          "error": logging.ERROR}


def chosen_level(level: str) -> str:
    """The level in force: `THREADLINE_LOG_LEVEL` when set, else `level` (info if unknown)."""
    chosen = os.environ.get("THREADLINE_LOG_LEVEL", level).lower()
    return chosen if chosen in LEVELS else "info"


def configure_logging(level: str = "info", log_format: LogFormat = "auto",
                      stream: TextIO | None = None) -> None:
    """Route structlog and the standard library's logging (the SDKs') to `stream`.

    `THREADLINE_LOG_LEVEL` and `THREADLINE_LOG_FORMAT` in the environment override the
    arguments, so an operator can turn on debug output without editing the config.
    """
    stream = stream or cast(TextIO, _CurrentStderr())
    level = chosen_level(level)
    chosen = os.environ.get("THREADLINE_LOG_FORMAT", log_format).lower()
    if chosen == "auto":
        chosen = "console" if stream.isatty() else "json"
    renderer: structlog.types.Processor = (
        structlog.dev.ConsoleRenderer(colors=stream.isatty()) if chosen == "console"
        else structlog.processors.JSONRenderer(sort_keys=True))
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(LEVELS[level]),
        logger_factory=structlog.PrintLoggerFactory(stream),
        cache_logger_on_first_use=False,
    )
    # The platform SDKs log through the standard library; keep their warnings, drop chatter.
    logging.basicConfig(stream=stream, level=max(LEVELS[level], logging.WARNING),
                        format="%(levelname)s %(name)s: %(message)s", force=True)
