"""A platform's status of a posted reply that comes back while the reply's record still waits
to be written (records gather before their write) is kept on it: the keeper the runtime gives
channels (`Inspector.delivery_statuses`) writes the queued records first."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from tests.inspector.test_records_are_written_together_after_their_turns import (
    NEVER,
    recorded_room,
)
from threadline.channels.delivery_status import PartStatus
from threadline.inspector.recorder import StatusesAfterRecords

SENT = PartStatus("sent", datetime(2026, 3, 5, 12, tzinfo=UTC))


async def test_a_status_of_a_reply_whose_record_waits_is_kept(tmp_path: Path) -> None:
    async with recorded_room(tmp_path, gather_seconds=NEVER) as (room, recorder, records):
        await room.say("@support where is order 4401?", user="ada")
        [reply] = room.sent
        assert await records.recent() == []  # its record waits to be written
        statuses = StatusesAfterRecords(records, recorder)
        assert await statuses.note_delivery(reply.conversation_id, reply.message_id, SENT)
        [listed] = await records.recent()
        assert listed.delivery_status == {reply.message_id: SENT.as_dict()}
        await recorder.close()
