"""`docs/config.md`, generated from the config models: every key, its type, default and what
it does, so the reference cannot drift from the code.

    python -m threadline.config_docs docs/config.md     # write it (no path: standard output)

Each key's text is its field's docstring in the pydantic model (`use_attribute_docstrings`);
a key without one is refused here, and a test fails when the committed file differs from
what this writes. `channels:` entries are listed per platform (each platform's own settings
model, from the registry) and `providers:` entries per provider plug.
"""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from threadline.agents.providers import provider_names, provider_plug
from threadline.channels.registry import platform_for, platform_names
from threadline.config import Settings
from threadline.errors import ConfigError

# Keys whose entries are described per platform or per provider, not by their field's type.
_PER_PLATFORM = "channels"
_PER_PROVIDER = "providers"
_HIDDEN = {"base_dir"}  # set by the loader, never written in a file
_CONSTRAINTS = (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="), ("max_length", "at most"))

HEADER = """\
# Configuration reference

Every key of `threadline.yaml`, generated from the config models by
`python -m threadline.config_docs docs/config.md` (do not edit by hand; a test fails when it
is out of date). `threadline init` writes a commented starter; secrets (`token`, `api_key`,
`bot_token`, ...) must be written as `${VARIABLE}` and come from the environment or a `.env`
file beside the config. `NAME` stands for a name you choose; `[]` for each item of a list.
"""


@dataclass(frozen=True, slots=True)
class Entry:
    """One key of the config file."""

    key: str
    type: str
    default: str
    description: str | None


@dataclass(frozen=True, slots=True)
class Section:
    """A table of keys under a heading, with the model's own docstring as its introduction."""

    title: str
    introduction: str
    entries: tuple[Entry, ...]


def type_name(annotation: Any) -> str:
    """An annotation as a reader of YAML would say it (`int`, `list of str`, `a | b`)."""
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Annotated:
        return type_name(args[0])
    if origin is Literal:
        return " | ".join(str(a) for a in args)
    if origin in (Union, types.UnionType):
        named = [type_name(a) for a in args if a is not type(None)]
        return " | ".join(named) + (" | null" if type(None) in args else "")
    if origin is list:
        return f"list of {type_name(args[0])}"
    if origin is dict:
        return f"map of {type_name(args[0])} to {type_name(args[1])}"
    if annotation is Any:
        return "settings"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "section"
    return getattr(annotation, "__name__", str(annotation))


def _constraints(field: FieldInfo) -> str:
    found = [f"{word} {getattr(m, name)}" for m in field.metadata
             for name, word in _CONSTRAINTS if getattr(m, name, None) is not None]
    return f" ({', '.join(found)})" if found else ""


def default_text(field: FieldInfo) -> str:
    """The default as YAML would write it; `required` when there is none."""
    if field.default_factory is not None:
        value: Any = field.default_factory()  # type: ignore[call-arg]
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return "see below"
    if isinstance(value, dict) and any(isinstance(v, BaseModel) for v in value.values()):
        return "built in: " + ", ".join(f"`{name}`" for name in value)
    return f"`{json.dumps(value, default=str)}`"


def _model_of(annotation: Any) -> tuple[type[BaseModel], str] | None:
    """The section model a field holds, and the key suffix its keys take (`.NAME`, `[]`)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _model_of(args[0])
    if origin in (Union, types.UnionType):  # an optional section: `X | None`
        held = [_model_of(a) for a in args if a is not type(None)]
        return held[0] if len(held) == 1 else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, ""
    if origin is dict and isinstance(args[1], type) and issubclass(args[1], BaseModel):
        return args[1], ".NAME"
    if origin is list and isinstance(args[0], type) and issubclass(args[0], BaseModel):
        return args[0], "[]"
    return None


def _introduction(model: type[BaseModel]) -> str:
    return " ".join((model.__doc__ or "").split("\n\n")[0].split())


def sections(model: type[BaseModel], prefix: str, title: str,
             skip: frozenset[str] = frozenset()) -> Iterator[Section]:
    """A section for `model`'s own keys, then one for each section it holds."""
    entries: list[Entry] = []
    nested: list[Section] = []
    for name, field in model.model_fields.items():
        if name in _HIDDEN or name in skip:
            continue
        key = f"{prefix}{name}"
        description = " ".join(field.description.split()) if field.description else None
        entries.append(Entry(key, type_name(field.annotation) + _constraints(field),
                             default_text(field), description))
        held = _model_of(field.annotation)
        if held is not None and key not in (_PER_PLATFORM, _PER_PROVIDER):
            sub_model, suffix = held
            nested += sections(sub_model, f"{key}{suffix}.", f"{key}{suffix}")
    yield Section(title, _introduction(model), tuple(entries))
    yield from nested


def reference() -> list[Section]:
    """Every section of the config file: the top level, each section, each platform's
    `channels:` entry and each provider's `providers:` entry."""
    found = list(sections(Settings, "", "Top level"))
    for platform in platform_names():
        try:
            settings = platform_for(platform).settings
        except ConfigError:
            continue  # a plug-in that is not installed here
        found += sections(settings, "channels.NAME.", f"channels.NAME with type: {platform}")
    for provider in provider_names():
        try:
            plug = provider_plug(provider)
        except ConfigError:
            continue
        found += sections(plug.settings, "providers.NAME.",
                          f"providers.NAME with type: {provider} (and model: with provider: "
                          f"{provider})")
    return found


def undescribed(found: Sequence[Section]) -> list[str]:
    """Keys whose field has no description."""
    return [entry.key for section in found for entry in section.entries if not entry.description]


def render(found: Sequence[Section]) -> str:
    """The Markdown page; refuses keys without a description."""
    missing = undescribed(found)
    if missing:
        raise ConfigError("config keys without a description (add a docstring under the "
                          f"field): {', '.join(missing)}")
    parts = [HEADER]
    for section in found:
        parts.append(f"\n## {section.title}\n")
        if section.introduction:
            parts.append(f"\n{section.introduction}\n")
        parts.append("\n| key | type | default | what it does |\n|---|---|---|---|\n")
        parts += [f"| `{e.key}` | {e.type.replace('|', '&#124;')} | "
                  f"{e.default.replace('|', '&#124;')} | {e.description} |\n"
                  for e in section.entries]
    return "".join(parts)


def main(argv: Sequence[str]) -> int:
    try:
        text = render(reference())
    except ConfigError as exc:
        print(f"threadline.config_docs: error: {exc}", file=sys.stderr)
        return 2
    if argv:
        Path(argv[0]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
