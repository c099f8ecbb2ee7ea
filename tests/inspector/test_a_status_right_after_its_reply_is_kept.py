"""A platform's status of a posted reply that comes back before the reply's record is written
is kept on it: while the record gathers before its write (the keeper the runtime gives
channels, `Inspector.delivery_statuses`, writes the queued records first), and while the
reply's turn still runs (the status is held for the record built when the turn ends)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from tests.inspector.test_records_are_written_together_after_their_turns import (
    NEVER,
    recorded_room,
)
from threadline.channels.delivery_status import PartStatus
from threadline.channels.local import LocalReply
from threadline.inspector.recorder import StatusesAfterRecords

SENT = PartStatus("sent", datetime(2026, 3, 5, 12, tzinfo=UTC))
DELIVERED = PartStatus("delivered", datetime(2026, 3, 5, 12, 0, 1, tzinfo=UTC))


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


async def test_statuses_that_come_back_while_the_turn_still_runs_are_kept(
        tmp_path: Path) -> None:
    async with recorded_room(tmp_path, gather_seconds=NEVER) as (room, recorder, records):
        statuses = StatusesAfterRecords(records, recorder)
        noted: list[bool] = []

        async def platform_answers(reply: LocalReply) -> None:
            # Posted, and the turn has not ended: its record is not even built yet.
            for status in (SENT, DELIVERED):
                noted.append(await statuses.note_delivery(reply.conversation_id,
                                                          reply.message_id, status))

        room.on_reply = platform_answers
        await room.say("@support where is order 4401?", user="ada")
        [reply] = room.sent
        assert noted == [False, False]  # no record had the id yet: held for the turn's
        await recorder.flush()
        [listed] = await records.recent()
        assert listed.delivery_status == {reply.message_id: DELIVERED.as_dict()}
        assert not await statuses.note_delivery(reply.conversation_id, reply.message_id, SENT)
        [listed] = await records.recent()
        assert listed.delivery_status == {reply.message_id: DELIVERED.as_dict()}
        await recorder.close()
