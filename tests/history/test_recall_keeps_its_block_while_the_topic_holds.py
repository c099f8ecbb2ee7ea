"""An agent's recall block stands byte for byte while the turn it was made for is in the prompt;
a new subject's hits come beside it, in the fresh block with the newest turn."""

from __future__ import annotations

import json

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture
from tests.history.transcripts import ANN, BOB, CAROL, SUPPORT, Transcript
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.agents.llm import ModelRequest
from threadline.history.assembler import AssemblerOptions, assemble_prompt
from threadline.history.kept_recall import KeptRecall
from threadline.history.prompt import AssembledPrompt, PromptMessage
from threadline.history.recall import RECALL_HEADER
from threadline.history.store import ConversationStore

fake = fake_anthropic_fixture()
OPTIONS = AssemblerOptions(max_turns_to_load=30)


def channel() -> Transcript:
    t = Transcript()
    t.say(CAROL, "FYI my cat Miso hates the vet and sleeps on the radiator")
    for i in range(120):
        if i == 60:
            t.say(ANN, "My red bicycle got a flat tyre by the station last week")
        t.say(BOB if i % 2 else ANN, f"small talk {i} about the weather and lunch plans")
    t.say(CAROL, "@support good morning!", mentions=("support",))
    t.say(SUPPORT, "Good morning, Carol!")
    return t


async def ask(t: Transcript, store: ConversationStore, kept: KeptRecall, text: str
              ) -> AssembledPrompt:
    t.say(CAROL, f"@support {text}", mentions=("support",))
    await store.append(t.turns[-1])
    prompt = await assemble_prompt(store, t.conversation_id, "support", "Support", OPTIONS,
                                   kept_recall=kept)
    t.say(SUPPORT, f"Noted: {text}")
    await store.append(t.turns[-1])
    return prompt


def kept_block(prompt: AssembledPrompt) -> tuple[int, PromptMessage]:
    [(at, block)] = [(n, m) for n, m in enumerate(prompt.messages) if m.cache_point]
    assert block.content.startswith(RECALL_HEADER)
    return at, block


async def test_the_block_stands_before_its_turn_and_a_new_subject_comes_beside_it(
        store: ConversationStore) -> None:
    t = channel()
    await t.store_in(store)
    kept = KeptRecall()

    first = await ask(t, store, kept, "what is my cat called?")
    at, block = kept_block(first)
    assert "Miso" in block.content
    assert first.messages[-1].content.endswith("what is my cat called?")

    second = await ask(t, store, kept, "does my cat still hate the vet?")
    again_at, again = kept_block(second)
    assert again == block  # byte for byte
    # It stands where it stood, just before the turn it was made for, so the prompt before it
    # (and it) is what the first turn's was.
    assert second.messages[:again_at + 1] == first.messages[:at + 1]
    assert second.messages[again_at + 1].content.endswith("what is my cat called?")

    # The talk moves on: the kept block still stands (replacing it would rewrite every
    # cached byte after it); what the new subject needs is in the fresh block.
    third = await ask(t, store, kept, "where did my red bicycle get a flat tyre?")
    third_at, still = kept_block(third)
    assert still == block and third.messages[:third_at + 1] == first.messages[:at + 1]
    [fresh] = [m for m in third.messages[third_at + 1:] if RECALL_HEADER in m.content]
    assert "bicycle" in fresh.content and "Miso" not in fresh.content


async def test_a_kept_block_never_shows_a_turn_as_it_was_before_an_edit(
        store: ConversationStore) -> None:
    t = channel()
    await t.store_in(store)
    kept = KeptRecall()
    first = await ask(t, store, kept, "what is my cat called?")
    assert "Miso" in kept_block(first)[1].content

    await store.edit_message(t.conversation_id, t.turns[0].id,
                             "FYI my cat Mochi hates the vet and sleeps on the radiator")
    second = await ask(t, store, kept, "does my cat still hate the vet?")
    text = "".join(m.content for m in second.messages)
    assert "Mochi" in text and "Miso" not in text


async def test_the_next_turn_reads_the_kept_block_from_the_cache(
        fake: FakeAnthropic, store: ConversationStore) -> None:
    t = channel()
    await t.store_in(store)
    kept = KeptRecall()
    provider = AnthropicProvider(fake.client())
    persona = "You are Support, who remembers what people say. " * 30
    replies = []
    for question in ("what is my cat called?", "does my cat still hate the vet?"):
        prompt = await ask(t, store, kept, question)
        replies.append(await provider.complete(ModelRequest(
            model="claude-test", system=persona, messages=prompt.messages)))

    body = fake.bodies[1]
    blocks = [b for m in body["messages"] for b in m["content"]]
    [kept_at] = [n for n, b in enumerate(blocks)
                 if "cache_control" in b and b["text"].startswith(RECALL_HEADER)]
    # Everything up to and through the kept block was sent the turn before: read back.
    through = sum(len(json.dumps(b, sort_keys=True)) // 4 for b in blocks[:kept_at + 1])
    assert replies[1].usage.cache_read_input_tokens >= through
