"""The config describes itself: `threadline config schema` prints a JSON Schema of the whole file
that the starter configs of every platform pass and a misspelled one fails (each registered
platform, provider and backend in it), and `threadline check` reports every problem of a file
in one pass, with a "did you mean" for an unknown key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.cli.helpers import run_process
from threadline.channels.registry import platform_names

BROKEN = """\
stor:
  url: sqlite:///x.db
model:
  provder: offline
agents:
  support:
    sytem_prompt: hi
    channels: [local]
channels:
  local:
    type: local
    stdn: false
"""


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    printed = run_process("config", "schema", cwd=Path.cwd())
    assert printed.code == 0, printed.err
    return dict(json.loads(printed.out))


@pytest.mark.parametrize("platform", platform_names())
def test_every_platforms_starter_config_passes_the_schema(
        schema: dict[str, Any], platform: str, tmp_path: Path) -> None:
    config = tmp_path / "threadline.yaml"
    assert run_process("init", "--platform", platform, str(config), cwd=tmp_path).code == 0
    jsonschema.validate(yaml.safe_load(config.read_text(encoding="utf-8")), schema)


def test_the_schema_names_every_plug_and_refuses_a_misspelled_config(
        schema: dict[str, Any]) -> None:
    channel_types = {schema["$defs"][ref["$ref"].rsplit("/", 1)[1]]["properties"]["type"]
                     .get("const") for ref in
                     schema["properties"]["channels"]["additionalProperties"]["oneOf"]}
    assert {"local", "slack", "telegram", "discord"} <= channel_types
    assert len(schema["properties"]["providers"]["additionalProperties"]["oneOf"]) >= 2
    assert "postgresql" in schema["$defs"]["StoreSettings"]["properties"]["url"]["pattern"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(yaml.safe_load(BROKEN), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"store": {"url": "mysql://x"}}, schema)


def test_check_reports_every_problem_at_once_with_did_you_mean(tmp_path: Path) -> None:
    config = tmp_path / "threadline.yaml"
    config.write_text(BROKEN, encoding="utf-8")
    outcome = run_process("check", str(config), cwd=tmp_path)
    assert outcome.code == 2
    for line, key, meant in ((2, "stor", "store"), (4, "model.provder", "provider"),
                             (7, "agents.support.sytem_prompt", "system_prompt"),
                             (12, "channels.local.stdn", "stdin")):
        assert (f"{config}:{line}: {key}: unknown setting (did you mean {meant!r}?"
                in outcome.err), outcome.err
