"""A team whose replies carry feedback buttons, wired as the runtime wires the feature, and
the console's feedback page read over HTTP."""

from __future__ import annotations

from typing import Any, cast

from aiohttp import ClientSession, web

from threadline.agents import Agent
from threadline.agents.agent import Memory
from threadline.agents.llm import ModelProvider
from threadline.agents.offline import OfflineModel
from threadline.backends import Backend
from threadline.backends.parts import records_for
from threadline.channels.base import Channel
from threadline.commands import CommandRegistry
from threadline.config import Settings
from threadline.features import FeatureContext
from threadline.feedback.feature import FEATURE, FeedbackSettings
from threadline.feedback.votes import FeedbackBook
from threadline.history.assembler import AssemblerOptions
from threadline.history.beside import parts_beside
from threadline.history.store import ConversationStore
from threadline.inspector.console.server import console_app, standalone_app
from threadline.inspector.recorder import ReplyRecorder
from threadline.inspector.redaction import Redactor
from threadline.listening import Listener, serve
from threadline.ops import Metrics
from threadline.people.access import Access
from threadline.team import Team, default_commands


def book_of(store: ConversationStore) -> FeedbackBook:
    book = parts_beside(store).feedback
    assert book is not None
    return cast(FeedbackBook, book)


def voting_team(store: ConversationStore, channel: Channel, *, recorder: ReplyRecorder,
                metrics: Metrics | None = None, provider: ModelProvider | None = None) -> Team:
    """Agent `support` (the offline model, or `provider`) on `channel`, with the feedback
    feature on."""
    parts = FEATURE.build(FeatureContext(
        settings=Settings(), backend=cast(Backend, parts_beside(store)), access=Access(),
        channels={channel.name: channel}, metrics=metrics or Metrics(),
        options=FeedbackSettings(buttons=True)))
    assert parts is not None
    # Recall by words only: loading the embedding model would only slow the test down.
    agent = Agent(name="support", conversation_history=store,
                  provider=provider or OfflineModel(), model="claude-haiku-4-5",
                  observer=recorder,
                  memory=Memory(options=AssemblerOptions(recall_by_meaning=False)))
    team = Team([agent], commands=CommandRegistry((*default_commands(), *parts.commands)),
                stages=parts.stages)
    team.attach(channel)
    return team


def recorder_for(store: ConversationStore) -> ReplyRecorder:
    records = records_for(store)
    assert records is not None
    return ReplyRecorder(records)


async def console_feedback(store: ConversationStore) -> tuple[dict[str, Any], str]:
    """The console's feedback page over HTTP: its JSON and its HTML."""
    records = records_for(store)
    assert records is not None
    runner = web.AppRunner(standalone_app(console_app(records=records, store=store,
                                                       redactor=Redactor())))
    await runner.setup()
    try:
        port = await serve(runner, Listener("127.0.0.1", 0, "test.port", "test.host"))
        async with ClientSession(f"http://127.0.0.1:{port}") as http:
            async with http.get("/console/api/feedback") as response:
                assert response.status == 200, await response.text()
                found = await response.json()
            async with http.get("/console/feedback") as response:
                assert response.status == 200
                page = await response.text()
    finally:
        await runner.cleanup()
    return found, page
