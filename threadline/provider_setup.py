"""Which model provider and model each agent uses, from the `model:` and `providers:` settings.

    model:                      # the default provider (auto: Anthropic with a key, else offline)
      provider: anthropic
      max_retries: 4
    providers:                  # more providers, by name
      local:
        type: openai
        base_url: http://127.0.0.1:11434/v1
        model: llama3.1
    agents:
      support: {model: claude-sonnet-5-5}       # the default provider
      notes: {provider: local}                  # llama3.1 on the local server
      helper:                                   # a list: the next answers when one is down
        model: [claude-sonnet-5-5, claude-haiku-5-5, {provider: local, model: llama3.1}]

An agent's `provider` names an entry of `providers:`, or a provider type (`anthropic`,
`openai`, `offline`, or any registered plug), which means the `model:` section when it is of
that type and the plug's defaults (keys from the SDK's usual environment variable) otherwise.
Its model is its own `model`, else the entry's `model`, else the plug's default; a list's
later entries are its fallbacks, on the agent's provider or the one they name. Each entry is
built once and shared by the agents that use it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from threadline.agents.llm import ModelChoice, ModelProvider
from threadline.agents.providers import (
    AUTO,
    ProviderPlug,
    ProviderSettings,
    default_plug,
    provider_names,
    provider_plug,
)
from threadline.errors import ConfigError

if TYPE_CHECKING:
    from threadline.history.summary import Summarizer

DEFAULT_ENTRY = "model"
KeyPath = tuple[str | int, ...]


class ModelSection(Protocol):
    """The `model:` section as provider set-up reads it (`threadline.config.ModelSettings`)."""

    @property
    def provider(self) -> str: ...

    @property
    def api_key(self) -> str | None: ...

    @property
    def base_url(self) -> str | None: ...

    @property
    def max_retries(self) -> int: ...

    @property
    def timeout(self) -> float: ...

    @property
    def summary_model(self) -> str | None: ...

    @property
    def summary_provider(self) -> str | None: ...


class ListedModel(Protocol):
    """An entry of an agent's `model:` list naming its provider (`config.FallbackModel`)."""

    @property
    def provider(self) -> str | None: ...

    @property
    def model(self) -> str: ...


class AgentSection(Protocol):
    """An agent's provider and model (or list of models) as provider set-up reads them."""

    @property
    def provider(self) -> str | None: ...

    @property
    def model(self) -> str | Sequence[str | ListedModel] | None: ...


class Settings(Protocol):
    """What provider set-up reads of the loaded settings (`threadline.config.Settings` is
    one): the config imports this module to check its provider entries, never the reverse."""

    @property
    def model(self) -> ModelSection: ...

    @property
    def providers(self) -> Mapping[str, Mapping[str, Any]]: ...

    @property
    def agents(self) -> Mapping[str, AgentSection]: ...

    def resolved_provider(self) -> str: ...


@dataclass(frozen=True, slots=True)
class ProviderChoice:
    """One configured provider: where it was set (`model` or `providers.NAME`) and how."""

    entry: str
    plug: ProviderPlug
    settings: ProviderSettings

    @property
    def where(self) -> KeyPath:
        return ("model",) if self.entry == DEFAULT_ENTRY else ("providers", self.entry)


@dataclass(frozen=True, slots=True)
class AgentModel:
    """The provider that answers an agent and the model name it asks for, and the models asked
    in order when that one stays unavailable."""

    provider: ProviderChoice
    model: str
    fallbacks: tuple[AgentModel, ...] = ()

    @property
    def chain(self) -> tuple[AgentModel, ...]:
        """This model, then its fallbacks."""
        return (self, *self.fallbacks)


def key_variable(provider: str, *, base_url: str | None) -> str | None:
    """The environment variable a provider's key is taken from when the config names none
    (None: no such variable, or not for a server at `base_url`)."""
    name = AUTO[0] if provider == "auto" else provider
    try:
        plug = provider_plug(name)
    except ConfigError:
        return None  # an unknown or uninstalled provider is reported by `problems`
    if base_url and not plug.key_variable_follows_base_url:
        return None
    return plug.key_variable


