"""The turn inbox and reply ledger behave the same on every store (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

from typing import Any

from tests.history.helpers import turn
from threadline.history.inbox import DeliveryState, TurnInbox, TurnState
from threadline.history.store import ConversationStore


def inbox_of(store: ConversationStore) -> TurnInbox:
    inbox: Any = store.inbox  # type: ignore[attr-defined]
    assert isinstance(inbox, TurnInbox)
    return inbox


async def taken_id(inbox: TurnInbox, conversation_id: str) -> str | None:
    """The id of the turn `take_next` takes (None: none open)."""
    taken = await inbox.take_next(conversation_id)
    return taken.turn_id if taken is not None else None


async def test_a_turn_is_received_once_and_waits_in_arrival_order(
        store: ConversationStore) -> None:
    inbox = inbox_of(store)
    first, second, elsewhere = (turn("one", id="t1"), turn("two", id="t2"),
                                turn("other", id="t3", conversation_id="c2"))
    assert await inbox.receive(first, channel="slack")
    assert await inbox.receive(second, channel="slack")
    assert await inbox.receive(elsewhere, channel=None)
    assert not await inbox.receive(first, channel="slack")  # a redelivery
    waiting = await inbox.open_turns("c1")
    assert [t.message for t in waiting] == [first, second]
    assert [(t.channel, t.state, t.attempts) for t in waiting] == [
        ("slack", TurnState.RECEIVED, 0)] * 2
    assert await inbox.conversations_waiting() == ["c1", "c2"]


async def test_states_and_attempts_are_kept(store: ConversationStore) -> None:
    inbox = inbox_of(store)
    message = turn("one", id="t1")
    await inbox.receive(message, channel="slack")
    taken = await inbox.take_next("c1")
    assert taken is not None and (taken.message, taken.attempts) == (message, 1)
    again = await inbox.take_next("c1")  # taken again after a crash: still the oldest open
    assert again is not None and (again.turn_id, again.attempts) == ("t1", 2)
    [open_turn] = await inbox.open_turns("c1")
    assert (open_turn.state, open_turn.attempts) == (TurnState.ANSWERING, 2)
    await inbox.finish("t1", TurnState.GIVEN_UP, error="boom")
    assert await inbox.open_turns("c1") == []
    assert await inbox.conversations_waiting() == []
    assert not await inbox.receive(message, channel="slack")  # given up is not new either


async def test_finishing_a_turn_says_whether_others_of_its_conversation_are_open(
        store: ConversationStore) -> None:
    inbox = inbox_of(store)
    for message in (turn("one", id="t1"), turn("two", id="t2"),
                    turn("other", id="t3", conversation_id="c2")):
        await inbox.receive(message, channel="slack")
    assert await taken_id(inbox, "c1") == "t1"
    assert await inbox.finish("t1", TurnState.ANSWERED)  # "two" waits
    assert await taken_id(inbox, "c1") == "t2"
    assert not await inbox.finish("t2", TurnState.ANSWERED)  # c2's turn is not c1's
    assert await inbox.finish("t2", TurnState.ANSWERED)  # not being answered: read again


async def test_a_turn_already_in_the_history_is_not_new(store: ConversationStore) -> None:
    if type(store).__name__ == "InMemoryConversationStore":
        return  # the in-memory inbox knows only what it received itself
    message = turn("stored before the inbox existed", id="t1")
    await store.append(message)
    assert not await inbox_of(store).receive(message, channel="slack")


async def test_a_reply_is_claimed_once_and_delivered_once(store: ConversationStore) -> None:
    inbox = inbox_of(store)
    reply = turn("the answer", id="t1>support")
    assert await inbox.delivery(reply.id) is None
    assert await inbox.start_delivery(reply) is None
    again = await inbox.start_delivery(reply)
    assert again is not None and again.state is DeliveryState.DELIVERING
    assert again.reply == reply
    await inbox.finish_delivery(reply.id, ["p1", "p2"])
    done = await inbox.delivery(reply.id)
    assert done is not None
    assert (done.state, done.platform_ids, done.reply) == (
        DeliveryState.DELIVERED, ("p1", "p2"), reply)


async def test_a_streamed_reply_is_claimed_with_its_first_words_and_kept_whole(
        store: ConversationStore) -> None:
    inbox = inbox_of(store)
    shown = turn("The order", id="t2>support")
    whole = turn("The order shipped on Monday.", id="t2>support")
    assert await inbox.start_delivery(shown) is None
    await inbox.update_delivery(whole)
    await inbox.finish_delivery(whole.id, ["p9"])
    await inbox.update_delivery(shown)  # a delivered reply is not changed any more
    done = await inbox.delivery(whole.id)
    assert done is not None
    assert (done.state, done.platform_ids, done.reply) == (
        DeliveryState.DELIVERED, ("p9",), whole)


async def test_an_edit_changes_an_open_turn_waiting_or_taken_and_not_a_finished_one(
        store: ConversationStore) -> None:
    inbox = inbox_of(store)
    await inbox.receive(turn("deploy at 5", id="t1"), channel="slack")
    await inbox.receive(turn("and the notes", id="t2"), channel="slack")
    await inbox.receive(turn("answered already", id="t3", conversation_id="c2"), channel="slack")
    assert await inbox.edit_open("t2", "and the release notes") is TurnState.RECEIVED
    assert await taken_id(inbox, "c1") == "t1"
    assert await inbox.edit_open("t1", "deploy at 6") is TurnState.ANSWERING
    assert await taken_id(inbox, "c2") == "t3"
    await inbox.finish("t3", TurnState.ANSWERED)
    assert await inbox.edit_open("t3", "too late: in the history") is None
    assert await inbox.edit_open("unknown", "never received") is None
    waiting = await inbox.open_turns("c1")
    assert [t.message.content for t in waiting] == ["deploy at 6", "and the release notes"]
    assert [t.message.id for t in waiting] == ["t1", "t2"]


async def test_a_taken_turn_is_read_back_as_edited_and_stays_taken(
        store: ConversationStore) -> None:
    inbox = inbox_of(store)
    await inbox.receive(turn("deploy at 5", id="t1"), channel="slack")
    assert await taken_id(inbox, "c1") == "t1"
    await inbox.edit_open("t1", "deploy at 6")
    current = await inbox.retake("t1")
    assert current is not None and (current.id, current.content) == ("t1", "deploy at 6")
    [taken] = await inbox.open_turns("c1")
    assert (taken.state, taken.attempts) == (TurnState.ANSWERING, 1)
    await inbox.finish("t1", TurnState.ANSWERED)
    assert await inbox.retake("t1") is None  # finished: the history holds it


async def test_a_deletion_cancels_an_open_turn_and_its_worker_reads_nothing_back(
        store: ConversationStore) -> None:
    inbox = inbox_of(store)
    await inbox.receive(turn("oops, a password", id="t1"), channel="slack")
    await inbox.receive(turn("answered already", id="t2", conversation_id="c2"), channel="slack")
    await inbox.receive(turn("another secret", id="t3"), channel="slack")
    assert await taken_id(inbox, "c2") == "t2"
    await inbox.finish("t2", TurnState.ANSWERED)
    assert await inbox.cancel_open("t1") is TurnState.RECEIVED
    assert await inbox.cancel_open("t1") is None  # a redelivered deletion
    assert await inbox.cancel_open("t2") is None
    assert await taken_id(inbox, "c1") == "t3"  # "t1" was cancelled: never taken
    assert await inbox.cancel_open("t3") is TurnState.ANSWERING
    assert await inbox.retake("t3") is None
    await inbox.finish("t3", TurnState.ANSWERED)  # the worker's end leaves it cancelled
    assert await inbox.take_next("c1") is None
    assert await inbox.open_turns("c1") == []
    assert await inbox.edit_open("t1", "a cancelled turn stays cancelled") is None
    assert not await inbox.receive(turn("oops, a password", id="t1"), channel="slack")


async def test_a_taken_or_finished_turn_can_wait_again_as_edited(
        store: ConversationStore) -> None:
    inbox = inbox_of(store)
    await inbox.receive(turn("deploy at 5", id="t1"), channel="slack")
    assert not await inbox.answer_again(turn("still waiting", id="t1"))
    assert await taken_id(inbox, "c1") == "t1"
    await inbox.finish("t1", TurnState.ANSWERED)
    assert await inbox.answer_again(turn("deploy at 6", id="t1"))
    [again] = await inbox.open_turns("c1")
    assert (again.message.content, again.channel, again.attempts) == ("deploy at 6", "slack", 0)
    assert not await inbox.answer_again(turn("never received", id="t9"))


async def test_a_turn_edited_again_while_answered_waits_once_its_attempt_ends(
        store: ConversationStore) -> None:
    inbox = inbox_of(store)
    await inbox.receive(turn("deploy at 5", id="t1"), channel="slack")
    assert await taken_id(inbox, "c1") == "t1"
    assert await inbox.answer_again(turn("deploy at 6", id="t1"))
    await inbox.finish("t1", TurnState.ANSWERED)  # the attempt that answered "deploy at 5"
    [again] = await inbox.open_turns("c1")
    assert (again.message.content, again.state, again.attempts) == (
        "deploy at 6", TurnState.RECEIVED, 0)
