"""Inspector settings: reply records and the console (`inspector:`)."""

from __future__ import annotations

from pydantic import (
    Field,
)

from threadline.settings_section import Section


class InspectorSettings(Section):
    """Reply records (what each agent saw, for every reply) and the web console that shows them.

    `retention_days` deletes records older than that many days (None keeps them); the
    console is served under `/console` on the ops server, and needs `token` (as
    `${VARIABLE}`) when the ops server listens beyond 127.0.0.1.
    """

    records: bool = True
    """Keep a reply record of what each agent saw and did for every reply."""
    retention_days: float | None = Field(default=30, gt=0)
    """Delete reply records older than this many days (null keeps them); the history is not
    touched."""
    console: bool = True
    """Serve the web console at /console/ on the ops server."""
    token: str | None = None
    """The console's token, as ${VARIABLE}; required when ops.host is not a loopback address."""
