"""The prompt is for one turn: what came after it is not in it, and it is there even unstored."""

from __future__ import annotations

from datetime import timedelta

from tests.history.helpers import T0
from tests.history.transcripts import ANN, BILLING, BOB, SUPPORT, Transcript
from threadline.history import InMemoryConversationStore, StoredMessage
from threadline.history.assembler import CONTEXT_HEADER, AssemblerOptions, assemble_prompt
from threadline.history.store import ConversationStore


async def test_turns_stored_after_the_answered_one_are_left_out(
    store: ConversationStore,
) -> None:
    t = Transcript()
    t.say(ANN, "@support my order 4412 never arrived", mentions=("support",))
    t.say(SUPPORT, "Sorry! I am checking order 4412.")
    asked = t.say(ANN, "@support any news on order 4412?", mentions=("support",))
    t.say(BILLING, "@support order 4412 was refunded", mentions=("support",))  # stored meanwhile
    await t.store_in(store)
    [stored_asked] = await store.get_by_ids(t.conversation_id, [asked.id])
    for answering in (asked, stored_asked):  # as the channel made it, and as stored
        prompt = await assemble_prompt(store, t.conversation_id, "support", "Support",
                                       answering=answering)
        assert prompt.included_ids[-1] == asked.id
        assert t.turns[3].id not in prompt.shown_ids
        assert prompt.messages[-1].content == "Ann: @support any news on order 4412?"
        assert all("refunded" not in m.content for m in prompt.messages)


async def test_an_answered_turn_not_yet_stored_is_still_the_newest() -> None:
    store = InMemoryConversationStore()
    t = Transcript()
    t.say(ANN, "@support my order is 7781", mentions=("support",))
    t.say(SUPPORT, "Thanks, noted.")
    await t.store_in(store)
    waiting = t.say(ANN, "@support where is order 7781?", mentions=("support",))  # in an outbox
    prompt = await assemble_prompt(store, t.conversation_id, "support", "Support",
                                   answering=waiting)
    assert prompt.included_ids == [t.turns[0].id, t.turns[1].id, waiting.id]
    assert prompt.messages[-1].content == "Ann: @support where is order 7781?"
    assert any("not in the store yet" in note for note in prompt.notes)
    assert waiting.id not in prompt.recalled_ids


def said(who_text: tuple[object, str], minute: float, mentions: tuple[str, ...] = ()
         ) -> StoredMessage:
    who, text = who_text
    return StoredMessage(conversation_id="c", participant=who, content=text,  # type: ignore[arg-type]
                         timestamp=T0 + timedelta(minutes=minute),
                         metadata={"mentions": list(mentions)})


async def test_immediate_context_reaches_an_agent_addressed_right_after(
    store: ConversationStore,
) -> None:
    await store.append_many([
        said((BOB, "anyone up for lunch?"), 0),
        said((ANN, "@billing my order 7781 never arrived"), 30, ("billing",)),
        said((BILLING, "I only handle invoices, sorry."), 31),
        said((ANN, "@support can I get a refund for it?"), 32, ("support",)),
    ])
    prompt = await assemble_prompt(store, "c", "support", "Support",
                                   AssemblerOptions(recall=False))
    context = [m for m in prompt.messages if m.content.startswith(CONTEXT_HEADER)]
    assert len(context) == 1 and prompt.messages[-2] == context[0]
    assert context[0].content.splitlines()[1:] == [
        "Ann: @billing my order 7781 never arrived",
        "Billing (agent): I only handle invoices, sorry."]
    assert "lunch" not in "".join(m.content for m in prompt.messages)  # half an hour earlier
    assert len(prompt.context_ids) == 2
    off = await assemble_prompt(store, "c", "support", "Support",
                                AssemblerOptions(recall=False, immediate_turns=0))
    assert all("7781" not in m.content for m in off.messages)
