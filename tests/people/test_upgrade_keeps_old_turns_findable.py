"""A store made before people existed (schema 0005) upgrades with its turns findable by person.

The turns stored by the old schema get their speaker keys during the upgrade, and the rebuilt
word index holds them: the person's memory finds an old turn, and `forget` removes it.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from sqlalchemy import create_engine, text

from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.engines import _alembic_config
from threadline.history.model import Participant, StoredMessage
from threadline.history.search import conversation_key
from threadline.people import person_memory_for
from threadline.people.erase import forget_person

ANN = Participant(kind="user", id="UANN", display_name="Ann")


def _old_store(path: Path) -> None:
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as connection:
        command.upgrade(_alembic_config(connection), "0005")
        for n, (cid, who, words) in enumerate([
                ("slack:T1:C1", "UANN", "my locker code is 5531"),
                ("slack:T1:C1", "UBOB", "my locker code is 9999")], start=1):
            connection.execute(text(
                "INSERT INTO threadline_messages (id, conversation_id, conv_key, sequence, "
                "participant_kind, participant_id, participant_name, content, ts_us, scope, "
                "channel_type, mentions, is_summary, has_cjk, token_count) VALUES (:id, :cid, "
                ":key, :n, 'user', :who, :who, :words, :n, 'channel', 'slack', '', false, false, "
                "10)"), {"id": f"t{n}", "cid": cid, "key": conversation_key(cid), "n": n,
                         "who": who, "words": words})
    engine.dispose()


async def test_old_turns_are_found_and_forgotten_after_the_upgrade(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _old_store(path)
    async with SqlConversationStore(f"sqlite+aiosqlite:///{path}") as store:
        asking = StoredMessage(conversation_id="slack:T1:C2", participant=ANN,
                               content="what is my locker code?")
        memory = await person_memory_for(store, asking)
        assert memory is not None
        assert [m.content for m in await memory.search("locker code")] == [
            "my locker code is 5531"]
        assert (await forget_person(store, "slack:T1:UANN"))["turns"] == 1
        assert [m.content for m in await store.get("slack:T1:C1")] == ["my locker code is 9999"]
        assert await store.search_context("slack:T1:C1", "locker 5531") != []
        assert all("5531" not in m.content for w in await store.search_context(
            "slack:T1:C1", "locker 5531") for m in w.messages)
