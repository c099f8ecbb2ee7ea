"""The knowledge block's size follows how clear the answer's page is: when the first sections
found are all of one page, the block takes half its room (that page's best sections come
first, and the search tool finds the rest); when they spread over pages, all of it. On a real
store (memory, SQLite file, PostgreSQL) with the real embedding model, and end to end through
an agent talking to a fake Messages API."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text
from tests.knowledge.helpers import knowledge_tooling, search, support_library, talk
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.parts import records_for
from threadline.history.store import ConversationStore
from threadline.history.tokens import default_counter
from threadline.inspector import ReplyRecorder
from threadline.knowledge.grounding import CANDIDATES, block_room, fit_sections
from threadline.team import Team

fake = fake_anthropic_fixture()

_CHAPTERS = ("Applying", "Photos", "Fees", "Renewing", "Lost passports", "Travel dates")
PAGES = {
    "passports.md": "# Passports\n\n" + "".join(
        f"## {chapter}\n" + 3 * (
            f"Passport {chapter.lower()}: the passport office handles passport "
            f"{chapter.lower()} within three weeks, and a passport holder may ask the passport "
            f"office about passport {chapter.lower()} by phone or at a passport counter. ")
        + "\n\n" for chapter in _CHAPTERS),
    "kettles.md": "# Kettles\n\n## Warranty\nA kettle has a two year warranty; keep the "
                  "receipt and the box.\n",
    "bikes.md": "# Bikes\n\n## Warranty\nA bike frame has a five year warranty; brakes and "
                "tyres are not covered.\n",
    "phones.md": "# Phones\n\n## Warranty\nA phone has a one year warranty; a cracked "
                 "screen is not covered.\n",
    "sofas.md": "# Sofas\n\n## Warranty\nA sofa has a ten year warranty on its frame and "
                "one year on its fabric.\n",
}
ROOM = 1000  # a third of the default 3,000-token budget, as knowledge_tooling holds back


async def test_one_pages_sections_first_take_half_the_room(
        store: ConversationStore, tmp_path: Path) -> None:
    library = await support_library(store, tmp_path / "help", PAGES)
    found = await search(library, "support", "how does the passport office handle a passport?",
                         limit=CANDIDATES)
    assert {s.document for s in found[:4]} == {"passports.md"}
    assert block_room(found, ROOM) == ROOM // 2
    block = fit_sections(found, room=block_room(found, ROOM), counter=default_counter())
    assert 0 < block.tokens <= ROOM // 2
    everything = fit_sections(found, room=ROOM, counter=default_counter())
    assert len(block.sections) < len(everything.sections)


async def test_sections_of_several_pages_take_all_of_it(
        store: ConversationStore, tmp_path: Path) -> None:
    library = await support_library(store, tmp_path / "help", PAGES)
    found = await search(library, "support", "what does the warranty cover?",
                         limit=CANDIDATES)
    assert len({s.document for s in found[:4]}) > 1
    assert block_room(found, ROOM) == ROOM


async def test_an_agent_is_shown_the_smaller_block(
        fake: FakeAnthropic, store: ConversationStore, tmp_path: Path) -> None:
    library = await support_library(store, tmp_path / "help", PAGES)
    question = "how does the passport office handle a passport?"
    found = await search(library, "support", question, limit=CANDIDATES)
    everything = fit_sections(found, room=ROOM, counter=default_counter())
    fake.script(text("Within three weeks (Passports > Applying)."))
    recorder = ReplyRecorder(records_for(store))
    team = Team([Agent(name="support", model="claude-test", conversation_history=store,
                       provider=AnthropicProvider(fake.client()), observer=recorder,
                       tooling=knowledge_tooling(library))])
    await talk(team, [("ada", f"@support {question}")], recorder=recorder)
    records = records_for(store)
    assert records is not None
    [listed] = await records.recent()
    record = await records.get(listed.id)
    assert record is not None and record.detail is not None
    shown = [s["id"] for s in record.detail["prompt"]["grounded"]]
    assert 0 < len(shown) < len(everything.sections)
