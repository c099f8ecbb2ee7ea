"""A knowledge search counts the ranking by meaning as much as the lexical one: a team's page
is worded by the team, not by the user who asks, so the section that means the answer comes
before one that only repeats the question's words. On a real store (memory, SQLite file,
PostgreSQL) with the real embedding model.

The pages are made so that the two rankings disagree: the photo rules repeat "passport",
"valid" and "long" (first by words, third by meaning), the adult passport's page says how
long one lasts in other words (second by words, first by meaning). Recall's weight for the
model (0.3) puts the photo rules first.
"""

from __future__ import annotations

from pathlib import Path

from tests.knowledge.helpers import search, support_library
from threadline.history.store import ConversationStore

PAGES = {
    "photos.md": "# Passport photos\n\nA passport photo is valid when long hair is tied back; a "
                 "passport photo that is not valid is rejected. Booth, camera, lighting, "
                 "background, shadows, glasses, smile, hat, red eyes, print, paper, size, "
                 "colour, contrast, focus, pixels, frame, white wall, flash, studio, chin, "
                 "ears, forehead.\n",
    "adults.md": "# Adult passports\n\nAn adult passport lasts ten years from the day it is "
                 "issued.\n",
    "travel.md": "# Travel documents\n\nTravel documents stay valid for a decade after they "
                 "are issued; renew them years before they expire.\n",
    "identity.md": "# Identity cards\n\nAn identity card is valid for five years after it is "
                   "issued, then it expires.\n",
    "delivery.md": "# Delivery\n\nParcels arrive within three days; tracking links come by "
                   "email.\n",
}


async def test_the_section_that_means_the_answer_comes_before_one_that_shares_its_words(
        store: ConversationStore, tmp_path: Path) -> None:
    library = await support_library(store, tmp_path / "help", PAGES)
    found = await search(library, "support", "How long is a passport valid?", limit=2)
    assert [s.path for s in found] == ["Adult passports", "Passport photos"]
