"""Recall finds the turn that answers a question sharing no word with it, by meaning.

The answer is said once, long before the question, among a few hundred everyday turns; the
turns are appended to a real store (memory, SQLite file, PostgreSQL) and given their vectors
by the real model through the background indexer's fill, as `threadline history reindex`
does. With meaning on, the assembled prompt's recall block holds the answer; by words alone
it cannot (no word in common), and the lexical path answers what it answered before: a
question sharing words is recalled either way, and the conversation_search tool too.
"""

from __future__ import annotations

from tests.history.embedding import index_everything
from tests.history.transcripts import ANN, BOB, CAROL, SUPPORT, Transcript
from threadline.agents.search_tool import make_conversation_search_tool
from threadline.history.assembler import AssembledPrompt, AssemblerOptions, assemble_prompt
from threadline.history.recall import RECALL_HEADER
from threadline.history.store import ConversationStore

ANSWER = "I train the under-12 football team on Saturdays"
QUESTION = "@support Which sport does she coach?"
EVERYDAY = (
    "the printer on the third floor is jammed again",
    "did anyone order lunch for the workshop?",
    "I moved the budget review to Thursday afternoon",
    "my train was late because of the snow",
    "the new coffee machine makes terrible espresso",
    "can someone water the plants while I am away?",
    "the quarterly report draft is in the shared folder",
    "we are out of blue markers in room 4",
    "her cat knocked the laptop off the desk this morning",
    "I booked the dentist for next Tuesday",
)


async def channel_with_an_answer_long_ago(store: ConversationStore, question: str) -> Transcript:
    t = Transcript()
    t.say(CAROL, ANSWER)
    for i in range(240):
        t.say(BOB if i % 2 else ANN, EVERYDAY[i % len(EVERYDAY)])
    t.say(SUPPORT, "Hello, how can I help?")
    t.say(ANN, question, mentions=("support",))
    await t.store_in(store)
    return t


async def prompt(store: ConversationStore, t: Transcript, *, by_meaning: bool) -> AssembledPrompt:
    return await assemble_prompt(store, t.conversation_id, "support", "Support",
                                 AssemblerOptions(max_turns_to_load=50,
                                                  recall_by_meaning=by_meaning))


def recall_text(assembled: AssembledPrompt) -> str:
    return next((m.content for m in assembled.messages if m.content.startswith(RECALL_HEADER)),
                "")


async def test_an_answer_sharing_no_word_is_recalled_by_meaning(
        store: ConversationStore) -> None:
    t = await channel_with_an_answer_long_ago(store, QUESTION)
    progress = await index_everything(store)
    assert progress.done == progress.total == len(t.turns)
    answer = t.turns[0]

    by_meaning = await prompt(store, t, by_meaning=True)
    assert answer.id in by_meaning.recall_hit_ids
    assert f"Carol: {ANSWER}" in recall_text(by_meaning)
    assert by_meaning.token_count <= AssemblerOptions().token_budget
    again = await prompt(store, t, by_meaning=True)  # byte for byte, for prompt caching
    assert again.messages == by_meaning.messages

    by_words = await prompt(store, t, by_meaning=False)
    assert answer.id not in by_words.recalled_ids
    assert ANSWER not in recall_text(by_words)


async def test_the_search_tool_finds_it_by_meaning_too(store: ConversationStore) -> None:
    t = await channel_with_an_answer_long_ago(store, QUESTION)
    await index_everything(store)
    asked = t.turns[-1]
    for by_meaning in (True, False):
        tool = make_conversation_search_tool(store, t.conversation_id, exclude_ids=(asked.id,),
                                             by_meaning=by_meaning)
        found = await tool.search("Which sport does she coach?", 5)
        assert (t.turns[0].id in {h for w in found for h in w.hit_ids}) is by_meaning


async def test_a_question_sharing_words_is_recalled_with_or_without_meaning(
        store: ConversationStore) -> None:
    t = await channel_with_an_answer_long_ago(
        store, "@support who trains the under-12 football team?")
    await index_everything(store)
    for by_meaning in (True, False):
        assembled = await prompt(store, t, by_meaning=by_meaning)
        assert t.turns[0].id in assembled.recall_hit_ids
        assert f"Carol: {ANSWER}" in recall_text(assembled)


async def test_a_turn_without_its_vector_yet_is_still_found_by_its_words(
        store: ConversationStore) -> None:
    t = await channel_with_an_answer_long_ago(
        store, "@support who trains the under-12 football team?")  # nothing indexed yet
    assembled = await prompt(store, t, by_meaning=True)
    assert t.turns[0].id in assembled.recall_hit_ids
