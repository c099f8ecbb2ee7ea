"""Two agents share one Matrix account: a message in a thread that names one of them is
answered by that one only, in that thread; a DM is answered without a mention."""

from __future__ import annotations

from tests.channels.matrix.rig import matrix_team
from tests.fakes.matrix import ALICE, BOT, FakeMatrix, pill
from threadline.backends.sql import SqlConversationStore


async def test_the_agent_named_answers_in_the_thread(sqlite_url: str) -> None:
    async with FakeMatrix() as fake:
        room = fake.add_room("Shop", members=[ALICE, "@carol:fake.test"])
        root = fake.message(room, ALICE, "orders thread")
        async with matrix_team(fake, sqlite_url, agents=("support", "billing")) as (_, channel):
            position = fake.position
            question = fake.message(room, ALICE, "@billing was I charged twice?",
                                    thread=root["event_id"])
            [reply] = await fake.wait_for_sent(1)
            await fake.wait_for_sync_past(fake.position)
        assert reply.room_id == room
        relation = reply.content["m.relates_to"]
        assert relation["rel_type"] == "m.thread" and relation["event_id"] == root["event_id"]
        assert relation["m.in_reply_to"] == {"event_id": question["event_id"]}
        assert reply.content["m.mentions"] == {}  # a reply notifies nobody
        assert len(fake.messages_sent()) == 1
        assert position >= 1  # the root, said before the bot started, was not answered
    async with SqlConversationStore(sqlite_url) as store:
        turns = await store.get(f"matrix:{room}:{root['event_id']}")
    assert [(t.participant.kind, t.participant.id) for t in turns] == [
        ("user", ALICE), ("agent", "billing")]
    assert turns[0].participant.display_name == "Alice"
    assert turns[0].scope == "thread" and turns[0].id == f"matrix:{room}:{question['event_id']}"
    assert turns[0].metadata.channel_name == "Shop"
    assert channel.link_to(turns[0]) == (
        f"https://matrix.to/#/{room}/{question['event_id']}?via=fake.test")


async def test_a_pill_of_the_bot_and_a_dm_reach_it(sqlite_url: str) -> None:
    async with FakeMatrix() as fake:
        room = fake.add_room("Shop", members=[ALICE, "@carol:fake.test"])
        dm = fake.add_room("Alice", members=[ALICE])
        async with matrix_team(fake, sqlite_url):
            fake.message(room, ALICE, "nobody is asked here")
            fake.message(room, ALICE, "Support: hi", mentions=[BOT],
                         formatted=f"{pill(BOT, 'Support')}: hi")
            fake.message(dm, ALICE, "hello in private")
            sent = await fake.wait_for_sent(2)
            await fake.wait_for_sync_past(fake.position)
        assert sorted(s.room_id for s in sent) == sorted([room, dm])
        assert len(fake.messages_sent()) == 2
        in_room = next(s for s in sent if s.room_id == room)
        assert "m.in_reply_to" in in_room.content["m.relates_to"]
        in_dm = next(s for s in sent if s.room_id == dm)
        assert "m.relates_to" not in in_dm.content  # a DM is answered plainly


async def test_a_reply_to_an_agents_message_reaches_that_agent(sqlite_url: str) -> None:
    async with FakeMatrix() as fake:
        room = fake.add_room("Shop", members=[ALICE, "@carol:fake.test"])
        async with matrix_team(fake, sqlite_url, agents=("support", "billing")):
            fake.message(room, ALICE, "@billing was I charged twice?")
            [answer] = await fake.wait_for_sent(1)
            fake.message(room, ALICE, "thanks, and the refund?", reply_to=answer.event_id)
            await fake.wait_for_sent(2)
            await fake.wait_for_sync_past(fake.position)
    async with SqlConversationStore(sqlite_url) as store:
        turns = await store.get(f"matrix:{room}")
    assert [m.participant.id for m in turns] == [ALICE, "billing", ALICE, "billing"]
    assert turns[2].metadata.reply_to_message_id == answer.event_id
