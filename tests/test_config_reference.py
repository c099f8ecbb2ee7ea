"""`docs/config.md` is generated from the config models: every key of every model (the
sections, each platform's `channels:` entry, each provider's settings) has an entry with a
description, and the committed file is what the generator writes today."""

from __future__ import annotations

from pathlib import Path
from typing import get_args, get_origin

import pytest
from pydantic import BaseModel, ConfigDict

from threadline.agents.providers import provider_names, provider_plug
from threadline.channels.registry import platform_for, platform_names
from threadline.config import Settings
from threadline.config_docs import reference, render, sections, undescribed
from threadline.errors import ConfigError

PAGE = Path(__file__).parents[1] / "docs" / "config.md"


def field_names(model: type[BaseModel]) -> set[str]:
    """Every field name of `model` and of the models it holds, walked on its own (not with the
    generator's code)."""
    names: set[str] = set()
    for name, field in model.model_fields.items():
        names.add(name)
        for candidate in (field.annotation, *get_args(field.annotation)):
            for inner in (candidate, *get_args(candidate)):
                if isinstance(inner, type) and issubclass(inner, BaseModel) \
                        and get_origin(inner) is None:
                    names |= field_names(inner)
    return names - {"base_dir"}


def documented_keys() -> set[str]:
    """The last part of every key in the committed page's tables."""
    keys = set()
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("| `"):
            key = line.split("`", 2)[1]
            keys.add(key.rsplit(".", 1)[-1])
    return keys


def test_every_key_of_every_config_model_has_an_entry() -> None:
    models: list[type[BaseModel]] = [Settings]
    models += [platform_for(name).settings for name in platform_names()]
    models += [provider_plug(name).settings for name in provider_names()]
    expected = set().union(*(field_names(m) for m in models))
    assert {"busy_timeout", "summary_model", "recall_limit", "shutdown_timeout",
            "webhook_port", "assistant_prompts", "token_limit_parameter"} <= expected
    assert sorted(expected - documented_keys()) == []


def test_every_entry_says_what_the_key_does() -> None:
    assert undescribed(reference()) == []
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("| `"):
            assert line.rstrip("| ").split(" | ")[-1].strip(), line


def test_the_committed_page_is_up_to_date() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(reference()), (
        "docs/config.md is stale: run `python -m threadline.config_docs docs/config.md`")


def test_a_key_without_a_description_is_refused() -> None:
    class Widget(BaseModel):
        model_config = ConfigDict(use_attribute_docstrings=True)

        size: int = 3
        """How big."""
        colour: str = "red"

    found = list(sections(Widget, "widget.", "widget"))
    assert undescribed(found) == ["widget.colour"]
    with pytest.raises(ConfigError, match=r"without a description .*: widget\.colour"):
        render(found)
