"""Text no encoder accepts as it came is kept (with U+FFFD) and answered, on every platform;
a message naming 10,000 people costs a bounded number of name lookups.

The real runtime (offline model, SQLite) against each fake platform over real sockets. A lone
surrogate (`\\ud800`, what a platform's JSON can carry and UTF-8 cannot) used to make the store
refuse the turn, so the message was never answered.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.runtime.platforms import platform, replies_sent, say
from tests.runtime.test_listeners_survive_bad_events import running, until
from threadline.channels.slack.directory import MAX_LOOKUPS_PER_MESSAGE


def stored_texts(database: Path) -> list[str]:
    with sqlite3.connect(database) as db:
        return [row[0] for row in db.execute("SELECT content FROM threadline_messages")]


@pytest.mark.parametrize("name", ["slack", "telegram", "discord"])
async def test_a_lone_surrogate_is_stored_replaced_and_answered(tmp_path: Path,
                                                                name: str) -> None:
    async with platform(name, streaming=False) as where, running(tmp_path, name, where):
        await say(name, where, 0, "broken \ud800 half of a pair, then \udfff another")
        await until(lambda: len(replies_sent(name, where)) >= 1)
        assert "\ufffd half of a pair" in replies_sent(name, where)[-1]
    texts = stored_texts(tmp_path / "threadline.db")
    assert any("broken \ufffd half of a pair, then \ufffd another" in t for t in texts)


async def test_ten_thousand_mentions_make_a_bounded_number_of_lookups(tmp_path: Path) -> None:
    async with platform("slack", streaming=False) as where, running(tmp_path, "slack", where):
        slack = where.fake
        before = len(slack.calls_to("users.info"))
        crowd = " ".join(f"<@U{n:08d}>" for n in range(10_000))
        assert await say("slack", where, 0, f"hello {crowd}")
        await until(lambda: len(replies_sent("slack", where)) >= 1)
        lookups = len(slack.calls_to("users.info")) - before
        assert 0 < lookups <= MAX_LOOKUPS_PER_MESSAGE + 1  # the author, and a capped few
