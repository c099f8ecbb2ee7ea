"""Logging set-up: readable console lines in a terminal, JSON lines in production.

Every Threadline module logs through `structlog.get_logger(...)` with the conversation and
channel bound; this module only decides how those events are rendered and which are kept.
Logs go to stderr, so the `threadline` command's stdout (and a host program's, when Threadline
is a library) stays for its own output.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import Literal, TextIO, cast

import structlog

LogFormat = Literal["auto", "console", "json"]


class _CurrentStderr:
    """Whatever `sys.stderr` is at each write (a test harness or a daemon may replace it).

    A reader that went away (`2>&1 | head`) loses the log lines, never the program: a log
    write raising BrokenPipeError would end whatever turn or shutdown was logging.
    """

    def write(self, text: str) -> int:
        with contextlib.suppress(BrokenPipeError):
            return sys.stderr.write(text)
        return 0

    def flush(self) -> None:
        with contextlib.suppress(BrokenPipeError):
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
    stream = _configure_structlog(level, log_format, stream)
    # The platform SDKs log through the standard library; keep their warnings, drop chatter.
    logging.basicConfig(stream=stream, level=max(LEVELS[chosen_level(level)], logging.WARNING),
                        format="%(levelname)s %(name)s: %(message)s", force=True)


def configure_library_logging(level: str, log_format: LogFormat = "auto") -> None:
    """Threadline's own logs to stderr inside a host program (`Threadline(...)`).

    The host owns its process's logging: a host that configured structlog keeps its set-up,
    and the standard library's root logger (which the host may have set up) is left alone.
    Otherwise structlog would print every level to stdout, mixed into the host's output.
    """
    ours = structlog.get_config()["logger_factory"] is _Installed.factory
    if structlog.is_configured() and not ours:
        return
    _configure_structlog(level, log_format, None)


class _Installed:
    """The logger factory Threadline last configured: if it is still in force, the set-up is
    Threadline's own (else a host's, to be left alone)."""

    factory: object = None


def _configure_structlog(level: str, log_format: LogFormat, stream: TextIO | None) -> TextIO:
    stream = stream or cast(TextIO, _CurrentStderr())
    chosen = os.environ.get("THREADLINE_LOG_FORMAT", log_format).lower()
    if chosen == "auto":
        chosen = "console" if stream.isatty() else "json"
    renderer: structlog.types.Processor = (
        structlog.dev.ConsoleRenderer(colors=stream.isatty()) if chosen == "console"
        else structlog.processors.JSONRenderer(sort_keys=True))
    factory = _Installed.factory = structlog.PrintLoggerFactory(stream)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(LEVELS[chosen_level(level)]),
        logger_factory=factory,
        cache_logger_on_first_use=False,
    )
    return stream
