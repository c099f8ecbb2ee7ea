"""Person memory finds a person's own words where the asking conversation may see them, only.

One store (in memory, SQLite file, PostgreSQL) holds Ann's and Bob's turns in two Slack
workspaces, Slack DMs and a Telegram DM. What Ann's memory returns is checked from a group, from
a DM, across workspaces, for another person, with linked and unlinked identities, and against
queries written to break out of the search (FTS5 and tsquery syntax, column filters, SQL).
"""

from __future__ import annotations

import pytest

from tests.history.helpers import T0, turn
from threadline.agents.search_tool import make_conversation_search_tool
from threadline.backends.parts import people_for
from threadline.history.assembler import AssemblerOptions, assemble_prompt
from threadline.history.model import Participant, StoredMessage
from threadline.history.person_memory import PersonMemory
from threadline.history.store import ConversationStore
from threadline.people import person_memory_for
from threadline.people.erase import forget_person, forget_speaker

ANN = Participant(kind="user", id="UANN", display_name="Ann")
BOB = Participant(kind="user", id="UBOB", display_name="Bob")
ANN_TELEGRAM = Participant(kind="user", id="700", display_name="Ann")

ADVERSARIAL = [
    'locker" OR speaker : * OR "',
    "conv_key : * OR locker",
    "speaker:* locker",
    "locker') OR 1=1 --",
    "NEAR(locker code) * ^locker",
    "locker | !code & passport:*",
    "{speaker content} : locker",
]


def said(content: str, conversation_id: str, who: Participant, *, scope: str = "channel",
         minute: int = 0, channel_name: str | None = None) -> StoredMessage:
    return turn(content, conversation_id=conversation_id, who=who, minute=minute,
                scope=scope, metadata={"channel_name": channel_name})


async def _history(store: ConversationStore) -> None:
    await store.append_many([
        said("my locker code is 5531", "slack:T1:C1:1700.1", ANN, scope="thread",
             channel_name="support"),
        said("my passport number is XK-77120", "slack:T1:D1", ANN, scope="dm", minute=1),
        said("my locker code is 9999", "slack:T1:C2", BOB, minute=2, channel_name="general"),
        said("locker code at the other company is 1234", "slack:T2:C9", ANN, minute=3),
        said("Bob's passport number is BB-33", "slack:T1:C2", BOB, minute=4),
        said("my shoe size is 44", "telegram:700", ANN_TELEGRAM, scope="dm", minute=5),
    ])


async def _memory(store: ConversationStore, asking: StoredMessage) -> PersonMemory:
    memory = await person_memory_for(store, asking)
    assert memory is not None
    return memory


async def _found(memory: PersonMemory, query: str) -> list[str]:
    return [m.content for m in await memory.search(query)]


async def test_a_group_finds_the_persons_own_group_words_in_its_workspace_only(
        store: ConversationStore) -> None:
    await _history(store)
    asking = said("what is my locker code? and my passport?", "slack:T1:C3", ANN, minute=9)
    memory = await _memory(store, asking)
    assert await _found(memory, asking.content) == ["my locker code is 5531"]
    # The DM, the other workspace and Bob's words stay out, however the question is put.
    for query in ["passport number", "XK-77120", "9999", "1234 other company", "BB-33",
                  "shoe size", *ADVERSARIAL]:
        assert set(await _found(memory, query)) <= {"my locker code is 5531"}, query


async def test_a_dm_finds_the_persons_own_words_and_never_anothers(
        store: ConversationStore) -> None:
    await _history(store)
    asking = said("what was my locker code?", "slack:T1:D9", ANN, scope="dm", minute=9)
    memory = await _memory(store, asking)
    found = await _found(memory, "locker code")
    assert "my locker code is 5531" in found
    assert "my locker code is 9999" not in found
    assert await _found(memory, "passport number") == ["my passport number is XK-77120"]
    for query in ADVERSARIAL:
        assert not {"my locker code is 9999", "Bob's passport number is BB-33"} & set(
            await _found(memory, query)), query


async def test_another_person_asking_the_same_gets_only_their_own(
        store: ConversationStore) -> None:
    await _history(store)
    asking = said("what is my locker code?", "slack:T1:C3", BOB, minute=9)
    memory = await _memory(store, asking)
    assert await _found(memory, "locker code") == ["my locker code is 9999"]


