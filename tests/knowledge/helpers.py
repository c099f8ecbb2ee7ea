"""A documents source over a folder written by the test, on a real store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from threadline.history.store import ConversationStore
from threadline.history.tokens import default_counter
from threadline.knowledge.documents_source import DocumentsSettings, DocumentsSource
from threadline.knowledge.library import Library
from threadline.knowledge.shelf import found_section, source_conversation
from threadline.knowledge.source import FoundSection, KnowledgeAsk, SourceContext
from threadline.knowledge.sync import SyncReport


def write(folder: Path, files: dict[str, str | bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return folder


def documents_source(store: ConversationStore, folder: Path, *, name: str = "help",
                     **options: Any) -> DocumentsSource:
    return DocumentsSource(SourceContext(
        name=name, options=DocumentsSettings(folder=str(folder), **options), history=store,
        config_dir=folder, counter=default_counter()))


async def synced(source: DocumentsSource) -> SyncReport:
    return await source.sync(lambda *_: None)


async def stored_sections(store: ConversationStore, source: str) -> list[FoundSection]:
    turns = await store.get(source_conversation(source), limit=100_000)
    return [s for s in (found_section(t) for t in turns) if s is not None]


async def search(library: Library, agent: str, question: str, *earlier: str,
                 limit: int = 5) -> list[FoundSection]:
    return await library.search(agent, KnowledgeAsk(question, tuple(earlier)), limit=limit)
