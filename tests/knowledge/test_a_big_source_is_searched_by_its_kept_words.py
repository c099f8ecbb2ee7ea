"""A big knowledge source's words are kept in process and ranked there (`kept_words`), on real
stores (memory, SQLite files, PostgreSQL), the size from which a source counts as big lowered
to one section so a test's few pages are one.

The kept words find what the store's own search finds, and rank a quoted phrase by its words
without asking the store; the first search of a source does not
wait for them (the store's search answers it); a section replaced or deleted by a sync is
never returned by the index built before it, and a sync made through another store object
(another process) is picked up; one agent's source's words never answer another's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.history.embedding import index_everything
from tests.knowledge.helpers import documents_source, search, synced, write
from threadline.backends.sql import SqlConversationStore
from threadline.history.search import SearchQuery
from threadline.history.store import ConversationStore
from threadline.knowledge import kept_words as kept_words_module
from threadline.knowledge.kept_words import KeptWords, kept_words
from threadline.knowledge.library import Library
from threadline.knowledge.retrieval import UNCAPPED_TOKENS
from threadline.knowledge.shelf import source_conversation

REFUNDS = """# Refunds

## Within thirty days
Purchases returned within thirty days are refunded to the card that paid for them.

## Gift vouchers
Gift vouchers cannot be refunded once they have been redeemed.
"""
DELIVERY = """# Delivery

## Parcels abroad
Parcels to other countries travel by courier and arrive within ten working days.

## Tracking
Every parcel gets a tracking number by email when it leaves the warehouse.
"""
ACCOUNTS = """# Accounts

## Closing an account
An account is closed for good thirty days after the owner asks, and its orders are kept.

## Counselling
Our counsellors answer questions about debts by phone on working days.
"""
QUESTIONS = (
    "can a redeemed gift voucher be refunded?",
    "how many working days does a parcel abroad take?",
    "what happens to my orders when the account is closed?",
    "where is my tracking number for the parcel?",
    "are there counsellors for debts?",
)


@pytest.fixture(autouse=True)
def every_source_is_big(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kept_words_module, "KEPT_SECTIONS", 1)


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """While the event is clear, a kept index being built waits (the one before it answers)."""
    free = asyncio.Event()
    free.set()
    built = kept_words_module._built

    async def when_free(*args: Any, **kwargs: Any) -> Any:
        await free.wait()
        return await built(*args, **kwargs)

    monkeypatch.setattr(kept_words_module, "_built", when_free)
    return free


async def helpdesk(store: ConversationStore, folder: Path) -> Library:
    source = documents_source(store, write(folder, {
        "refunds.md": REFUNDS, "delivery.md": DELIVERY, "accounts.md": ACCOUNTS}))
    await synced(source)
    return Library({"help": source}, agents={"support": ["help"]})


def searches_counted(store: ConversationStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the store's own search is asked with, from now on."""
    asked: list[str] = []
    own: Callable[..., Awaitable[Any]] = store.search

    async def counted(conversation_id: str, query: str, **options: Any) -> Any:
        asked.append(query)
        return await own(conversation_id, query, **options)

    monkeypatch.setattr(store, "search", counted)
    return asked


async def test_the_kept_words_find_what_the_stores_search_finds(
        store: ConversationStore, tmp_path: Path) -> None:
    await helpdesk(store, tmp_path / "help")
    conversation = source_conversation("help")
    words = kept_words(store)
    assert words is not None
    kept = await words.ready(conversation)
    assert kept is not None and kept.words.sections == 6
    for question in QUESTIONS:
        by_store = [turn.sequence for turn in await store.search(
            conversation, question, limit=10, token_cap=UNCAPPED_TOKENS)]
        by_words = kept.words.best(SearchQuery.parse(question), limit=10)
        assert by_words[:1] == by_store[:1], question
        assert set(by_words) == set(by_store), question


