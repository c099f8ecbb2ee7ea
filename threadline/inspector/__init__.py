"""The inspector: a record of what every agent saw and did for each reply, a console, replay.

    recorder = ReplyRecorder(backend.records, redactor=redactor_for(settings))
    Agent(name="support", ..., observer=recorder)     # one record per turn
    await backend.records.recent("slack:T1:C1")       # newest replies of a conversation

`threadline inspect` reads records on the command line, `threadline console` serves them as
web pages (also mounted on `threadline run`'s ops server), and `replay` re-runs a recorded turn
with today's options or another model without posting anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from threadline.plugs import lazy_exports

if TYPE_CHECKING:
    from threadline.inspector.record import ReplyRecord
    from threadline.inspector.recorder import ReplyRecorder
    from threadline.inspector.records import (
        InMemoryReplyRecords,
        RecordedConversation,
        ReplyRecords,
    )
    from threadline.inspector.redaction import Redactor, redactor_for

__all__ = [
    "InMemoryReplyRecords",
    "RecordedConversation",
    "Redactor",
    "ReplyRecord",
    "ReplyRecorder",
    "ReplyRecords",
    "redactor_for",
]

__getattr__ = lazy_exports(__name__, {
    "ReplyRecord": "threadline.inspector.record",
    "ReplyRecorder": "threadline.inspector.recorder",
    "InMemoryReplyRecords": "threadline.inspector.records",
    "RecordedConversation": "threadline.inspector.records",
    "ReplyRecords": "threadline.inspector.records",
    "Redactor": "threadline.inspector.redaction",
    "redactor_for": "threadline.inspector.redaction",
})
