"""Every block of code in the README says what ships today, so none drifts unnoticed:

- a python block compiles (top-level `await` allowed, as the REPL and notebooks take it),
  every name it imports from threadline exists, and every keyword it passes to what it
  imported is one that callable takes (`Agent(..., observer=...)`);
- a yaml block is a config fragment whose every key is a setting (`threadline.config`);
- a shell or console line that runs `make X` or `threadline X` names a target or command
  that exists.

The library program itself runs in `tests/backends/test_readme_library_block_runs.py`.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args, get_origin

import pytest
import yaml
from pydantic import BaseModel

from threadline.channels.registry import platform_for
from threadline.cli.main import COMMANDS
from threadline.config import Settings

REPOSITORY = Path(__file__).resolve().parents[1]
README = (REPOSITORY / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", README, re.S)


def blocks(*languages: str) -> list[str]:
    return [body for language, body in BLOCKS if language in languages]


def test_the_readme_has_blocks_of_each_kind() -> None:
    assert blocks("python") and blocks("yaml") and blocks("sh", "console")


@pytest.mark.parametrize("source", blocks("python"))
def test_a_python_block_compiles_and_calls_what_exists(source: str) -> None:
    tree = compile(source, "README.md", "exec", ast.PyCF_ONLY_AST
                   | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    assert isinstance(tree, ast.Module)
    imported: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("threadline"):
            module = importlib.import_module(str(node.module))
            for alias in node.names:
                assert hasattr(module, alias.name), f"{node.module} has no {alias.name}"
                imported[alias.asname or alias.name] = getattr(module, alias.name)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in imported):
            continue
        accepted = inspect.signature(imported[node.func.id]).parameters
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values())
        for keyword in node.keywords:
            assert keyword.arg is None or takes_any or keyword.arg in accepted, (
                f"{node.func.id}() takes no {keyword.arg}= (it takes {', '.join(accepted)})")


def unknown_keys(data: Any, model: type[BaseModel], path: str = "") -> Iterator[str]:
    """Keys of `data` that `model` (walked through its nested models) has no setting for."""
    if not isinstance(data, dict):
        return
    for key, value in data.items():
        field = model.model_fields.get(str(key))
        if field is None:
            yield f"{path}{key}"
            continue
        yield from _inner(value, field.annotation, f"{path}{key}.")


def _inner(value: Any, annotation: Any, path: str) -> Iterator[str]:
    """The unknown keys of `value`, held in a field of type `annotation`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield from unknown_keys(value, annotation, path)
    elif get_origin(annotation) is dict and isinstance(value, dict):
        inner = get_args(annotation)[1]
        for name, entry in value.items():
            yield from _inner(entry, inner, f"{path}{name}.")
    else:
        models = [a for a in get_args(annotation)
                  if isinstance(a, type) and issubclass(a, BaseModel)]
        if models and isinstance(value, dict):
            yield from unknown_keys(value, models[0], path)


@pytest.mark.parametrize("text", blocks("yaml"))
def test_a_yaml_block_names_only_settings(text: str) -> None:
    fragment = yaml.safe_load(text)
    assert isinstance(fragment, dict)
    channels = fragment.pop("channels", {}) or {}
    assert list(unknown_keys(fragment, Settings)) == []
    for name, entry in channels.items():  # each checked by its platform's settings model
        model = platform_for(str(entry["type"])).settings
        assert list(unknown_keys(entry, model, f"channels.{name}.")) == []


def make_targets() -> set[str]:
    makefile = (REPOSITORY / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([a-z][\w-]*):", makefile, re.M))


@pytest.mark.parametrize("text", blocks("sh", "console"))
def test_a_shell_block_runs_targets_and_commands_that_exist(text: str) -> None:
    targets, commands = make_targets(), set(COMMANDS)
    for line in text.splitlines():
        line = line.removeprefix("$ ").strip()
        for target in re.findall(r"^make (\w[\w-]*)", line):
            assert target in targets, f"README runs `make {target}`; the Makefile has none"
        for command in re.findall(r"^threadline (\w[\w-]*)", line):
            assert command in commands, f"README runs `threadline {command}`; no such command"