async def test_linked_identities_share_memory_and_unlinked_do_not(
        store: ConversationStore) -> None:
    await _history(store)
    asking = said("which shoe size did I say?", "slack:T1:D9", ANN, scope="dm", minute=9)
    assert await _found(await _memory(store, asking), "shoe size") == []

    people = people_for(store)
    await people.link(["telegram:700", "slack:T1:UANN"], linked_by="code")
    assert await _found(await _memory(store, asking), "shoe size") == ["my shoe size is 44"]

    # From Telegram, Ann's Slack words (DM and group) are hers too; Bob's are not.
    from_telegram = said("my passport and locker?", "telegram:700", ANN_TELEGRAM, scope="dm",
                         minute=10)
    found = await _found(await _memory(store, from_telegram), "passport locker code")
    assert "my passport number is XK-77120" in found
    assert "my locker code is 5531" in found
    assert not {"my locker code is 9999", "Bob's passport number is BB-33"} & set(found)


async def test_the_search_tool_shows_the_person_and_refuses_to_be_pointed_elsewhere(
        store: ConversationStore) -> None:
    await _history(store)
    asking = said("what is my locker code?", "slack:T1:C3", ANN, minute=9)
    await store.append(asking)
    tool = make_conversation_search_tool(store, asking.conversation_id, exclude_ids={asking.id},
                                         person=await _memory(store, asking))
    shown = await tool.run({"query": "locker code"})
    assert "my locker code is 5531" in shown
    assert "slack #support (thread)" in shown
    assert f"{T0:%Y-%m-%d}" in shown
    assert "9999" not in shown and "1234" not in shown
    refused = await tool.run({"query": "locker code", "person": "UBOB"})
    assert refused.startswith("error: unknown key 'person'")


@pytest.mark.parametrize("query", ADVERSARIAL)
async def test_query_syntax_never_errors(store: ConversationStore, query: str) -> None:
    await _history(store)
    asking = said("hi", "slack:T1:C3", ANN, minute=9)
    memory = await _memory(store, asking)
    assert set(await _found(memory, query)) <= {"my locker code is 5531"}


async def test_forget_empties_the_persons_memory_on_every_store(
        store: ConversationStore) -> None:
    await _history(store)
    await people_for(store).link(["slack:T1:UANN", "telegram:700"], linked_by="operator")
    counts = await forget_person(store, "telegram:700")
    assert counts["turns"] == 3  # both linked identities; slack:T2:UANN is another account
    assert [m.content for m in await store.get("slack:T2:C9")] == [
        "locker code at the other company is 1234"]
    asking = said("my locker code and passport?", "slack:T1:D9", ANN, scope="dm", minute=9)
    assert await _found(await _memory(store, asking), "locker passport shoe size") == []
    assert await people_for(store).person_of("slack:T1:UANN") is None
    bob = said("my locker code?", "slack:T1:C3", BOB, minute=9)
    assert await _found(await _memory(store, bob), "locker code") == ["my locker code is 9999"]


async def test_a_group_prompt_holds_the_persons_group_words_and_no_dm(
        store: ConversationStore) -> None:
    await _history(store)
    asking = said("@support what is my locker code and my passport number?", "slack:T1:C3",
                  ANN, minute=9)
    await store.append(asking)
    prompt = await assemble_prompt(store, asking.conversation_id, "support", "support",
                                   AssemblerOptions(person_memory=True), answering=asking,
                                   person=await _memory(store, asking))
    shown = "\n".join(m.content for m in prompt.messages)
    assert "my locker code is 5531" in shown and "Ann said earlier" in shown
    for private in ("XK-77120", "9999", "1234", "BB-33", "shoe size"):
        assert private not in shown, private
    assert len(prompt.elsewhere_ids) == 1
    off = await assemble_prompt(store, asking.conversation_id, "support", "support",
                                AssemblerOptions(person_memory=False), answering=asking,
                                person=await _memory(store, asking))
    assert "5531" not in "\n".join(m.content for m in off.messages)


async def test_forget_me_forgets_whoever_asked(store: ConversationStore) -> None:
    await _history(store)
    asking = said("/forget-me", "telegram:700", ANN_TELEGRAM, scope="dm", minute=9)
    assert (await forget_speaker(store, asking))["turns"] == 1
    assert await store.get("telegram:700") == []
    assert len(await store.get("slack:T1:D1")) == 1  # slack:T1:UANN was never linked
