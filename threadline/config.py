"""The deployment configuration: one YAML file describing stores, agents and channels.

    store:
      url: sqlite:///threadline.db
    channels:
      team-chat:
        type: PLATFORM            # its settings model is the platform's own
        bot_token: ${BOT_TOKEN}
    agents:
      support:
        system_prompt: You answer questions about our product.
        channels: [team-chat]

A `channels:` entry is validated by the settings model of the platform its `type:` names
(`threadline.channels.registry`); this module knows no platform.

Secrets never live in the YAML: a secret field must be a `${VARIABLE}` reference, resolved
from the environment or a `.env` file beside the config (the environment wins). A literal
secret is refused, so a config file can be committed and shared safely.

Every problem is reported as a `ConfigError` naming the file, the line and the key path, what
was expected and what was found. An empty file (or no file: `Settings()`) is the embedded
default: SQLite at `./threadline.db`, the local channel, one `support` agent.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    Field,
    SerializeAsAny,
    field_validator,
)

from threadline.agents.mcp import McpServerSettings
from threadline.agents.providers import auto_provider
from threadline.ambient.settings import AmbientSettings
from threadline.backends.registry import DEFAULT_STORE_URL, backend_for
from threadline.backfill.settings import BackfillSettings
from threadline.bursts.settings import BurstSettings
from threadline.channels.file_settings import FilesSettings, SpeechSettings
from threadline.channels.platform import ChannelSettings
from threadline.channels.registry import DEFAULT_PLATFORM, platform_for, platform_names
from threadline.errors import ConfigError
from threadline.handoff.settings import HandoffNotify, HandoffSettings
from threadline.history.settings import HistorySettings, MemorySettings
from threadline.inspector.settings import InspectorSettings
from threadline.knowledge.settings import KnowledgeSettings
from threadline.people.settings import (
    AccessSettings,
    ApprovalSettings,
    PeopleListSettings,
    PeopleSettings,
    RateSettings,
)
from threadline.plugs import lazy_exports
from threadline.schedules.settings import ScheduleEntry, SchedulerSettings
from threadline.settings_section import KeyPath, Section
from threadline.spend.settings import PriceSettings, SpendSettings
from threadline.tracing.settings import TracingSettings

AUTO_PROVIDER = "auto"  # `model: provider: auto`: see `resolved_provider`


# Field names whose values are credentials, wherever they appear; a platform adds its own
# (`ChannelSettings.secret_fields`) for its `channels:` entries.
SECRET_FIELDS = frozenset({"token", "api_key", "client_secret"})


class StoreSettings(Section):
    """Where conversations are kept; one line switches SQLite to PostgreSQL."""

    url: str = DEFAULT_STORE_URL
    """The database: sqlite:///PATH (relative to where threadline runs) or
    postgresql+asyncpg://USER@HOST/DB for several processes; write a password as ${VARIABLE}."""
    outbox_path: str | None = None
    """The durable outbox file where turns wait while the store is down (default: beside the SQLite
    file, or in the working folder)."""
    busy_timeout: float = Field(default=5.0, gt=0)
    """Seconds a SQLite statement waits for a lock held by another connection before it fails."""

    @field_validator("url")
    @classmethod
    def _known_database(cls, url: str) -> str:
        try:
            backend_for(url)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        except ValueError as exc:  # the URL's own parts (a port that is not a number)
            raise ValueError(f"not a database URL this can read ({exc}); write it as "
                             "sqlite:///PATH or postgresql+asyncpg://USER@HOST:PORT/DB") from None
        return url


