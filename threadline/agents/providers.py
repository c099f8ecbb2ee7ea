"""Model providers as plugs, registered like platforms: by name, each with its settings model, how
to build one and how to check it works.

Built-in providers are listed below; a third-party package adds one with an entry point in the
`threadline.providers` group, named after the `type:` (or `provider:`) the YAML gives it,
pointing at its `ProviderPlug`:

    [project.entry-points."threadline.providers"]
    mine = "threadline_mine:PLUG"

Code may also `register_provider(plug)` before the config is loaded. A provider's module is
imported only when a configuration uses it (its SDK may be an optional extra), so a missing SDK
is reported as a setting to fix rather than an ImportError at start-up, and `provider_names()`
reads names without importing anything. The core names no provider: which one `provider: auto`
means (and which one an `Agent` built without one uses) is declared here, in `AUTO`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from threadline.agents.llm import ModelProvider
from threadline.errors import ConfigError
from threadline.plugs import load_plug, plug_references

DEFAULT_MAX_RETRIES = 4
DEFAULT_TIMEOUT = 120.0
ENTRY_POINT_GROUP = "threadline.providers"
# name -> `module:attribute` of its plug
BUILT_IN = {
    "anthropic": "threadline.agents.anthropic_provider:PLUG",
    "openai": "threadline.agents.openai_provider:PLUG",
    "offline": "threadline.agents.offline:PLUG",
}
_EXTRAS = {"openai": "openai"}  # the extra that installs a built-in provider's SDK
# `provider: auto`: the first provider whose key is found, else the last (which needs none).
AUTO = ("anthropic", "offline")


class ProviderSettings(BaseModel):
    """What every provider is configured with; a plug's own settings model extends it.

    `max_retries` is how often the SDK retries a rate limited, overloaded or unreachable
    server, with its own backoff; `timeout` bounds one model call, retries included; `model`
    is the model agents on this provider use unless they name their own.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    type: str
    """The provider: anthropic, openai, offline, or a registered plug."""
    api_key: str | None = None
    """The key, as ${VARIABLE} (default: the provider's usual variable; none for a local server)."""
    base_url: str | None = None
    """The server's address (a proxy, or any OpenAI-compatible server for openai)."""
    max_retries: int = Field(default=DEFAULT_MAX_RETRIES, ge=0)
    """How often the SDK retries a rate limited, overloaded or unreachable server, with its own
    backoff."""
    timeout: float = Field(default=DEFAULT_TIMEOUT, gt=0)
    """Seconds one model call may take, its retries included."""
    model: str | None = None
    """The model agents on this provider use unless they name their own."""


@dataclass(frozen=True, slots=True)
class ProviderPlug:
    """One kind of provider: its settings model, how to build one, how to check it works.

    `check` makes one cheap authenticated call and returns what it found (or raises a
    `ThreadlineError` saying what is wrong). `key_variable` is the environment variable its key
    is usually in; with `key_variable_follows_base_url` False it is used only for the vendor's
    own address, so a key is never sent to another server a `base_url` names. `default_model`
    and `summary_model` are used when the configuration names none (None: a model must be
    named, or summaries are extractive).
    """

    name: str
    settings: type[ProviderSettings]
    build: Callable[[Any], ModelProvider]
    check: Callable[[Any], Awaitable[str]]
    key_variable: str | None = None
    key_variable_follows_base_url: bool = True
    default_model: str | None = None
    summary_model: str | None = None
    key_required: bool = False  # the provider cannot answer without a key (no local server)


_PLUGS: dict[str, ProviderPlug] = {}


def register_provider(plug: ProviderPlug) -> None:
    """Make a provider available to configurations under `plug.name` (replacing any before)."""
    _PLUGS[plug.name] = plug


def provider_names() -> list[str]:
    """Every provider name a configuration may use: built in, plugged in or registered."""
    return sorted({*plug_references(ENTRY_POINT_GROUP, BUILT_IN), *_PLUGS})


def provider_plug(name: str) -> ProviderPlug:
    """The plug named `name`, importing its module on first use."""
    if name in _PLUGS:
        return _PLUGS[name]
    references = plug_references(ENTRY_POINT_GROUP, BUILT_IN)
    if name not in references:
        raise ConfigError(f"unknown model provider {name!r}; known providers: "
                          f"{', '.join(provider_names())} (a third-party provider registers "
                          f"under the {ENTRY_POINT_GROUP!r} entry point group)")
    try:
        plug = load_plug(references[name])
    except ImportError as exc:
        extra = _EXTRAS.get(name) if name in BUILT_IN else None
        install = (f"run pip install 'threadline[{extra}]'" if extra else
                   "reinstall threadline" if name in BUILT_IN else "install its package")
        raise ConfigError(f"model provider {name!r} needs a package that is not installed "
                          f"({exc.name}); {install}") from exc
    if not isinstance(plug, ProviderPlug) or plug.name != name:
        raise ConfigError(f"{references[name]!r} is not the ProviderPlug for {name!r}")
    _PLUGS[name] = plug
    return plug


def auto_provider(*, key_found: bool) -> str:
    """The provider `provider: auto` means: the first of `AUTO` when its key was found."""
    return AUTO[0] if key_found else AUTO[-1]


def default_plug() -> ProviderPlug:
    """The plug an `Agent` built without a provider uses (`AUTO`'s first)."""
    return provider_plug(AUTO[0])


def build_default_provider() -> ModelProvider:
    """A provider built from `default_plug()`'s defaults (its key from its usual variable)."""
    plug = default_plug()
    return plug.build(plug.settings(type=plug.name))
