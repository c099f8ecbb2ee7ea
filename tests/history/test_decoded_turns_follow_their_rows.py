"""The SQL stores keep turns decoded by their whole row (`row_to_message`): a turn read again
is the one decoded before (unless its row is long), and a turn edited since is read as it is
now, by every read."""

from __future__ import annotations

from tests.history.helpers import ANN, turn
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.schema import DECODED_ROW_CHARS


async def test_a_turn_read_again_is_decoded_once(sql_store: SqlConversationStore) -> None:
    await sql_store.append(turn("the boiler pressure is low", conversation_id="decoded"))
    [first] = await sql_store.get("decoded")
    [again] = await sql_store.get("decoded")
    assert again is first


async def test_a_long_turn_is_not_kept(sql_store: SqlConversationStore) -> None:
    await sql_store.append(turn("pressure " * (DECODED_ROW_CHARS // 9 + 1),
                                conversation_id="decoded-long"))
    [first] = await sql_store.get("decoded-long")
    [again] = await sql_store.get("decoded-long")
    assert again == first and again is not first


async def test_an_edited_turn_is_read_as_it_is_now(sql_store: SqlConversationStore) -> None:
    said = turn("the boiler pressure is low", conversation_id="decoded-edit", who=ANN)
    await sql_store.append(said)
    [before] = await sql_store.get("decoded-edit")
    assert [hit.content for hit in await sql_store.search("decoded-edit", "boiler")] == [
        "the boiler pressure is low"]
    assert await sql_store.edit_message("decoded-edit", said.id, "the boiler was fixed")
    [after] = await sql_store.get("decoded-edit")
    assert after.content == "the boiler was fixed"
    assert (after.id, after.sequence) == (before.id, before.sequence)
    assert [hit.content for hit in await sql_store.search("decoded-edit", "boiler")] == [
        "the boiler was fixed"]
    assert [m.content for m in await sql_store.get_by_ids("decoded-edit", [said.id])] == [
        "the boiler was fixed"]
