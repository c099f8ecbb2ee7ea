"""Every backend (memory, SQLite, PostgreSQL) keeps one vote per person and reply: a second
vote replaces the first, votes are counted per agent and day, exported and forgotten by
voter."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta

from tests.feedback.voting import book_of
from threadline.feedback.votes import Vote
from threadline.history.store import ConversationStore
from threadline.people.erase import export_person, forget_person

NOON = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def vote(voter: str, value: str, *, reply: str = "c1:t1>support", agent: str = "support",
         at: datetime = NOON, reason: str | None = None) -> Vote:
    return Vote(reply_id=reply, conversation_id="c1", agent=agent, voter=voter,
                vote=value, voted_at=at, reason=reason)  # type: ignore[arg-type]


async def test_a_second_vote_replaces_the_first(store: ConversationStore) -> None:
    book = book_of(store)
    assert await book.cast(vote("slack:T1:U1", "down", reason="wrong order")) is None
    assert await book.cast(vote("slack:T1:U2", "down")) is None
    assert await book.cast(vote("slack:T1:U1", "up", at=NOON + timedelta(minutes=1))) == "down"

    on_reply = await book.on_reply("c1:t1>support")
    assert [(v.voter, v.vote, v.reason) for v in on_reply] == [
        ("slack:T1:U2", "down", None), ("slack:T1:U1", "up", None)]
    assert [v.voter for v in await book.recent(vote="down")] == ["slack:T1:U2"]
    assert [v.voter for v in await book.recent(agent="billing")] == []


async def test_the_same_vote_again_keeps_its_reason_and_another_drops_it(
        store: ConversationStore) -> None:
    book = book_of(store)
    await book.cast(vote("telegram:7", "down", reason="it never said where"))
    assert await book.cast(vote("telegram:7", "down")) == "down"  # pressed again
    [kept] = await book.on_reply("c1:t1>support")
    assert kept.reason == "it never said where"
    await book.cast(vote("telegram:7", "up"))  # changed their mind: the reason was for down
    [changed] = await book.on_reply("c1:t1>support")
    assert (changed.vote, changed.reason) == ("up", None)


async def test_votes_are_counted_per_agent_and_day(store: ConversationStore) -> None:
    book = book_of(store)
    await book.cast(vote("telegram:1", "up"))
    await book.cast(vote("telegram:2", "down"))
    await book.cast(vote("telegram:1", "up", reply="c1:t2>support", at=NOON + timedelta(days=1)))
    await book.cast(vote("telegram:1", "down", reply="c1:t3>billing", agent="billing"))
    await book.cast(vote("telegram:3", "up", reply="c1:t4>support", at=NOON - timedelta(days=9)))

    daily = await book.daily(since=NOON - timedelta(days=1))
    assert [(d.agent, d.day, d.up, d.down) for d in daily] == [
        ("billing", "2026-11-20", 0, 1), ("support", "2026-11-20", 1, 1),
        ("support", "2026-11-21", 1, 0)]
    assert daily[1].satisfaction == 0.5


async def test_a_persons_votes_are_exported_and_forgotten(store: ConversationStore) -> None:
    book = book_of(store)
    await book.cast(vote("discord:42", "down", reason="it ignored my question"))
    await book.cast(vote("discord:43", "up"))

    exported = io.StringIO()
    counts = await export_person(store, "discord:42", exported)
    lines = [json.loads(line) for line in exported.getvalue().splitlines()]
    [kept] = [line for line in lines if line["kind"] == "feedback"]
    assert counts["feedback"] == 1
    assert (kept["voter"], kept["vote"], kept["reason"]) == (
        "discord:42", "down", "it ignored my question")

    assert (await forget_person(store, "discord:42"))["feedback"] == 1
    assert [v.voter for v in await book.recent()] == ["discord:43"]