class ModelSettings(Section):
    """The default LLM provider (auto: the registry's default provider when its key is set,
    the offline model otherwise; see `threadline.agents.providers.AUTO`).

    `provider` is a provider type (a built-in or registered plug); more providers, by name, go
    under `providers:` (see `threadline.provider_setup`).
    """

    provider: str = AUTO_PROVIDER
    """The default provider type: auto (Anthropic when its key is set, else offline),
    anthropic, openai, offline, or a registered plug."""
    api_key: str | None = None
    """The provider's key, as ${VARIABLE} (default: the provider's usual variable, such as
    ANTHROPIC_API_KEY)."""
    base_url: str | None = None
    """The provider's address, for a proxy or an OpenAI-compatible server (Ollama, vLLM, llama.cpp,
    LM Studio, OpenRouter)."""
    max_tokens: int = Field(default=1024, gt=0)
    """The longest reply a model call may write, in tokens."""
    max_retries: int = Field(default=4, ge=0)
    """How often the SDK retries a rate limited (429), overloaded or failing (5xx) call, with its
    own backoff; the call's timeout covers them."""
    timeout: float = Field(default=120.0, gt=0)
    """Seconds one model call may take, its retries included."""
    summary_model: str | None = None
    """The cheap model that writes rolling summaries (default: the provider's cheap model;
    extractive summaries, without a model, when it has none)."""
    summary_provider: str | None = None
    """The provider (a providers: entry or a type) of summary_model (default: this one)."""


class LogSettings(Section):
    level: Literal["debug", "info", "warning", "error"] = "info"
    """The least important log events shown: debug, info (a line per turn, for services), warning
    or error. THREADLINE_LOG_LEVEL overrides it."""
    format: Literal["auto", "console", "json"] = "auto"
    """console (readable), json (one object a line), or auto: console in a terminal, json
    otherwise. THREADLINE_LOG_FORMAT overrides it."""


class OpsSettings(Section):
    """The health and Prometheus metrics HTTP server."""

    enabled: bool = True
    """Serve /healthz, /readyz, /metrics and the console."""
    host: str = "127.0.0.1"
    """The address the ops server listens on (127.0.0.1: this machine only; 0.0.0.0: every
    interface, then the console needs inspector.token)."""
    port: int = Field(default=9108, ge=0, le=65535)
    """The ops server's port (0: any free port, logged when bound)."""


class AgentChannel(Section):
    """One channel an agent joins, and whether it answers every message there."""

    name: str
    """The channels: entry the agent joins."""
    respond_to_all: bool = False
    """Answer every message there, not only those addressed to the agent."""


class McpAccess(Section):
    """Which MCP tools an agent is offered: entries are a server name or `server/tool`.

    Nothing is offered until `allow` names something; `deny` wins over `allow`.
    """

    allow: list[str] = Field(default_factory=list)
    """MCP servers, or `server/tool` entries, offered to the agent."""
    deny: list[str] = Field(default_factory=list)
    """MCP servers, or `server/tool` entries, never offered (wins over allow)."""


class FallbackModel(Section):
    """One entry of an agent's `model:` list on another provider than the agent's own."""

    provider: str | None = None
    """A providers: entry or a provider type (default: the agent's own provider)."""
    model: str
    """The model name on that provider."""


