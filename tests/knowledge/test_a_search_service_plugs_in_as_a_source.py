"""A knowledge source type from another package, registered by its entry point alone (a
team's search service asked over HTTP), is configured in `knowledge.sources`, asked with the
conversation around the question, and grounds the agent's turn like the built-in type."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text
from tests.knowledge.helpers import knowledge_tooling, sent, talk
from tests.knowledge.search_service_source import registered_in, search_service
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.errors import ConfigError
from threadline.history.memory import InMemoryConversationStore
from threadline.history.tokens import default_counter
from threadline.knowledge.feature import build_library
from threadline.knowledge.settings import KnowledgeSettings
from threadline.knowledge.source import source_type_names
from threadline.team import Team

fake = fake_anthropic_fixture()


async def test_a_registered_source_type_grounds_the_turn(
        fake: FakeAnthropic, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(registered_in(tmp_path / "site")))
    assert "faq_service" in source_type_names()
    store = InMemoryConversationStore()
    async with search_service() as (url, asked):
        library = build_library(
            KnowledgeSettings(sources={"faq": {"type": "faq_service", "url": url}},
                              agents={"support": ["faq"]}),
            history=store, base_dir=tmp_path, counter=default_counter())
        fake.script(text("Bring the receipt and the serial number."))
        team = Team([Agent(name="support", model="claude-test", conversation_history=store,
                           provider=AnthropicProvider(fake.client()),
                           tooling=knowledge_tooling(library))])
        await talk(team, [("ada", "my kettle broke"),
                          ("ada", "@support what do I need for a warranty claim?")], room="shop")
    [context] = asked[-1]["context"]  # the line said before it, as the prompt shows it
    assert "ada: my kettle broke" in context
    [body] = fake.bodies
    shown = sent(body)
    assert "# Warranty <https://kb.example/7>\n[1] Claims\n" in shown
    assert "Opened boxes" not in shown


def test_an_unknown_source_type_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no source type 'elastic'"):
        build_library(KnowledgeSettings(sources={"x": {"type": "elastic"}}),
                      history=InMemoryConversationStore(), base_dir=tmp_path,
                      counter=default_counter())
