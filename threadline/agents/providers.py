"""Model providers as plugs: each one registers its name, its settings, how to build and check it.

    register_provider(ProviderPlug(name="mine", settings=MySettings, build=..., check=...))
    plug = provider_plug("openai")          # imports the module that registers it, on first use
    provider = plug.build(plug.settings.model_validate({"type": "openai", "base_url": ...}))

The built-in plugs (`anthropic`, `openai`, `offline`) live beside their providers and register
themselves when their module is imported; this registry only knows which module holds which
name, so an SDK is imported only when a configuration uses it, and a missing optional SDK is
reported as a setting to fix rather than an ImportError at start-up.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from threadline.agents.llm import ModelProvider
from threadline.errors import ConfigError

DEFAULT_MAX_RETRIES = 4
DEFAULT_TIMEOUT = 120.0
# name -> (module that registers it, the extra that installs its SDK)
_BUILT_IN = {
    "anthropic": ("threadline.agents.anthropic_provider", None),
    "openai": ("threadline.agents.openai_provider", "openai"),
    "offline": ("threadline.agents.offline", None),
}


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


_PLUGS: dict[str, ProviderPlug] = {}


def register_provider(plug: ProviderPlug) -> None:
    """Make a provider available to configurations under `plug.name` (replacing any before)."""
    _PLUGS[plug.name] = plug


def provider_names() -> list[str]:
    """Every provider name a configuration may use, built in or registered."""
    return sorted({*_BUILT_IN, *_PLUGS})


def provider_plug(name: str) -> ProviderPlug:
    """The plug registered as `name`, importing its built-in module on first use."""
    if name not in _PLUGS and name in _BUILT_IN:
        module, extra = _BUILT_IN[name]
        try:
            importlib.import_module(module)
        except ImportError as exc:
            install = f"pip install 'threadline[{extra}]'" if extra else "reinstall threadline"
            raise ConfigError(f"model provider {name!r} needs a package that is not installed "
                              f"({exc.name}); run {install}") from exc
    try:
        return _PLUGS[name]
    except KeyError:
        raise ConfigError(f"unknown model provider {name!r}; known providers: "
                          f"{', '.join(provider_names())}") from None
