"""Tools of the support bot example: a knowledge-base lookup and customer notes.

    tools:
      - support_tools:search_knowledge_base
      - support_tools:customer_notes

Threadline imports these by reference; modules beside the config file are found first.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from functools import lru_cache
from pathlib import Path

from threadline.agents.tools import tool
from threadline.history.model import Participant, StoredMessage
from threadline.history.search import IndexedTurn, SearchQuery, bm25_rank

KB_DIR = Path(__file__).with_name("kb")
NOTES_FILE = Path(os.environ.get("SUPPORT_BOT_NOTES", Path(__file__).with_name("notes.json")))
_SECTION = re.compile(r"^## ", re.MULTILINE)
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


@lru_cache(maxsize=1)
def knowledge_base() -> tuple[IndexedTurn, ...]:
    """Each `## ` section of the Markdown files as one searchable document, stemmed once."""
    sections = []
    for path in sorted(KB_DIR.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        title = text.splitlines()[0].lstrip("# ").strip()
        for number, part in enumerate(_SECTION.split(text)[1:], start=1):
            heading, _, body = part.partition("\n")
            sections.append(IndexedTurn.of(StoredMessage(
                conversation_id="kb", id=f"{path.stem}:{number}",
                participant=Participant(kind="system", id=path.stem,
                                        display_name=f"{title} > {heading.strip()}"),
                content=f"{heading.strip()}\n{body.strip()}")))
    return tuple(sections)


@tool
async def search_knowledge_base(query: str, limit: int = 2) -> str:
    """Search the shop's help articles (shipping, returns, refunds, accounts).

    Args:
        query: the customer's question or key words
        limit: how many sections to return (1-5)
    """
    hits = bm25_rank(SearchQuery.parse(query), knowledge_base(), limit=max(1, min(limit, 5)))
    if not hits:
        return "No help article matches; offer to hand over to a human."
    return "\n\n".join(f"[{h.participant.display_name}]\n{h.content}" for h in hits)


def _read_notes() -> dict[str, list[str]]:
    try:
        loaded: dict[str, list[str]] = json.loads(NOTES_FILE.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return loaded


def _update_notes(email: str, note: str | None) -> list[str]:
    notes = _read_notes()
    if note:
        notes.setdefault(email, []).append(note)
        temporary = NOTES_FILE.with_suffix(".tmp")
        temporary.write_text(json.dumps(notes, indent=1, sort_keys=True), encoding="utf-8")
        temporary.replace(NOTES_FILE)  # atomic: a crash leaves the old or the new file
    return notes.get(email, [])


@tool
async def customer_notes(email: str, note: str | None = None) -> str:
    """Read what we know about a customer, by email; with `note`, save one more fact first.

    Args:
        email: the customer's email address
        note: a fact worth remembering next time (order number, preference)
    """
    email = email.strip().lower()
    if not _EMAIL.match(email):
        return f"Error: {email!r} is not an email address; ask the customer for theirs."
    notes = await asyncio.to_thread(_update_notes, email, note)
    if not notes:
        return f"No notes about {email} yet: a new customer."
    return f"Notes about {email}:\n" + "\n".join(f"- {n}" for n in notes)
