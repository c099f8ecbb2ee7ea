"""PostgreSQL keeps a long conversation's word counts (`KeptLexemeCounts`) while it is unchanged:
a small change is served the kept counts at once and counted again in the background, off the
turn's path (counting 100,000 sections took 0.7 to 3.6 s inside a turn); a change larger than
STALE_SHARE of its turns is counted again before the search goes on."""

from __future__ import annotations

import asyncio

import pytest

from tests.history.helpers import ANN, BOB, turn
from threadline.backends.sql import lexeme_counts
from threadline.backends.sql.lexeme_counts import STALE_SHARE
from threadline.backends.sql.postgres import PostgresRunner
from threadline.history.store import ConversationStore

CONVERSATION = "long-counted"


async def _axolotls(store: ConversationStore) -> int:
    """The turns holding "axolotl" by the counts a search of the conversation would use."""

    def counted(runner: PostgresRunner) -> int:
        return runner.lexemes.counts(runner, CONVERSATION).postings("axolotl")

    return int(await store.run("count", counted))  # type: ignore[attr-defined]


async def _appended(store: ConversationStore, texts: list[str], *, first: int) -> None:
    await store.append_many([turn(text, conversation_id=CONVERSATION, who=BOB if n % 2 else ANN,
                                  minute=first + n) for n, text in enumerate(texts)])


@pytest.fixture(autouse=True)
def every_search_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexeme_counts, "CHECK_SECONDS", 0.0)


@pytest.mark.parametrize("store", ["postgresql"], indirect=True)
async def test_a_small_change_is_served_the_kept_counts_and_counted_in_the_background(
        store: ConversationStore) -> None:
    turns = int(2 / STALE_SHARE)  # one turn more is half the share: a small change
    await _appended(store, ["an axolotl tank", *(f"lunch number {n}" for n in range(turns - 1))],
                    first=0)
    assert await _axolotls(store) == 1
    await _appended(store, ["another axolotl"], first=turns)
    assert await _axolotls(store) == 1  # the kept counts, served without counting
    for _ in range(500):  # the refresh the search left behind, on its own connection
        await asyncio.sleep(0.01)
        if await _axolotls(store) == 2:
            break
    assert await _axolotls(store) == 2


@pytest.mark.parametrize("store", ["postgresql"], indirect=True)
async def test_a_large_change_is_counted_before_the_search(store: ConversationStore) -> None:
    await _appended(store, ["an axolotl tank", "lunch at noon"], first=0)
    assert await _axolotls(store) == 1
    await _appended(store, ["another axolotl", "and one more axolotl"], first=2)
    assert await _axolotls(store) == 3  # half the conversation is new: counted now
    await store.delete_messages(CONVERSATION, [
        m.id for m in await store.get(CONVERSATION) if "more" in m.content])
    assert await _axolotls(store) == 2  # a deletion is a change too


@pytest.mark.parametrize("store", ["postgresql"], indirect=True)
async def test_searches_close_together_read_where_the_conversation_stands_once(
        store: ConversationStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexeme_counts, "CHECK_SECONDS", 3600.0)
    await _appended(store, ["an axolotl tank", "lunch at noon"], first=0)
    assert await _axolotls(store) == 1
    await _appended(store, ["another axolotl", "and one more axolotl"], first=2)
    assert await _axolotls(store) == 1  # checked a moment ago: the kept counts, unread
    monkeypatch.setattr(lexeme_counts, "CHECK_SECONDS", 0.0)
    assert await _axolotls(store) == 3
