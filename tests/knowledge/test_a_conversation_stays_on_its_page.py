"""A support conversation stays on one page, and a page's opening says what it is about: a
follow-up is answered from the page the conversation is on even when another page shares more
of its words, and a question naming a page's topic gets that page's opening lines with the
best section. On a real store (memory, SQLite file, PostgreSQL) with the real embedding
model."""

from __future__ import annotations

from pathlib import Path

from tests.knowledge.helpers import search, support_library
from threadline.history.store import ConversationStore

PAGES = {
    "passports.md": "# Passports\n\n## Adult passports\nAn adult passport is valid for ten "
                    "years and costs 80 pounds; renew it by post or online.\n\n## Photos\n"
                    "Send two identical photos taken within the last month.\n\n## Fees for "
                    "young people\nUnder sixteen the fee is 50 pounds and it lasts five "
                    "years.\n",
    "museum.md": "# Museum tickets\n\n## Children\nA child enters the museum free on Sundays; "
                 "a child ticket costs 5 pounds on other days, and a child under four never "
                 "pays.\n",
    "loans.md": "# Student loan default\n\nLoans must be repaid. Missing payments has "
                "consequences that grow the longer it lasts.\n\n## Defaulted loan servicer\n"
                "A loan in default is moved to the default servicer, which collects defaulted "
                "loans.\n\n## Leaving default\nRehabilitate a defaulted loan by making nine "
                "payments; a loan leaves default after them.\n",
}


async def test_a_follow_up_is_answered_from_the_page_the_conversation_is_on(
        store: ConversationStore, tmp_path: Path) -> None:
    library = await support_library(store, tmp_path / "help", PAGES)
    question = "how much does a child pay?"
    alone = await search(library, "support", question, limit=1)
    assert [s.document for s in alone] == ["museum.md"]
    followed = await search(
        library, "support", question,
        "I must renew my passport, how long is it valid for?",
        "An adult passport is valid for ten years and costs 80 pounds.",
        "Do I need photos?", "Yes: two identical photos taken within the last month.",
        limit=3)
    assert "Passports > Fees for young people" in [s.path for s in followed]
    assert "museum.md" not in [s.document for s in followed]


async def test_a_question_naming_a_pages_topic_gets_its_opening(
        store: ConversationStore, tmp_path: Path) -> None:
    library = await support_library(store, tmp_path / "help", PAGES)
    found = await search(library, "support", "I need information about defaulted loans",
                         limit=2)
    assert [s.document for s in found] == ["loans.md", "loans.md"]
    assert "Student loan default" in [s.path for s in found]  # the page's opening, no heading
