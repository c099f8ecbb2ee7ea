"""Which page a conversation is on is said by the searches made with the conversation, not by
the question alone: a follow-up's few words are on other pages too. A passport conversation
whose newest question ("How much does a child pay?") the museum's page answers word for word
is still answered from the passport page's fees. On a real store (memory, SQLite file,
PostgreSQL) with the real embedding model.

The question's words put the museum first in the search of the question alone and in the one
of the question and the two turns before it; the whole conversation puts the passport page
first. Counting the documents of the question's own search too put the museum's three
sections before the passport's fees.
"""

from __future__ import annotations

from pathlib import Path

from tests.knowledge.helpers import search, support_library
from threadline.history.store import ConversationStore

PAGES = {
    "passports.md": "# Passports\n\n## Adult passports\nAn adult passport is valid for ten "
                    "years and costs 80 pounds; renew it by post or online.\n\n## Photos\nSend "
                    "two identical photos taken within the last month.\n\n## Lost passports\n"
                    "Report a lost passport at once; it is cancelled and cannot be used "
                    "again.\n\n## Urgent travel\nBook an appointment when you travel within a "
                    "week.\n\n## Fees for young people\nUnder sixteen the fee is 50 pounds and "
                    "it lasts five years.\n",
    "museum.md": "# Museum tickets\n\n## Children\nA child enters the museum free on Sundays; "
                 "a child ticket costs 5 pounds on other days, and a child under four never "
                 "pays.\n\n## School groups\nA class of children pays 2 pounds a child; "
                 "teachers come free.\n\n## Families\nTwo adults and up to three children pay "
                 "20 pounds together.\n",
}
CONVERSATION = (
    "I must renew my passport before a trip abroad.",
    "An adult passport is valid for ten years and costs 80 pounds; renew it by post or online.",
    "Do I need new photos for the passport?",
    "Yes: two identical photos taken within the last month.",
    "My children travel with me.",
    "Are they under sixteen?",
)


async def test_a_follow_up_stays_on_the_conversations_page_when_its_words_are_elsewhere(
        store: ConversationStore, tmp_path: Path) -> None:
    library = await support_library(store, tmp_path / "help", PAGES)
    found = await search(library, "support", "Yes. How much does a child pay?", *CONVERSATION,
                         limit=1)
    assert [s.path for s in found] == ["Passports > Fees for young people"]
