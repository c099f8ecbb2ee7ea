"""Person memory is off unless configured: on for every agent (`people.memory`), and per agent
(`agents.NAME.memory.person_memory`) either way; bad retention values are refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from threadline.config import load_settings
from threadline.errors import ConfigError

CONFIG = """
people:
  memory: {memory}
history:
  retention_days: 365
  retention_days_for: {{"slack:T1": 30, "slack:T1:C0LEGAL": null}}
agents:
  support: {{}}
  billing:
    memory: {{person_memory: false}}
  notes:
    memory: {{person_memory: true}}
"""


@pytest.mark.parametrize("memory", [True, False])
def test_people_memory_is_the_default_an_agent_may_override(tmp_path: Path,
                                                            memory: bool) -> None:
    path = tmp_path / "threadline.yaml"
    path.write_text(CONFIG.format(memory=str(memory).lower()))
    settings = load_settings(path, env={})
    chosen = {name: agent.memory.options(settings.people.memory).person_memory
              for name, agent in settings.agents.items()}
    assert chosen == {"support": memory, "billing": False, "notes": True}
    assert settings.history.retention_days_for == {"slack:T1": 30, "slack:T1:C0LEGAL": None}


def test_off_when_not_configured(tmp_path: Path) -> None:
    path = tmp_path / "threadline.yaml"
    path.write_text("agents:\n  support: {}\n")
    settings = load_settings(path, env={})
    assert settings.agents["support"].memory.options(settings.people.memory).person_memory is False


def test_a_negative_retention_is_refused_with_its_key(tmp_path: Path) -> None:
    path = tmp_path / "threadline.yaml"
    path.write_text("history:\n  retention_days: -3\n")
    with pytest.raises(ConfigError, match="retention_days"):
        load_settings(path, env={})
