"""Exporting a person with 100,000 turns streams: bounded memory, progress in the log.

The turns (in 200 conversations of a real SQLite file, beside another person's) are written
line by line while they are read in batches: the Python heap's peak during the export stays a
small fraction of what was written, and the log says how far it got along the way.
"""

from __future__ import annotations

import json
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

from structlog.testing import capture_logs

from threadline.backends.sql import SqlConversationStore
from threadline.history.model import Participant, StoredMessage
from threadline.people.erase import export_person

TURNS = 100_000
CONVERSATIONS = 200
ANN = Participant(kind="user", id="U0ANN", display_name="Ann")
BOB = Participant(kind="user", id="U0BOB", display_name="Bob")
START = datetime(2025, 1, 1, tzinfo=UTC)


def _turns(who: Participant, count: int, offset: int) -> list[StoredMessage]:
    return [StoredMessage(
        conversation_id=f"slack:T1:C{(offset + n) % CONVERSATIONS}", participant=who,
        content=f"{who.display_name} turn {n}: the parcel with tracking code {n:06d} is late",
        timestamp=START + timedelta(seconds=n)) for n in range(count)]


async def test_export_of_100000_turns_streams_with_progress(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'big.db'}"
    async with SqlConversationStore(url) as store:
        turns = _turns(ANN, TURNS, 0)
        for start in range(0, TURNS, 500):
            await store.append_many(turns[start:start + 500])
        await store.append_many(_turns(BOB, 500, 7))
        del turns

        out = tmp_path / "ann.jsonl"
        tracemalloc.start()
        try:
            with capture_logs() as logs, out.open("w", encoding="utf-8") as target:
                counts = await export_person(store, "slack:T1:U0ANN", target)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()

    assert counts["turns"] == TURNS
    written = out.stat().st_size
    assert written > 20_000_000
    assert peak < written / 5, f"peak heap {peak:,} bytes for {written:,} bytes written"
    progress = [e for e in logs if e["event"] == "people.export.progress"]
    assert len(progress) >= 9
    assert [e["turns"] for e in progress] == sorted(e["turns"] for e in progress)
    assert logs[-1]["event"] == "people.export.done" and logs[-1]["turns"] == TURNS
    with out.open(encoding="utf-8") as lines:
        first = json.loads(next(lines))
        assert first == {"kind": "person", "person_id": first["person_id"],
                         "identities": ["slack:T1:U0ANN"]}
        kinds: dict[str, int] = {}
        for line in lines:
            entry = json.loads(line)
            kinds[entry["kind"]] = kinds.get(entry["kind"], 0) + 1
            assert entry.get("participant", {}).get("id", "U0ANN") == "U0ANN"
    assert kinds == {"turn": TURNS}