async def test_a_quoted_phrase_is_ranked_by_the_kept_words(
        store: ConversationStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    library = await helpdesk(store, tmp_path / "help")
    words = kept_words(store)
    assert words is not None
    assert await words.ready(source_conversation("help")) is not None
    asked = searches_counted(store, monkeypatch)
    [first, *_] = await search(library, "support", 'You said "gift vouchers": can mine be '
                                                   'refunded once redeemed?')
    assert first.headings == ("Gift vouchers",)
    assert asked == [], "the store's search ranked the phrase"


async def test_the_first_search_is_the_stores_own_and_does_not_wait(
        store: ConversationStore, tmp_path: Path, builds: asyncio.Event,
        monkeypatch: pytest.MonkeyPatch) -> None:
    library = await helpdesk(store, tmp_path / "help")
    conversation = source_conversation("help")
    asked = searches_counted(store, monkeypatch)
    builds.clear()
    # A search that waited for the index would wait for ever (the build is held): fail fast.
    async with asyncio.timeout(30):
        [first, *_] = await search(library, "support", QUESTIONS[0])
    assert first.headings == ("Gift vouchers",)
    assert asked == [QUESTIONS[0]]
    words = kept_words(store)
    assert words is not None and words.usable(conversation) is None, "the search waited"

    builds.set()
    assert await words.ready(conversation) is not None
    asked.clear()
    [again, *_] = await search(library, "support", QUESTIONS[0])
    assert again == first
    assert asked == [], "the kept words were not used once built"


async def test_sections_a_sync_replaced_or_deleted_are_not_returned_by_the_old_index(
        store: ConversationStore, tmp_path: Path, builds: asyncio.Event) -> None:
    folder = tmp_path / "help"
    library = await helpdesk(store, folder)
    conversation = source_conversation("help")
    words = kept_words(store)
    assert words is not None
    old = await words.ready(conversation)
    assert old is not None

    builds.clear()
    write(folder, {"refunds.md": REFUNDS.replace(
        "cannot be refunded once they have been redeemed",
        "are exchanged for store credit once they have been redeemed")})
    (folder / "delivery.md").unlink()
    report = await synced(library.sources["help"])  # type: ignore[arg-type]
    assert (report.changed, report.removed) == (1, 1)
    await index_everything(store)  # a section added meanwhile is found by meaning

    found = await search(library, "support", QUESTIONS[0], limit=10)
    assert words.usable(conversation) is old, "the old index did not answer"
    assert any("store credit" in s.text for s in found)
    assert not any("cannot be refunded" in s.text for s in found)
    gone = await search(library, "support", "parcels abroad courier tracking warehouse",
                        limit=10)
    assert not any(s.document == "delivery.md" for s in gone)

    builds.set()
    new = await words.ready(conversation)
    assert new is not None and new is not old and new.words.sections == 4
    found = await search(library, "support", QUESTIONS[0], limit=10)
    assert any("store credit" in s.text for s in found)
    assert not any("cannot be refunded" in s.text for s in found)


async def test_a_sync_through_another_store_object_is_picked_up(
        sql_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every search looks at the source's size and newest sequence (no waiting for the clock).
    monkeypatch.setattr(kept_words_module, "CHECK_SECONDS", 0.0)
    folder = tmp_path / "help"
    conversation = source_conversation("help")
    async with SqlConversationStore(sql_url) as bot, \
            SqlConversationStore(sql_url) as command:
        library = await helpdesk(bot, folder)
        words = kept_words(bot)
        assert words is not None
        old = await words.ready(conversation)
        assert old is not None

        write(folder, {"refunds.md": REFUNDS.replace(
            "cannot be refunded once they have been redeemed",
            "are exchanged for store credit once they have been redeemed")})
        await synced(documents_source(command, folder))

        new = await words.ready(conversation)
        assert new is not None and new is not old
        assert new.words.sections == old.words.sections
        assert max(new.words.sequences) > max(old.words.sequences)
        found = await search(library, "support", QUESTIONS[0], limit=10)
        assert any("store credit" in s.text for s in found)
        assert not any("cannot be refunded" in s.text for s in found)


async def test_one_agents_source_never_answers_another(
        store: ConversationStore, tmp_path: Path) -> None:
    help_desk = documents_source(store, write(tmp_path / "help", {"refunds.md": REFUNDS}))
    ledger = documents_source(store, write(tmp_path / "ledger", {
        "ledger.md": "# Ledger\n\n## Month end\nThe ledger code for month end is MAGENTA-42; "
                     "refunds are booked against it.\n"}), name="ledger")
    for source in (help_desk, ledger):
        await synced(source)
    library = Library({"help": help_desk, "ledger": ledger},
                      agents={"support": ["help"], "finance": ["ledger"]})
    words = kept_words(store)
    assert words is not None
    for name in ("help", "ledger"):
        assert await words.ready(source_conversation(name)) is not None

    assert not any(s.source == "ledger" for s in await search(
        library, "support", "ledger code for month end magenta refunds booked", limit=10))
    assert not any(s.source == "help" for s in await search(
        library, "finance", "gift vouchers refunded redeemed card purchases", limit=10))


async def test_the_least_recently_searched_source_is_dropped_beyond_the_bound(
        store: ConversationStore, tmp_path: Path) -> None:
    await helpdesk(store, tmp_path / "help")
    await synced(documents_source(store, write(tmp_path / "ledger", {
        "ledger.md": "# Ledger\n\n## Month end\nThe ledger code for month end is MAGENTA-42.\n"}),
        name="ledger"))
    unbound = KeptWords(store)
    sizes = [kept.size for name in ("help", "ledger")
             if (kept := await unbound.ready(source_conversation(name))) is not None]
    assert len(sizes) == 2

    words = KeptWords(store, max_bytes=max(sizes) + min(sizes) - 1)
    assert await words.ready(source_conversation("help")) is not None
    assert await words.ready(source_conversation("ledger")) is not None
    assert words.usable(source_conversation("ledger")) is not None
    assert words.usable(source_conversation("help")) is None, "both kept beyond the bound"
