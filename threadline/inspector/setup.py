"""The inspector of one process: records, recorder, redactor, retention and console, from settings.

`threadline run`, `threadline console` and the demo all build it here, so the three agree on
where records live, which secrets are redacted and who may see the console.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from aiohttp import web

from threadline.channels.delivery_status import DeliveryStatuses
from threadline.history.store import ConversationStore
from threadline.inspector.console.server import console_app
from threadline.inspector.recorder import ReplyRecorder, StatusesAfterRecords
from threadline.inspector.records import ReplyRecords
from threadline.inspector.redaction import Redactor, redactor_for
from threadline.inspector.replay import Replayer
from threadline.inspector.retention import RecordRetention

if TYPE_CHECKING:
    from threadline.agents.agent import Agent
    from threadline.backends.base import Backend
    from threadline.config import Settings


class Inspector:
    """Everything reply records need in one process; see the module docstring."""

    def __init__(self, *, store: ConversationStore, records: ReplyRecords | None,
                 redactor: Redactor, record: bool = True, retention_days: float | None = None,
                 token: str | None = None, trace_url: str | None = None) -> None:
        self.store = store
        self.trace_url = trace_url  # the console links each record's trace there
        # None: the store's backend keeps no records, and the inspector is off (said at start).
        self.records = records
        self.redactor = redactor
        self.recorder = (ReplyRecorder(self.records, redactor=redactor)
                         if record and self.records is not None else None)
        self.retention = (RecordRetention(self.records, retention_days)
                          if retention_days is not None and self.records is not None else None)
        self.token = token

    @property
    def delivery_statuses(self) -> DeliveryStatuses | None:
        """Where a platform's statuses of posted replies are kept: on the records, once the
        recorder's queued ones are written (`StatusesAfterRecords`); None without records."""
        if self.records is None or self.recorder is None:
            return self.records
        return StatusesAfterRecords(self.records, self.recorder)

    @classmethod
    def for_settings(cls, settings: Settings, backend: Backend) -> Inspector:
        inspector = settings.inspector
        return cls(store=backend.history, redactor=redactor_for(settings),
                   record=inspector.records, retention_days=inspector.retention_days,
                   token=inspector.token, records=backend.records,
                   trace_url=settings.tracing.trace_url)

    def replayer(self, agents: Sequence[Agent]) -> Replayer | None:
        """Replays records with these agents (built from the current settings); None without
        records."""
        if self.records is None:
            return None
        return Replayer(records=self.records, store=self.store, agents=agents,
                        redactor=self.redactor)

    def console(self, agents: Sequence[Agent] = ()) -> web.Application | None:
        """The console app (None without records); with agents (built from the current
        settings) it can replay."""
        if self.records is None:
            return None
        return console_app(records=self.records, store=self.store, redactor=self.redactor,
                           token=self.token, trace_url=self.trace_url,
                           replayer=self.replayer(agents) if agents else None)

    def start(self) -> None:
        """Start pruning old records in the background (when a retention is set)."""
        if self.retention is not None:
            self.retention.start()

    async def stop(self) -> None:
        """Write the records still queued, stop pruning."""
        if self.recorder is not None:
            await self.recorder.close()
        if self.retention is not None:
            await self.retention.stop()
