"""Agents grounded in the team's documents, end to end: a real store (memory, SQLite file,
PostgreSQL), the real embedding model, the Anthropic SDK talking to a fake Messages API.

A question sharing no word with the section that answers it gets that section in its prompt,
numbered with its citation, and the reply record keeps it; a follow-up that only makes sense
with the turn before it finds its section; and agent A's sources never reach agent B, neither
in B's prompt nor through B's knowledge_search tool.
"""

from __future__ import annotations

import json
from pathlib import Path

from aiohttp import ClientSession
from aiohttp.test_utils import TestServer

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text, tool_use
from tests.history.embedding import index_everything
from tests.knowledge.helpers import (
    documents_source,
    knowledge_tooling,
    search,
    sent,
    synced,
    talk,
    write,
)
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.parts import records_for
from threadline.history.store import ConversationStore
from threadline.inspector import ReplyRecorder
from threadline.inspector.console import console_app
from threadline.inspector.redaction import Redactor
from threadline.knowledge.library import Library
from threadline.team import Team

fake = fake_anthropic_fixture()

HELP = {
    "cards.md": "# Cards\n\n## Lost bank cards\nIf your debit card goes missing, phone us at "
                "once and we block it within minutes.\n",
    "hours.md": "# Opening hours\n\n## Branches\nBranches open from nine to five on weekdays "
                "and close on public holidays.\n",
    "parking.md": "# Parking\n\n## Visitors\nVisitors park in the east car park, level two, "
                  "free for two hours.\n",
    "passwords.md": "# Online banking\n\n## Resetting a password\nChoose 'forgot password' on "
                    "the sign-in page and follow the emailed link.\n",
}
LEDGER = {"ledger.md": "# Ledger\n\n## Month end\nThe ledger code for month end is "
                       "MAGENTA-42; share it with the finance team only.\n"}


def agent(name: str, store: ConversationStore, library: Library, fake: FakeAnthropic,
          recorder: ReplyRecorder | None = None) -> Agent:
    return Agent(name=name, model="claude-test", conversation_history=store,
                 provider=AnthropicProvider(fake.client()), observer=recorder,
                 tooling=knowledge_tooling(library))


async def test_a_question_sharing_no_word_is_answered_from_its_section_and_cited(
        fake: FakeAnthropic, store: ConversationStore, tmp_path: Path) -> None:
    source = documents_source(store, write(tmp_path / "help", HELP))
    await synced(source)
    await index_everything(store)
    library = Library({"help": source}, agents={"support": ["help"]})
    question = "my wallet was stolen with my plastic inside, what now?"
    source.by_meaning = False
    assert not any(s.document == "cards.md" for s in await search(library, "support", question))
    source.by_meaning = True

    fake.script(text("Phone us at once and we block it (Cards > Lost bank cards)."))
    recorder = ReplyRecorder(records_for(store))
    team = Team([agent("support", store, library, fake, recorder)])
    await talk(team, [("ada", f"@support {question}")], room="bank", recorder=recorder)
    [body] = fake.bodies
    assert "# Cards\n[1] Lost bank cards\nIf your debit card goes missing" in sent(body)
    assert "knowledge_search" in {tool["name"] for tool in body["tools"]}
    records = records_for(store)
    assert records is not None
    [listed] = await records.recent()
    record = await records.get(listed.id)
    assert record is not None and record.detail is not None
    prompt = record.detail["prompt"]
    assert prompt["grounded"][0]["section"] == "Cards > Lost bank cards"
    assert prompt["grounded"][0]["cited_as"] == "[1] Cards > Lost bank cards"
    assert [p["part"] for p in prompt["parts"]].count("knowledge") == 1
    console = TestServer(console_app(records=records, store=store, redactor=Redactor(),
                                     prefix=""), host="127.0.0.1")
    async with console, ClientSession() as session, session.get(
            console.make_url(f"/records/{listed.id}")) as page:
        shown_in_console = await page.text()
    assert '<ol id="knowledge-shown"><li>Cards &gt; Lost bank cards' in shown_in_console


async def test_a_follow_up_finds_the_section_the_turn_before_points_at(
        fake: FakeAnthropic, store: ConversationStore, tmp_path: Path) -> None:
    source = documents_source(store, write(tmp_path / "help", {
        "passports.md": "# Passports\n\n## Adult passports\nAn adult passport is valid for ten "
                        "years and costs 80 pounds.\n\n## Child passports\nFor those under "
                        "sixteen it is valid for five years and costs 50 pounds.\n",
        "seats.md": "# Car seats\n\n## Child seats\nA child under twelve travels in a car seat "
                    "fitted to the back seat.\n",
        "museum.md": "# Museum tickets\n\n## Child tickets\nA child enters the museum free "
                     "on Sundays.\n",
    }))
    await synced(source)
    await index_everything(store)
    library = Library({"help": source}, agents={"support": ["help"]})
    fake.script(text("An adult passport is valid for ten years; renew it by post."),
                text("Five years."))
    team = Team([agent("support", store, library, fake)])
    await talk(team, [("ada", "@support how long is a passport valid for? I must renew my "
                              "passport"),
                      ("ada", "@support and for a child?")])
    shown = sent(fake.bodies[1])
    assert "# Passports\n" in shown and "] Child passports\nFor those under sixteen" in shown
    # The two best sections with the turns before it; the question alone finds others.
    with_context = await search(
        library, "support", "and for a child?",
        "how long is a passport valid for? I must renew my passport",
        "An adult passport is valid for ten years; renew it by post.", limit=2)
    assert "Passports > Child passports" in [s.path for s in with_context]
    alone = await search(library, "support", "and for a child?", limit=2)
    assert "Passports > Child passports" not in [s.path for s in alone]


async def test_one_agents_sources_never_reach_another_agent(
        fake: FakeAnthropic, store: ConversationStore, tmp_path: Path) -> None:
    help_source = documents_source(store, write(tmp_path / "help", HELP))
    ledger = documents_source(store, write(tmp_path / "ledger", LEDGER), name="ledger")
    await synced(help_source)
    await synced(ledger)
    library = Library({"help": help_source, "ledger": ledger},
                      agents={"support": ["help"], "finance": ["ledger"]})
    fake.script(tool_use("knowledge_search", {"query": "ledger code month end MAGENTA"}),
                text("I cannot find that."), text("It is MAGENTA-42."))
    team = Team([agent("support", store, library, fake), agent("finance", store, library, fake)])
    await talk(team, [("eve", "@support what is the ledger code for month end?"),
                      ("fin", "@finance what is the ledger code for month end?")], room="office")
    support_prompt, support_with_result, finance_prompt = fake.bodies
    assert "MAGENTA" not in json.dumps(support_prompt["messages"])
    assert "MAGENTA" not in json.dumps(support_with_result["messages"][-1])  # the tool result
    assert any(tool["name"] == "knowledge_search" for tool in support_with_result["tools"])
    assert "# Ledger\n[1] Month end\nThe ledger code for month end is MAGENTA-42" in sent(
        finance_prompt)  # the same search does find it for its own agent
    assert not any("MAGENTA" in s.text for s in await search(
        library, "support", "ledger code month end MAGENTA"))
