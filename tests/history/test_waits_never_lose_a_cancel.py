"""Background loops stop when asked, and a stop never swallows its caller's cancel.

On Python 3.11, `asyncio.wait_for(event.wait(), t)` swallows a cancel that arrives in the same
turn of the loop the event is set: the indexer went back to waiting, `runtime.stop()` waited on
it forever (seen as a `threadline run` that logged its channels stopped and never exited). A
stop follows a wake here at every distance of a few loop turns, which covers that window.
`cancel_and_wait` ends a task's own cancel and lets the caller's through, so a stop given a
deadline is cut short by it, and cleanup after an earlier cancel still runs to its end.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.history.embedding import real_embedder, vectors_of
from tests.history.helpers import turn
from threadline.backends.sql import SqlConversationStore
from threadline.history.indexer import VectorIndexer
from threadline.waiting import cancel_and_wait, set_within


async def test_a_stop_the_same_append_asks_for_ends_the_indexer(tmp_path: Path) -> None:
    """The append that wakes the indexer also asks for the stop, a loop turn later (as the
    outbox's last flush at shutdown did, followed at once by the indexer's stop)."""
    async with SqlConversationStore(f"sqlite:///{tmp_path / 'stop.db'}") as store:
        indexer = VectorIndexer(store, vectors_of(store), real_embedder(), idle_seconds=3600)
        indexer.start()
        await asyncio.wait_for(indexer.caught_up.wait(), 30)
        stopping: list[asyncio.Future[None]] = []
        store.subscribe(lambda change: stopping.append(asyncio.ensure_future(indexer.stop())))
        await store.append(turn("a new turn wakes the indexer", conversation_id="c"))
        stopped, _ = await asyncio.wait(stopping, timeout=10)
        assert stopped, "the indexer did not stop within 10 s of being asked"
        assert indexer._task is None


@pytest.mark.parametrize("turns_between", range(5))
async def test_a_cancel_as_the_event_is_set_is_kept(turns_between: int) -> None:
    event = asyncio.Event()

    async def wait_again_and_again() -> None:
        while True:
            await set_within(event, 3600)
            event.clear()

    waiting = asyncio.create_task(wait_again_and_again())
    await asyncio.sleep(0)  # one loop turn: the task runs until it waits on the event
    event.set()
    for _ in range(turns_between):
        await asyncio.sleep(0)
    waiting.cancel()
    ended, _ = await asyncio.wait([waiting], timeout=5)
    assert ended, "the cancel was lost: the loop went back to waiting"
    assert waiting.cancelled()


async def test_set_within_says_whether_the_event_came() -> None:
    event = asyncio.Event()
    assert await set_within(event, 0.01) is False
    asyncio.get_running_loop().call_later(0.01, event.set)
    assert await set_within(event, 5) is True
    assert await set_within(event, 0) is True  # set already: no wait


async def _forever() -> None:
    await asyncio.Event().wait()


async def test_a_stop_given_a_deadline_is_cut_short_by_it() -> None:
    """The caller's own cancel (here its deadline) is not swallowed with the task's."""
    async def stubborn() -> None:  # takes a while to wind down when cancelled
        try:
            await _forever()
        finally:
            await asyncio.sleep(3600)

    task = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await cancel_and_wait(task)
    task.cancel()  # the test's own cleanup


async def test_cleanup_after_an_earlier_cancel_still_runs_to_its_end() -> None:
    steps: list[str] = []

    async def worker_then_cleanup() -> None:
        helper = asyncio.create_task(_forever())
        try:
            await _forever()
        finally:  # cancelled above: cleanup stops the helper, then goes on
            await cancel_and_wait(helper)
            steps.append("after the helper")

    task = asyncio.create_task(worker_then_cleanup())
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.wait([task], timeout=5)
    assert task.cancelled() and steps == ["after the helper"]