class SettingError(ConfigError):
    """A provider setting is wrong: `path` is its key path, `problem` what is wrong with it."""

    def __init__(self, path: KeyPath, problem: str) -> None:
        super().__init__(f"{'.'.join(str(p) for p in path)}: {problem}")
        self.path = path
        self.problem = problem


def _plug(name: str, path: KeyPath) -> ProviderPlug:
    try:
        return provider_plug(name)
    except ConfigError as exc:
        raise SettingError(path, str(exc)) from exc


def _validated(plug: ProviderPlug, raw: Mapping[str, Any], where: KeyPath) -> ProviderSettings:
    try:
        return plug.settings.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = (*where, *(str(p) for p in first["loc"]))
        raise SettingError(path, f"{first['msg']}, found {first.get('input')!r}") from exc


def default_provider(settings: Settings) -> ProviderChoice:
    """The `model:` section as a provider."""
    model = settings.model
    plug = _plug(settings.resolved_provider(), ("model", "provider"))
    raw = {"type": plug.name, "api_key": model.api_key, "base_url": model.base_url,
           "max_retries": model.max_retries, "timeout": model.timeout}
    if plug.name == "offline":  # a key found in the environment is not an offline setting
        raw = {"type": "offline"}
    return ProviderChoice(DEFAULT_ENTRY, plug, _validated(plug, raw, ("model",)))


def provider_named(settings: Settings, name: str | None, path: KeyPath) -> ProviderChoice:
    """The provider `NAME` means where `path` names it (None: the `model:` section)."""
    if name is None:
        return default_provider(settings)
    if name in settings.providers:
        raw = settings.providers[name]
        kind = raw.get("type")
        if not isinstance(kind, str):
            raise SettingError(("providers", name, "type"), "missing; one of "
                               f"{', '.join(provider_names())}")
        plug = _plug(kind, ("providers", name, "type"))
        return ProviderChoice(name, plug, _validated(plug, raw, ("providers", name)))
    default = default_provider(settings)
    if default.plug.name == name:
        return default
    if name not in provider_names():
        defined = ", ".join(sorted(settings.providers)) or "none"
        raise SettingError(path, f"unknown provider {name!r}: not under providers: ({defined}) "
                                 f"and not a provider type ({', '.join(provider_names())})")
    plug = _plug(name, path)
    return ProviderChoice(name, plug, plug.settings(type=name))


def agent_model(settings: Settings, agent: str) -> AgentModel:
    """One agent's provider and model (and fallbacks); a `SettingError` names the setting."""
    agent_settings = settings.agents[agent]
    provider = provider_named(settings, agent_settings.provider, ("agents", agent, "provider"))
    named = agent_settings.model
    listed: Sequence[str | ListedModel | None] = (
        [named] if named is None or isinstance(named, str) else named)
    chosen = [_listed_model(settings, agent, provider, entry, number)
              for number, entry in enumerate(listed)]
    return replace(chosen[0], fallbacks=tuple(chosen[1:]))


def _listed_model(settings: Settings, agent: str, own: ProviderChoice,
                  entry: str | ListedModel | None, number: int) -> AgentModel:
    """One entry of an agent's `model:` (a name on the agent's provider, or {provider, model})."""
    path: KeyPath = ("agents", agent, "model") if number == 0 and (
        entry is None or isinstance(entry, str)) else ("agents", agent, "model", number)
    if entry is None or isinstance(entry, str):
        provider, name = own, entry
    else:
        provider = (own if entry.provider is None
                    else provider_named(settings, entry.provider, (*path, "provider")))
        name = entry.model
    model = name or provider.settings.model or provider.plug.default_model
    if model is None:
        raise SettingError(path, f"provider {provider.entry!r} ({provider.plug.name}) has no "
                           "default model; set the model the server serves, e.g. "
                           "`model: llama3.1`")
    return AgentModel(provider, model)


def agent_models(settings: Settings) -> dict[str, AgentModel]:
    """Every agent's provider and model."""
    return {agent: agent_model(settings, agent) for agent in settings.agents}


