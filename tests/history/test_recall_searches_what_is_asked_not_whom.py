"""Recall searches with what a turn asks, not with the agent it is addressed to.

"@support when is the meetup?" names the bot at its start; searching with that word found every
turn about a support group, and those windows took the room of the answer."""

from __future__ import annotations

from tests.history.transcripts import ANN, BOB, CAROL, SUPPORT, Transcript
from threadline.history.assembler import AssemblerOptions, assemble_prompt
from threadline.history.recall import find_recall
from threadline.history.store import ConversationStore


async def chat_about_a_support_group(store: ConversationStore) -> Transcript:
    t = Transcript()
    t.say(CAROL, "The meetup moved to Thursday evening at the library downtown")
    for i in range(120):
        if i % 10 == 0:
            t.say(ANN, f"support group {i} was lovely")
        else:
            t.say(BOB if i % 2 else ANN, f"small talk {i} about the weather and lunch plans")
    t.say(SUPPORT, "Hello Carol, how can I help?")
    t.say(CAROL, "@support when is the meetup?", mentions=("support",))
    await t.store_in(store)
    return t


async def test_the_address_finds_nothing_and_the_question_finds_the_answer(
    store: ConversationStore,
) -> None:
    t = await chat_about_a_support_group(store)
    asked = t.turns[-1]
    windows = await find_recall(store, t.conversation_id, asked.content, room=3000, min_hits=5,
                                exclude_ids={asked.id}, through_sequence=asked.sequence,
                                by_meaning=False)
    hits = {h for w in windows for h in w.hit_ids}
    assert hits == {t.turns[0].id}
    prompt = await assemble_prompt(store, t.conversation_id, "support", "Support",
                                   AssemblerOptions(max_turns_to_load=20))
    assert t.turns[0].id in prompt.recall_hit_ids
    assert not {m.id for m in t.turns if "support group" in m.content} & set(
        prompt.recall_hit_ids)


async def test_a_turn_that_is_only_an_address_recalls_nothing(store: ConversationStore) -> None:
    t = await chat_about_a_support_group(store)
    t.say(ANN, "<@U9> @support", mentions=("support",))
    await store.append(t.turns[-1])
    asked = t.turns[-1]
    assert await find_recall(store, t.conversation_id, asked.content, room=3000, min_hits=5,
                             exclude_ids={asked.id}, through_sequence=asked.sequence) == []
