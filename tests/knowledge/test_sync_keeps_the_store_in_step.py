"""`threadline knowledge sync`'s work on a real store (memory, SQLite file, PostgreSQL): an
edited document's old text is gone from search, a deleted document's sections are gone, and a
second sync of unchanged documents writes nothing."""

from __future__ import annotations

from pathlib import Path

from tests.knowledge.helpers import documents_source, search, stored_sections, synced, write
from threadline.history.model import Participant, StoredMessage
from threadline.history.store import ConversationStore
from threadline.knowledge.library import Library
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
"""


async def test_an_edited_documents_old_text_is_gone_and_a_deleted_ones_sections_too(
        store: ConversationStore, tmp_path: Path) -> None:
    folder = write(tmp_path / "help", {"refunds.md": REFUNDS, "delivery.md": DELIVERY})
    source = documents_source(store, folder)
    library = Library({"help": source}, agents={"support": ["help"]})
    first = await synced(source)
    assert (first.added, first.changed, first.removed, first.problems) == (2, 0, 0, [])
    [voucher, *_] = await search(library, "support", "can a redeemed gift voucher be refunded?")
    assert voucher.headings == ("Gift vouchers",) and voucher.document == "refunds.md"
    assert voucher.path == "Refunds > Gift vouchers"

    write(folder, {"refunds.md": REFUNDS.replace(
        "cannot be refunded once they have been redeemed",
        "are exchanged for store credit at any desk")})
    (folder / "delivery.md").unlink()
    second = await synced(source)
    assert (second.added, second.changed, second.removed, second.unchanged) == (0, 1, 1, 0)

    kept = await stored_sections(store, "help")
    assert {s.document for s in kept} == {"refunds.md"}
    assert not any("cannot be refunded" in s.text for s in kept)
    found = await search(library, "support", "gift voucher redeemed refund", limit=10)
    assert found and not any("cannot be refunded" in s.text for s in found)
    assert any("store credit" in s.text for s in found)
    assert not await search(library, "support", "parcels courier abroad countries")


async def test_a_second_sync_of_unchanged_documents_does_no_work(
        store: ConversationStore, tmp_path: Path) -> None:
    folder = write(tmp_path / "help", {"refunds.md": REFUNDS, "delivery.md": DELIVERY})
    source = documents_source(store, folder)
    await synced(source)
    conversation = source_conversation("help")
    before = [(t.id, t.sequence) for t in await store.get(conversation, limit=1000)]
    again = await synced(source)
    assert not again.did_work and again.unchanged == 2 and again.sections_written == 0
    # Not one section written again: the same turns at the same sequence numbers (a rewrite
    # would have appended them anew), and no sequence number used since.
    assert [(t.id, t.sequence) for t in await store.get(conversation, limit=1000)] == before
    probe = await store.append(StoredMessage(conversation_id=conversation, participant=Participant(
        kind="system", id=conversation), content="probe"))
    assert probe
    [last] = await store.get(conversation, limit=1)
    assert last.sequence == max(sequence or 0 for _, sequence in before) + 1
