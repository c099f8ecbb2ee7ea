"""A documents source over a folder written by the test, on a real store."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.history.embedding import index_everything
from threadline.agents.agent import Tooling
from threadline.channels.local import LocalChannel
from threadline.history.store import ConversationStore
from threadline.history.tokens import default_counter
from threadline.inspector import ReplyRecorder
from threadline.knowledge.documents_source import DocumentsSettings, DocumentsSource
from threadline.knowledge.feature import KnowledgeGrounding
from threadline.knowledge.library import Library
from threadline.knowledge.shelf import found_section, source_conversation
from threadline.knowledge.source import FoundSection, KnowledgeAsk, SourceContext
from threadline.knowledge.sync import SyncReport
from threadline.knowledge.tool import knowledge_search_tool
from threadline.team import Team


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


async def support_library(store: ConversationStore, folder: Path,
                          pages: dict[str, str | bytes]) -> Library:
    """`pages` written into `folder` as the source "help", synced and embedded, and given to
    the agent "support"."""
    source = documents_source(store, write(folder, pages))
    await synced(source)
    await index_everything(store)
    return Library({"help": source}, agents={"support": ["help"]})


async def stored_sections(store: ConversationStore, source: str) -> list[FoundSection]:
    turns = await store.get(source_conversation(source), limit=100_000)
    return [s for s in (found_section(t) for t in turns) if s is not None]


async def search(library: Library, agent: str, question: str, *earlier: str,
                 limit: int = 5) -> list[FoundSection]:
    return await library.search(agent, KnowledgeAsk(question, tuple(earlier)), limit=limit)


async def talk(team: Team, lines: Sequence[tuple[str, str]], *, room: str = "desk",
               recorder: ReplyRecorder | None = None) -> None:
    """Each (user, text) said in one local room, the team running; then the team stopped, and
    `recorder` (when given) flushed and closed."""
    channel = LocalChannel(name="local", room=room)
    team.attach(channel)
    await team.start()
    try:
        for user, line in lines:
            await channel.say(line, user=user)
        if recorder is not None:
            await recorder.flush()
    finally:
        await team.stop()
        if recorder is not None:
            await recorder.close()


def knowledge_tooling(library: Library, *, share: float = 1 / 3) -> Tooling:
    """What the knowledge feature gives agents: its search tool and its grounding."""
    counter = default_counter()
    grounding = KnowledgeGrounding(library, share=share, counter=counter)
    return Tooling(turn_tools=(knowledge_search_tool(library, counter=counter, room=600,
                                                     shown=grounding.shown),),
                   grounding=grounding)


def sent(body: dict[str, Any]) -> str:
    """Every text the request carries (system, messages, tool results), one after another."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("text", "content") and isinstance(item, str):
                    found.append(item)
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk({"system": body.get("system"), "messages": body["messages"]})
    return "\n".join(found)