class AgentSettings(Section):
    description: str = ""
    """What the agent does; shown by /agents and to the other agents."""
    system_prompt: str | None = None
    """The agent's instructions (default: a one-line helpful assistant)."""
    system_prompt_file: str | None = None
    """A file holding the system prompt instead (relative to the config)."""
    provider: str | None = None
    """A providers: entry or a provider type (default: the model: section)."""
    model: str | Annotated[list[str | FallbackModel], Field(min_length=1)] | None = None
    """The model name (default: the provider's, or the provider type's default model); a
    list is asked in order: the next answers the turn when the one before stays unavailable
    (overloaded, down or too slow) past its retries (docs/models.md)."""
    thinking: Literal["default", "off"] | Annotated[int, Field(ge=1024)] = "default"
    """"default" (the model decides; the newest models think), "off", or thinking on with
    this many tokens (at least 1024) on top of the reply's max_tokens."""
    tools: list[str] = Field(default_factory=list)
    """Tools by reference, "module:function"; modules beside the config are found first
    (docs/tools.md)."""
    mcp: McpAccess = Field(default_factory=McpAccess)
    """Which tools of the mcp_servers: the agent is offered (the keys below)."""
    access: PeopleListSettings | None = None
    """Who may ask this agent, on any channel (besides the channel's access: lists)."""
    require_approval: list[str] = Field(default_factory=list)
    """Tools (by the name the model sees) whose calls wait for a person's approval."""
    aliases: list[str] = Field(default_factory=list)
    """Other names that address the agent (@help), matched like its name; none may be another
    agent's name or alias."""
    memory: MemorySettings = Field(default_factory=MemorySettings)
    """How much of the shared history the agent sees (the keys below)."""
    channels: list[AgentChannel] = Field(default_factory=list)
    """The channels the agent joins: names, or {name, respond_to_all} entries."""
    broadcast: bool = False
    """May notify a whole channel in what it posts (Slack's @channel and @here, Discord's
    @everyone and role pings); off: such mentions in its replies are posted inert."""
    sees_images: bool = True
    """False for a model that cannot see: it reads the line naming each image instead."""

    @field_validator("channels", mode="before")
    @classmethod
    def _names_as_entries(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"name": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("tools")
    @classmethod
    def _tool_references(cls, tools: list[str]) -> list[str]:
        for reference in tools:
            if ":" not in reference:
                raise ValueError(f"{reference!r} is not a 'module:function' reference (for "
                                 "example tools:weather)")
        return tools


def _default_channels() -> dict[str, ChannelSettings]:
    settings = platform_for(DEFAULT_PLATFORM).settings
    return {DEFAULT_PLATFORM: settings.model_validate({"type": DEFAULT_PLATFORM})}


def _default_agents() -> dict[str, AgentSettings]:
    return {"support": AgentSettings(description="Answers questions; remembers the conversation.",
                                     channels=[AgentChannel(name=DEFAULT_PLATFORM)])}


def channel_settings(entry: Any) -> Any:
    """A `channels:` entry as its platform's settings model (found by its `type:`)."""
    if not isinstance(entry, Mapping):
        return entry
    kind = entry.get("type")
    if not isinstance(kind, str):
        raise ValueError(f"missing `type:` naming the platform (one of "
                         f"{', '.join(platform_names())})")
    return platform_for(kind).settings.model_validate(entry)


class Settings(Section):
    """The whole deployment. `base_dir` is the config file's folder (relative paths start there)."""

    store: StoreSettings = Field(default_factory=StoreSettings)
    """Where conversations are kept."""
    model: ModelSettings = Field(default_factory=ModelSettings)
    """The default model provider and its limits."""
    spend: SpendSettings = Field(default_factory=SpendSettings)
    """Daily token budgets and prices."""
    log: LogSettings = Field(default_factory=LogSettings)
    """What is logged, and how."""
    ops: OpsSettings = Field(default_factory=OpsSettings)
    """The health, metrics and console HTTP server."""
    inspector: InspectorSettings = Field(default_factory=InspectorSettings)
    """Reply records and the web console."""
    tracing: TracingSettings = Field(default_factory=TracingSettings)
    """OpenTelemetry traces for the operator's tracing tool."""
    people: PeopleSettings = Field(default_factory=PeopleSettings)
    """People's identities across platforms and person memory."""
    history: HistorySettings = Field(default_factory=HistorySettings)
    """How long turns are kept."""
    files: FilesSettings = Field(default_factory=FilesSettings)
    """Files people send: where their bytes are kept, size limits, voice notes."""
    scheduler: SchedulerSettings = Field(default_factory=SchedulerSettings)
    """Scheduled posts and prompts."""
    schedules: dict[str, ScheduleEntry] = Field(default_factory=dict)
    """Schedules kept in the config, by name."""
    handoff: HandoffSettings = Field(default_factory=HandoffSettings)
    """Handing a conversation to a human."""
    knowledge: KnowledgeSettings = Field(default_factory=KnowledgeSettings)
    """The team's documents agents answer from, and who reads which (docs/knowledge.md)."""
    mcp_servers: dict[str, McpServerSettings] = Field(default_factory=dict)
    """Tool servers (Model Context Protocol) agents may use, by name (docs/tools.md)."""
    access: AccessSettings = Field(default_factory=AccessSettings)
    """Who may ask what, and how often."""
    approvals: ApprovalSettings = Field(default_factory=ApprovalSettings)
    """Who may approve a tool call, and for how long."""
    providers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """More model providers by name, for agents on another model (each entry has a type: and that
    provider's keys, listed below)."""
    ambient: AmbientSettings = Field(default_factory=AmbientSettings)
    """Agents that listen in rooms and decide for themselves whether to speak."""
    backfill: BackfillSettings = Field(default_factory=BackfillSettings)
    """Reading what was said before the bot joined a thread or channel."""
    bursts: BurstSettings = Field(default_factory=BurstSettings)
    """Several messages of one person in a row: each its own turn, or answered once."""
    features: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Settings of features other packages add, by feature name (each validated by its feature's
    own settings model; see docs/adding-a-feature.md)."""
    channels: dict[str, SerializeAsAny[ChannelSettings]] = Field(
        default_factory=_default_channels)
    """The channels, by name; each entry's type: names its platform, whose keys are listed below."""
    agents: dict[str, AgentSettings] = Field(default_factory=_default_agents)
    """The agents, by name."""
    shutdown_timeout: float = Field(default=30.0, ge=0)
    """Seconds a stopping process gives turns in flight to finish before it stops the channels."""
    base_dir: Path = Field(default_factory=Path.cwd, exclude=True)

    @field_validator("channels", mode="before")
    @classmethod
    def _platform_settings(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {name: channel_settings(entry) for name, entry in value.items()}
        return value

    def system_prompt(self, agent: str) -> str:
        """The agent's system prompt, read from `system_prompt_file` when that is set."""
        settings = self.agents[agent]
        if settings.system_prompt_file:
            path = self.base_dir / settings.system_prompt_file
            try:
                return path.read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"agents.{agent}.system_prompt_file: cannot read {str(path)!r}"
                                  f" ({exc.strerror}); fix the path (relative to the config)"
                                  ) from exc
        return settings.system_prompt or f"You are {agent}, a helpful assistant."

    def resolved_provider(self) -> str:
        """The default provider's type: as set, or for `auto` the provider registry's choice
        (`threadline.agents.providers.AUTO`: the first whose key was found)."""
        if self.model.provider != AUTO_PROVIDER:
            return self.model.provider
        return auto_provider(key_found=bool(self.model.api_key))


if TYPE_CHECKING:
    from threadline.config_loader import (
        cross_check,
        default_settings,
        load_config_text,
        load_settings,
    )
    from threadline.listening_hosts import (
        MIN_CONSOLE_TOKEN_CHARS,
        addressed_to_loopback,
        console_token_problem,
        is_loopback,
    )

__all__ = [
    "AUTO_PROVIDER", "MIN_CONSOLE_TOKEN_CHARS", "SECRET_FIELDS", "AccessSettings",
    "AgentChannel", "AgentSettings", "ApprovalSettings", "FallbackModel", "FilesSettings",
    "HandoffNotify", "HandoffSettings", "HistorySettings", "InspectorSettings", "KeyPath",
    "LogSettings", "McpAccess", "MemorySettings", "ModelSettings", "OpsSettings",
    "PeopleListSettings", "PeopleSettings", "PriceSettings", "RateSettings", "ScheduleEntry",
    "SchedulerSettings", "Section", "Settings", "SpeechSettings", "SpendSettings",
    "StoreSettings", "TracingSettings", "addressed_to_loopback", "channel_settings",
    "console_token_problem", "cross_check", "default_settings", "is_loopback",
    "load_config_text", "load_settings",
]

# Reading a file (`threadline.config_loader`) and which hosts are this machine's
# (`threadline.listening_hosts`), importable from here as they always were.
__getattr__ = lazy_exports(__name__, {
    **dict.fromkeys(("load_settings", "load_config_text", "default_settings", "cross_check"),
                    "threadline.config_loader"),
    **dict.fromkeys(("is_loopback", "addressed_to_loopback", "console_token_problem",
                     "MIN_CONSOLE_TOKEN_CHARS"), "threadline.listening_hosts"),
})
