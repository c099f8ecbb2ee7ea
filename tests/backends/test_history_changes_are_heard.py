"""Code can subscribe to a history's changes: called after each committed append, edit or
delete, for one conversation or all. On PostgreSQL a subscriber in one process hears a turn
another process appended (LISTEN/NOTIFY); an unsubscribed callback hears nothing more. SQLite
and the memory backend notify within their own process."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import drop_pg_schema, fresh_pg_schema, pg_url_or_skip
from tests.history.helpers import turn
from threadline.backends import open_backend
from threadline.backends.sql.notify import Listener
from threadline.history.changes import HistoryChange

REPOSITORY = Path(__file__).resolve().parents[2]
APPEND_ELSEWHERE = """
import asyncio, sys
from tests.history.helpers import turn
from threadline.backends.sql import SqlConversationStore

async def main() -> None:
    async with SqlConversationStore(sys.argv[1]) as store:
        await store.append(turn("hello", id=sys.argv[2], conversation_id="room"))

asyncio.run(main())
"""


async def append_in_another_process(url: str, message_id: str) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", APPEND_ELSEWHERE, url, message_id,
        cwd=REPOSITORY)
    assert await process.wait() == 0


async def heard(changes: list[HistoryChange], count: int) -> None:
    while len(changes) < count:  # noqa: ASYNC110
        await asyncio.sleep(0.01)


async def test_a_subscriber_hears_a_turn_another_process_appended_on_postgres() -> None:
    url = await fresh_pg_schema(pg_url_or_skip())
    try:
        async with open_backend(url) as backend:
            room: list[HistoryChange] = []
            everything: list[HistoryChange] = []
            unsubscribe = backend.history.subscribe(room.append, conversation_id="room")
            backend.history.subscribe(everything.append)
            await append_in_another_process(url, "m1")
            sent = time.monotonic()
            async with asyncio.timeout(10):  # a ceiling for "never"; the figure is printed
                await heard(room, 1)
            print(f"heard another process's append after {time.monotonic() - sent:.3f} s")
            assert room == [HistoryChange("append", "room", ("m1",))]

            unsubscribe()
            await append_in_another_process(url, "m2")
            async with asyncio.timeout(10):
                await heard(everything, 2)  # delivered in order: room's would have come first
            assert everything[1] == HistoryChange("append", "room", ("m2",))
            assert len(room) == 1  # heard nothing more
    finally:
        await drop_pg_schema(url)


@pytest.mark.parametrize("url", ["sqlite", "memory://"])
async def test_appends_edits_and_deletes_are_heard_in_this_process(url: str,
                                                                   tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.db'}" if url == "sqlite" else url
    async with open_backend(url) as backend:
        history = backend.history
        changes: list[HistoryChange] = []
        other: list[HistoryChange] = []
        history.subscribe(changes.append, conversation_id="room")
        history.subscribe(other.append, conversation_id="elsewhere")
        assert await history.append(turn("hello", id="m1", conversation_id="room"))
        assert not await history.append(turn("hello", id="m1", conversation_id="room"))  # no change
        assert await history.edit_message("room", "m1", "edited")
        assert await history.delete_messages("room", ["m1"]) == 1
        assert changes == [HistoryChange("append", "room", ("m1",)),
                           HistoryChange("edit", "room", ("m1",)),
                           HistoryChange("delete", "room", ("m1",))]
        assert other == []


async def test_a_failing_listener_neither_loses_the_write_nor_silences_the_others(
        tmp_path: Path) -> None:
    async with open_backend(f"sqlite:///{tmp_path / 'h.db'}") as backend:
        heard_too: list[HistoryChange] = []

        def broken(change: HistoryChange) -> None:
            raise RuntimeError("listener bug")

        backend.history.subscribe(broken)
        backend.history.subscribe(heard_too.append)
        assert await backend.history.append(turn("hello", id="m1", conversation_id="room"))
        assert [m.id for m in await backend.history.get("room")] == ["m1"]
        assert len(heard_too) == 1


async def test_a_process_hears_its_own_edit_at_once_and_once(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its caches (the vectors of the conversation) must not serve the old turn while the
    database's notification of the edit is on its way (slow on a loaded machine: here held
    back 0.3 s): the edit is told as it returns, and the notification, when it comes, is not
    told again."""
    heard_from_database = Listener._heard

    def slowly(self: Listener, *args: Any) -> None:
        asyncio.get_running_loop().call_later(0.3, heard_from_database, self, *args)

    monkeypatch.setattr(Listener, "_heard", slowly)
    async with open_backend(pg_url) as backend:
        store = backend.history
        await store.append(turn("the code is 1234", id="m1", conversation_id="room"))
        heard: list[HistoryChange] = []
        store.subscribe(heard.append)
        assert await store.edit_message("room", "m1", "the code is 5678")
        edits = [c for c in heard if c.kind != "append"]  # the append's comes late too
        assert edits == [HistoryChange("edit", "room", ("m1",))]  # before any await
        assert await store.delete_messages("room", ["m1"]) == 1
        # Notifications come back in commit order: once a later append's is heard, both
        # of the edit's and the deletion's have come (and were not told again).
        await store.append(turn("later", id="m2", conversation_id="elsewhere"))
        async with asyncio.timeout(10):
            while HistoryChange("append", "elsewhere", ("m2",)) not in heard:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        assert [c for c in heard if c.kind != "append"] == [
            HistoryChange("edit", "room", ("m1",)), HistoryChange("delete", "room", ("m1",))]