def problems(settings: Settings) -> list[tuple[KeyPath, str]]:
    """What is wrong with the provider settings, by key path (for the config's cross-check)."""
    found: list[tuple[KeyPath, str]] = []
    names: list[tuple[str | None, KeyPath]] = [
        (None, ("model",)), *((n, ("providers", n)) for n in settings.providers),
        (settings.model.summary_provider, ("model", "summary_provider"))]
    for name, path in names:
        try:
            provider_named(settings, name, path)
        except SettingError as exc:
            if (exc.path, exc.problem) not in found:
                found.append((exc.path, exc.problem))
    if not found:
        for agent in settings.agents:
            try:
                agent_model(settings, agent)
            except SettingError as exc:
                found.append((exc.path, exc.problem))
    return found


class Providers:
    """Builds each configured provider once, for the agents and the summarizer that use it."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.agents = agent_models(settings)
        self._built: dict[KeyPath, ModelProvider] = {}

    def build(self, choice: ProviderChoice) -> ModelProvider:
        if choice.where not in self._built:
            self._built[choice.where] = choice.plug.build(choice.settings)
        return self._built[choice.where]

    def for_agent(self, agent: str) -> tuple[ModelProvider, str]:
        chosen = self.agents[agent]
        return self.build(chosen.provider), chosen.model

    def fallbacks_for(self, agent: str) -> list[ModelChoice]:
        """The models asked, in order, when the agent's own stays unavailable."""
        return [ModelChoice(self.build(f.provider), f.model)
                for f in self.agents[agent].fallbacks]

    def summarizer(self, override: ModelProvider | None = None, *,
                   wrap: Callable[[ModelProvider, str, str], ModelProvider] | None = None
                   ) -> Summarizer:
        """Rolling summaries by `summary_provider`/`summary_model` or the plug's cheap model;
        extractive ones (no model) when there is none. `wrap(provider, plug name, model)`
        decorates the provider summaries use (the spend meter)."""
        from threadline.agents.summarizer import ExtractiveSummarizer, SummarizerAgent

        model = self.settings.model
        choice = provider_named(self.settings, model.summary_provider,
                                ("model", "summary_provider"))
        name = model.summary_model or choice.plug.summary_model or (
            choice.settings.model if model.summary_provider else None)
        if name is None:
            return ExtractiveSummarizer()
        provider = override or self.build(choice)
        if wrap is not None:
            provider = wrap(provider, choice.plug.name, name)
        return SummarizerAgent(provider, model=name)


def checks(settings: Settings) -> dict[str, Callable[[], Awaitable[str]]]:
    """One connection check per provider the agents use, by subject, and one more per
    fallback model (a model that cannot answer is no fallback)."""
    found: dict[str, Callable[[], Awaitable[str]]] = {}
    for agent in agent_models(settings).values():
        for number, chosen in enumerate(agent.chain):
            choice = chosen.provider
            subject = "model" if choice.entry == DEFAULT_ENTRY else (
                f"model provider {choice.entry} ({choice.plug.name})")
            if number:
                subject += f", fallback {chosen.model}"
            if subject not in found:
                found[subject] = _check(choice, chosen.model, exact=number > 0)
    if offline_by_default(settings):
        found["model"] = _offline_by_default
    return found


def offline_by_default(settings: Settings) -> bool:
    """`provider: auto` found no key for the default provider, and an agent answers with it:
    the keyless fallback answers that agent. (Agents all on other providers need no key.)"""
    if settings.model.provider != "auto" or settings.resolved_provider() != AUTO[-1]:
        return False
    return any(chosen.provider.entry == DEFAULT_ENTRY
               for agent in agent_models(settings).values() for chosen in agent.chain)


async def _offline_by_default() -> str:
    return f"no {default_plug().key_variable}: agents will answer with the offline model"


def _check(choice: ProviderChoice, model: str, *, exact: bool = False
           ) -> Callable[[], Awaitable[str]]:
    settings = choice.settings if choice.settings.model and not exact else (
        choice.settings.model_copy(update={"model": model}))
    return lambda: choice.plug.check(settings)
