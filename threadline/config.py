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

import difflib
import ipaddress
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal, get_args
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from croniter import croniter
from dotenv import dotenv_values
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    ValidationError,
    field_validator,
)

from threadline.agents.mcp import McpServerSettings, check_lists
from threadline.agents.providers import auto_provider, provider_plug
from threadline.backends.registry import DEFAULT_STORE_URL, backend_for
from threadline.channels.platform import ChannelSettings
from threadline.channels.registry import DEFAULT_PLATFORM, platform_for, platform_names
from threadline.errors import ConfigError
from threadline.history.assembler import AssemblerOptions
from threadline.provider_setup import key_variable
from threadline.provider_setup import problems as provider_problems
from threadline.tracing.export import TracingOptions

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_URL_PASSWORD = re.compile(r"^[\w+]+://[^/@:]*:([^@/]+)@")
AUTO_PROVIDER = "auto"  # `model: provider: auto`: see `resolved_provider`
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
# Field names whose values are credentials, wherever they appear; a platform adds its own
# (`ChannelSettings.secret_fields`) for its `channels:` entries.
SECRET_FIELDS = frozenset({"token", "api_key", "client_secret"})

KeyPath = tuple[str | int, ...]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class StoreSettings(_Section):
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
        return url


class ModelSettings(_Section):
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


class PriceSettings(_Section):
    """US dollars per million tokens of each kind (from the provider's price list)."""

    input: float = Field(default=0.0, ge=0)
    """US dollars per million input tokens."""
    output: float = Field(default=0.0, ge=0)
    """US dollars per million output tokens."""
    cache_read: float = Field(default=0.0, ge=0)
    """US dollars per million tokens read from the prompt cache."""
    cache_write: float = Field(default=0.0, ge=0)
    """US dollars per million tokens written to the prompt cache."""


class SpendSettings(_Section):
    """Daily token budgets (unset: no cap) and prices for an estimated cost.

    A budget counts every token a provider reports (input, cache reads and writes, output) and
    resets at midnight in `timezone`. `prices` are keyed "provider/model" (e.g.
    "anthropic/claude-sonnet-5-5") or just the model; there are no built-in prices.
    """

    timezone: str = "UTC"
    """The IANA time zone whose midnight resets the daily budgets."""
    per_agent_daily_tokens: int | None = Field(default=None, gt=0)
    """Tokens each agent may use a day, across all conversations (unset: no cap)."""
    per_conversation_daily_tokens: int | None = Field(default=None, gt=0)
    """Tokens all agents together may use a day in one conversation (unset: no cap)."""
    per_person_daily_tokens: int | None = Field(default=None, gt=0)
    """Tokens all agents together may use a day answering one person (unset: no cap)."""
    agent_daily_tokens: dict[str, Annotated[int, Field(gt=0)]] = Field(default_factory=dict)
    """Agents with a daily cap of their own instead of per_agent_daily_tokens, by name."""
    reserve_per_turn: int | None = Field(default=None, gt=0)
    """Tokens held for a turn in flight before the model is called (default: its prompt budget plus
    its reply limit)."""
    prices: dict[str, PriceSettings] = Field(default_factory=dict)
    """Prices for the estimated cost in /metrics and check, keyed "provider/model" or "model"; none
    are built in."""

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, timezone: str) -> str:
        try:
            ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError("an IANA time zone such as UTC or Europe/Berlin") from None
        return timezone


class LogSettings(_Section):
    level: Literal["debug", "info", "warning", "error"] = "info"
    """The least important log events shown: debug, info (a line per turn, for services), warning
    or error. THREADLINE_LOG_LEVEL overrides it."""
    format: Literal["auto", "console", "json"] = "auto"
    """console (readable), json (one object a line), or auto: console in a terminal, json
    otherwise. THREADLINE_LOG_FORMAT overrides it."""


class OpsSettings(_Section):
    """The health and Prometheus metrics HTTP server."""

    enabled: bool = True
    """Serve /healthz, /readyz, /metrics and the console."""
    host: str = "127.0.0.1"
    """The address the ops server listens on (127.0.0.1: this machine only; 0.0.0.0: every
    interface, then the console needs inspector.token)."""
    port: int = Field(default=9108, ge=0, le=65535)
    """The ops server's port (0: any free port, logged when bound)."""


class InspectorSettings(_Section):
    """Reply records (what each agent saw, for every reply) and the web console that shows them.

    `retention_days` deletes records older than that many days (None keeps them); the
    console is served under `/console` on the ops server, and needs `token` (as
    `${VARIABLE}`) when the ops server listens beyond 127.0.0.1.
    """

    records: bool = True
    """Keep a reply record of what each agent saw and did for every reply."""
    retention_days: float | None = Field(default=30, gt=0)
    """Delete reply records older than this many days (null keeps them); the history is not
    touched."""
    console: bool = True
    """Serve the web console at /console/ on the ops server."""
    token: str | None = None
    """The console's token, as ${VARIABLE}; required when ops.host is not a loopback address."""


class TracingSettings(_Section):
    """OpenTelemetry traces of every turn, exported over OTLP/HTTP to the operator's tracing
    tool (the `tracing` extra; docs/tracing.md).

    Each key left unset is taken from the standard variables: `OTEL_TRACES_EXPORTER=otlp` turns
    tracing on, `OTEL_EXPORTER_OTLP_ENDPOINT` (and `OTEL_EXPORTER_OTLP_HEADERS` for a key, which
    stays out of this file), `OTEL_SERVICE_NAME`,
    `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`.
    """

    enabled: bool | None = None
    """Export traces (null: only when OTEL_TRACES_EXPORTER names otlp)."""
    endpoint: str | None = None
    """The OTLP/HTTP base URL, such as http://127.0.0.1:4318 (/v1/traces is added; null:
    OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318)."""
    service_name: str | None = None
    """The service.name traces carry (null: OTEL_SERVICE_NAME, else threadline)."""
    capture_message_content: bool | None = None
    """Put message content (prompts, replies, tool arguments and results) on the spans; off
    unless set here or by OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true."""
    trace_url: str | None = None
    """The console's link to a reply's trace in your tracing tool, with {trace_id} where the
    id goes, such as https://tempo.example/trace/{trace_id} (null: no link)."""

    @field_validator("trace_url")
    @classmethod
    def _has_placeholder(cls, value: str | None) -> str | None:
        if value is not None and "{trace_id}" not in value:
            raise ValueError("write {trace_id} where the trace's id goes, such as "
                             "https://tempo.example/trace/{trace_id}")
        return value

    def options(self) -> TracingOptions:
        return TracingOptions(enabled=self.enabled, endpoint=self.endpoint,
                              service_name=self.service_name,
                              capture_message_content=self.capture_message_content)


_ASSEMBLER = AssemblerOptions()


class MemorySettings(_Section):
    """The `AssemblerOptions` a config may set: how much of the shared history an agent sees.

    Defaults are the assembler's own; the limits are stated here so a wrong value is reported
    with its file, line and key.
    """

    token_budget: int = Field(default=_ASSEMBLER.token_budget, ge=50)
    """Tokens of history (summary, recalled and kept turns) in each prompt."""
    addressed_only_mode: bool = _ASSEMBLER.addressed_only_mode
    """See only the turns addressed to or written by this agent (plus the few just before an
    addressed turn), not the whole channel."""
    rolling_summary_threshold: int = Field(default=_ASSEMBLER.rolling_summary_threshold, ge=2)
    """Past this many kept turns, the oldest are folded into one stored summary per agent."""
    time_window_minutes: int | None = Field(default=_ASSEMBLER.time_window_minutes, gt=0)
    """Load only turns from the last this many minutes (null: no time limit)."""
    max_turns_to_load: int = Field(default=_ASSEMBLER.max_turns_to_load, gt=0)
    """The most recent turns loaded from the store before filtering and budgeting."""
    recall: bool = _ASSEMBLER.recall
    """Search the whole conversation for what the new message asks about and add the best earlier
    turns."""
    recall_limit: int = Field(default=_ASSEMBLER.recall_limit, ge=0)
    """The fewest recall hits asked for (more when the budget has room)."""
    recall_by_meaning: bool = _ASSEMBLER.recall_by_meaning
    """Recall and conversation_search also find turns by meaning, beside their words, when the
    threadline[embeddings] extra is installed and the backend keeps vectors (false: by words
    only)."""
    person_memory: bool | None = None
    """Also find the person's own words from other conversations this one may see (null: follow
    people.memory)."""

    def options(self, people_memory: bool = False) -> AssemblerOptions:
        """The assembler's options with these settings applied; `people_memory` is the
        deployment's `people.memory`, which `person_memory` overrides when set."""
        chosen = people_memory if self.person_memory is None else self.person_memory
        return replace(_ASSEMBLER, **self.model_dump(exclude={"person_memory"}),
                       person_memory=chosen)


class PeopleSettings(_Section):
    """People: one person's identities across platforms, and what agents remember of them.

    `memory` turns person memory on for every agent (an agent's `memory.person_memory`
    overrides it). `link_codes` lets a person link their own identities: `/link` in a DM with
    the bot gives a code that, said in a DM on another platform within `code_minutes`, links
    the two.
    """

    memory: bool = False
    """Person memory for every agent: recall and search also find the person's own words from other
    conversations (agents.NAME.memory.person_memory overrides it)."""
    link_codes: bool = True
    """Let a person link their own identities across platforms with /link in a DM."""
    code_minutes: float = Field(default=10, gt=0, le=24 * 60)
    """How long a /link code stays valid, in minutes."""


class HistorySettings(_Section):
    """How long turns are kept: `retention_days` for all, `retention_days_for` per conversation
    id or workspace (`slack:T123`, `telegram:-100456`), the longest matching key winning
    (None keeps forever). Pruning runs in the background every `prune_every_minutes`.
    `answer_edits`: a person's edit of a message already answered is stored, and answered
    again only when this is on (a message not answered yet is always answered as edited)."""

    retention_days: float | None = Field(default=None, gt=0)
    """Delete turns older than this many days (null keeps them forever)."""
    retention_days_for: dict[str, Annotated[float, Field(gt=0)] | None] = Field(
        default_factory=dict)
    """Retention per conversation id or workspace (slack:T123, telegram:-100456), the longest
    matching key winning; null keeps forever."""
    prune_every_minutes: float = Field(default=60, gt=0)
    """How often old turns are pruned in the background."""
    answer_edits: bool = False
    """Answer a person's edit of a message already answered again (a message not answered yet
    is always answered as edited; the edit is stored either way)."""


class SchedulerSettings(_Section):
    """Scheduled turns (`threadline.schedules`): times are read in the person's zone where the
    platform says (Slack), else `channel_timezones[channel]`, else `timezone`. A slot that
    fell due while no process ran is posted late (with a note, when over `late_after`
    seconds) within `grace_hours`, else skipped. `admins` (identities such as `slack:T1:U7`)
    may cancel anyone's schedule; `tool` gives every agent the `schedule` tool."""

    enabled: bool = True
    """Run scheduled posts and prompts."""
    timezone: str = "UTC"
    """The zone schedule times are read in when neither the platform nor channel_timezones gives
    one."""
    channel_timezones: dict[str, str] = Field(default_factory=dict)
    """A time zone per channel name, for times said there."""
    poll_interval: float = Field(default=1.0, gt=0)
    """Seconds between two looks for schedules that fell due."""
    late_after: float = Field(default=60.0, ge=0)
    """A slot posted more than this many seconds late carries a note saying so."""
    grace_hours: float = Field(default=24.0, gt=0)
    """A slot that fell due while no process ran is still posted within this many hours, else
    skipped."""
    admins: list[str] = Field(default_factory=list)
    """Identities (slack:T1:U7) that may cancel anyone's schedule."""
    tool: bool = True
    """Give every agent the schedule tool."""


class SpeechSettings(_Section):
    """Speech to text for voice notes: an OpenAI-compatible `/audio/transcriptions` endpoint
    (a hosted one, or a local whisper server). The key is read from `api_key_env`."""

    base_url: str
    """The endpoint's base URL (…/v1); /audio/transcriptions is added."""
    model: str = "whisper-1"
    """The transcription model's name."""
    api_key_env: str | None = None
    """The environment variable holding the endpoint's key (none: no key is sent)."""


class FilesSettings(_Section):
    """Files people send (pictures, documents, voice): kept with their turn. Bytes up to
    `inline_max_bytes` are in the database, larger ones in `directory`. A file over a
    channel's `max_file_mb` (`max_file_mb_for: {channel: MB}` per channel) is refused with a
    note and the message's text still answered. Voice notes are transcribed only with
    `speech` set."""

    enabled: bool = True
    """Keep files sent with turns (off: only their text is answered)."""
    directory: str = "threadline-files"
    """The folder files over inline_max_bytes are written to."""
    inline_max_bytes: int = Field(default=256 * 1024, ge=0)
    """Files up to this many bytes are kept in the database itself."""
    max_file_mb: float = Field(default=20, gt=0)
    """The largest file kept, in MB; a larger one is refused with a note."""
    max_file_mb_for: dict[str, Annotated[float, Field(gt=0)]] = Field(default_factory=dict)
    """A different largest file per channel name, in MB."""
    speech: SpeechSettings | None = None
    """Speech to text for voice notes (none: voice notes are not transcribed)."""


class ScheduleEntry(_Section):
    """A schedule the YAML keeps (`schedules: {name: ...}`): `message` posted as written or
    `prompt` answered by `agent` (default: the channel's first), at `at` once or on `cron`,
    in `conversation` (its id, `slack:T1:C0REPORTS`) through `channel`."""

    channel: str
    """The channels: entry it posts through."""
    conversation: str
    """The conversation id it posts in (slack:T1:C0REPORTS)."""
    cron: str | None = None
    """A cron expression, for a recurring schedule."""
    at: str | None = None
    """A time, for a schedule that runs once."""
    message: str | None = None
    """Text posted as written."""
    prompt: str | None = None
    """A prompt the agent answers; its answer is posted."""
    agent: str | None = None
    """The agent that answers prompt (default: the channel's first)."""
    timezone: str | None = None
    """The zone cron and at are read in (default: the scheduler's)."""


class HandoffNotify(_Section):
    """Where the team hears of a handoff: a channel of this config and a chat id on it (a
    Slack channel id, a Telegram group id, a Discord channel id)."""

    channel: str
    """The channels: entry the team is told on."""
    chat: str
    """The chat id there (a Slack channel id, a Telegram group id, a Discord channel id)."""


class HandoffSettings(_Section):
    """Human handoff (`threadline.handoff`): `/human`, `/bot on` and the `hand_off` tool. The
    bot stays quiet `pause_hours` after the last human reply. `team` (identities) are the
    humans who answer; empty: anyone but the customer and bots. The tool is offered only
    with `notify` set (someone to hand to)."""

    enabled: bool = True
    """Offer /human, /bot on and the hand_off tool."""
    pause_hours: float = Field(default=24.0, gt=0)
    """The bot stays quiet this many hours after the last human reply."""
    team: list[str] = Field(default_factory=list)
    """Identities of the humans who answer (empty: anyone but the customer and bots)."""
    notify: HandoffNotify | None = None
    """Where the team hears of a handoff; the hand_off tool is offered only when it is set."""
    tool: bool = True
    """Offer agents the hand_off tool (when notify is set)."""


class AgentChannel(_Section):
    """One channel an agent joins, and whether it answers every message there."""

    name: str
    """The channels: entry the agent joins."""
    respond_to_all: bool = False
    """Answer every message there, not only those addressed to the agent."""


class McpAccess(_Section):
    """Which MCP tools an agent is offered: entries are a server name or `server/tool`.

    Nothing is offered until `allow` names something; `deny` wins over `allow`.
    """

    allow: list[str] = Field(default_factory=list)
    """MCP servers, or `server/tool` entries, offered to the agent."""
    deny: list[str] = Field(default_factory=list)
    """MCP servers, or `server/tool` entries, never offered (wins over allow)."""


class PeopleListSettings(_Section):
    """Who may ask: platform identities (`telegram:42`) or persons (`person-...`)."""

    allow: list[str] = Field(default_factory=list)
    """Who may ask (everyone when empty)."""
    deny: list[str] = Field(default_factory=list)
    """Who may not ask (wins over allow)."""


class RateSettings(_Section):
    """At most `turns` turns per person every `per_seconds` seconds."""

    turns: int = Field(ge=1)
    """Turns allowed in the window."""
    per_seconds: float = Field(gt=0)
    """The window, in seconds."""


class AccessSettings(_Section):
    """`access:` who may ask what (see `threadline.people.access`), and how often."""

    channels: dict[str, PeopleListSettings] = Field(default_factory=dict)
    """Who may ask on each channel, by channel name (the keys below)."""
    admins: list[str] = Field(default_factory=list)
    """Identities or persons allowed the admin commands (everyone when empty)."""
    rate_limit: RateSettings | None = None
    """Per person, across conversations (off when unset); over it: one polite reply, then
    silence."""
    rate_limit_reply: str = ("You are sending messages faster than I can answer. "
                             "Please wait a moment.")
    """The reply sent once to a person over the rate limit."""


class ApprovalSettings(_Section):
    """`approvals:` who may approve a tool call (the asker when empty), and for how long."""

    approvers: list[str] = Field(default_factory=list)
    """Identities or persons who may approve (default: the person who asked)."""
    timeout_seconds: float = Field(default=600.0, gt=0)
    """Seconds a request waits for an answer before the call is refused as expired."""


class FallbackModel(_Section):
    """One entry of an agent's `model:` list on another provider than the agent's own."""

    provider: str | None = None
    """A providers: entry or a provider type (default: the agent's own provider)."""
    model: str
    """The model name on that provider."""


class AgentSettings(_Section):
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
    """Other names that address the agent (@help), matched like its name."""
    memory: MemorySettings = Field(default_factory=MemorySettings)
    """How much of the shared history the agent sees (the keys below)."""
    channels: list[AgentChannel] = Field(default_factory=list)
    """The channels the agent joins: names, or {name, respond_to_all} entries."""
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
                raise ValueError(f"a 'module:function' reference, found {reference!r}")
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
        raise ValueError("a `type:` naming the platform")
    return platform_for(kind).settings.model_validate(entry)


class Settings(_Section):
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
    mcp_servers: dict[str, McpServerSettings] = Field(default_factory=dict)
    """Tool servers (Model Context Protocol) agents may use, by name (docs/tools.md)."""
    access: AccessSettings = Field(default_factory=AccessSettings)
    """Who may ask what, and how often."""
    approvals: ApprovalSettings = Field(default_factory=ApprovalSettings)
    """Who may approve a tool call, and for how long."""
    providers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """More model providers by name, for agents on another model (each entry has a type: and that
    provider's keys, listed below)."""
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


# -- loading ----------------------------------------------------------------------------------


def _line_index(node: yaml.Node, path: KeyPath = ()) -> Iterator[tuple[KeyPath, int]]:
    """Every key path in a composed YAML document with its 1-based line."""
    yield path, node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield (*path, str(key.value)), key.start_mark.line + 1
            yield from _line_index(value, (*path, str(key.value)))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from _line_index(item, (*path, index))


class _Source:
    """A config file's text with a key path -> line index, for error messages."""

    def __init__(self, path: Path, text: str | None = None) -> None:
        self.path = path
        try:
            text = path.read_text(encoding="utf-8") if text is None else text
        except FileNotFoundError as exc:
            raise ConfigError(f"{path}: no such config file; create one with "
                              f"`threadline init {path}`") from exc
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the config file ({exc.strerror})") from exc
        try:
            node = yaml.compose(text, Loader=yaml.SafeLoader)
            self.data: Any = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
            problem = getattr(exc, "problem", None) or str(exc)
            raise ConfigError(f"{where}: not valid YAML: {problem}") from exc
        self.lines: dict[KeyPath, int] = dict(_line_index(node)) if node is not None else {}

    def where(self, path: KeyPath) -> str:
        """`FILE:LINE: key.path` for the deepest part of `path` the file has."""
        for end in range(len(path), -1, -1):
            if path[:end] in self.lines:
                line = self.lines[path[:end]]
                break
        else:
            line = 1
        dotted = ".".join(str(p) for p in path) or "(top level)"
        return f"{self.path}:{line}: {dotted}"


def _environment(base_dir: Path, env: Mapping[str, str] | None) -> dict[str, str]:
    dotenv_file = base_dir / ".env"
    values = {k: v for k, v in dotenv_values(dotenv_file).items() if v is not None} \
        if dotenv_file.is_file() else {}
    values.update(os.environ if env is None else env)
    return values


def _platform_secrets(entry: Any) -> frozenset[str]:
    """The secret field names of a raw `channels:` entry's platform (none if it is unknown:
    that is reported once the entry is validated)."""
    kind = entry.get("type") if isinstance(entry, dict) else None
    try:
        return platform_for(kind).settings.secret_fields if isinstance(kind, str) else frozenset()
    except ConfigError:
        return frozenset()


def _resolve(value: Any, path: KeyPath, source: _Source, env: Mapping[str, str],
             secrets: frozenset[str] = SECRET_FIELDS) -> Any:
    """`${VAR}` references replaced; literal secrets and missing variables refused."""
    if len(path) == 2 and path[0] == "channels":
        secrets = secrets | _platform_secrets(value)
    if isinstance(value, dict):
        return {k: _resolve(v, (*path, str(k)), source, env, secrets)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, (*path, i), source, env, secrets) for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value
    secret = bool(path) and path[-1] in secrets
    if secret and not _REFERENCE.fullmatch(value.strip()):
        raise ConfigError(
            f"{source.where(path)}: a literal secret is not allowed in the config file; put it in "
            f"the environment or .env and write ${{{_suggested_variable(path)}}} here")
    password = _URL_PASSWORD.search(value) if path == ("store", "url") else None
    if password and not _REFERENCE.fullmatch(password.group(1)):
        raise ConfigError(
            f"{source.where(path)}: the database password is written in the config file; "
            "write it as ${DATABASE_PASSWORD} (or the whole URL as ${DATABASE_URL}) and set "
            "the variable in the environment or .env")

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env or (secret and not env[name]):
            raise ConfigError(
                f"{source.where(path)}: environment variable {name} is not set; export it or "
                f"add `{name}=...` to {source.path.parent / '.env'}")
        return env[name]

    return _REFERENCE.sub(substitute, value)


def _suggested_variable(path: KeyPath) -> str:
    parts = [str(p) for p in path if isinstance(p, str) and p not in ("channels", "model")]
    return "_".join(parts).upper() or "SECRET"


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The settings model an annotation holds (`X`, `X | None`, `dict[str, X]`, `list[X]`)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for arg in get_args(annotation) if (m := _model_in(arg)) is not None), None)


def _known_keys(model: type[BaseModel], loc: Sequence[Any]) -> list[str]:
    """The settings a model accepts at `loc` (a path ending in the key that was not known)."""
    current: type[BaseModel] | None = model
    for part in loc[:-1]:
        if current is None:
            return []
        field = current.model_fields.get(str(part))
        if field is not None:
            current = _model_in(field.annotation)
        # else: a key of a mapping or an index of a list; stay on its value's model
    return list(current.model_fields) if current is not None else []


# Settings whose values are secrets, beside the secret fields: an error never shows them.
_SECRET_MAPPINGS = frozenset({"env", "headers"})


def _describe_error(error: Mapping[str, Any], model: type[BaseModel] | None = None, *,
                    secrets: frozenset[str] = SECRET_FIELDS) -> str:
    kind = error["type"]
    found = error.get("input")
    if kind == "missing":
        return "required setting is missing"
    if kind == "extra_forbidden":
        key = str(error["loc"][-1]) if error.get("loc") else ""
        known = _known_keys(model, error["loc"]) if model is not None else []
        close = difflib.get_close_matches(key, [k for k in known if k != "base_dir"], n=1)
        hint = f"did you mean {close[0]!r}?" if close else "check the spelling"
        return f"unknown setting ({hint} see `threadline init` for every option)"
    message = str(error["msg"]).removeprefix("Value error, ").removeprefix("Input should be ")
    shown = repr(found)
    if any(str(part) in secrets | _SECRET_MAPPINGS for part in error.get("loc", ())):
        shown = "a value not shown (it is a secret)"
    elif len(shown) > 60:
        shown = shown[:57] + "..."
    return f"expected {message[0].lower()}{message[1:]}, found {shown}"


def _error_path(loc: tuple[Any, ...]) -> KeyPath:
    return tuple(part if isinstance(part, int) else str(part) for part in loc)


def _validated_channels(channels: Any, source: _Source) -> tuple[Any, list[str]]:
    """Each `channels:` entry validated by its platform's model, and the problems (naming file,
    line and key) of those that are not valid."""
    if not isinstance(channels, dict):
        return channels, []  # Settings says what it expected
    validated: dict[str, Any] = {}
    problems: list[str] = []
    for name, entry in channels.items():
        where = ("channels", str(name))
        kind = entry.get("type") if isinstance(entry, dict) else None
        if isinstance(entry, dict) and not isinstance(kind, str):
            problems.append(f"{source.where(where)}: missing `type:` (one of "
                            f"{', '.join(platform_names())})")
            continue
        try:
            validated[name] = channel_settings(entry)
        except ConfigError as exc:
            problems.append(f"{source.where((*where, 'type'))}: {exc}")
        except ValidationError as exc:
            model = platform_for(str(entry["type"])).settings
            secrets = SECRET_FIELDS | model.secret_fields
            problems += [f"{source.where(where + _error_path(tuple(e['loc'])))}: "
                         f"{_describe_error(e, model, secrets=secrets)}" for e in exc.errors()]
    return validated, problems


def load_settings(path: str | Path, *, env: Mapping[str, str] | None = None) -> Settings:
    """Read, resolve and validate a config file; every problem names file, line and key."""
    path = Path(path)
    return _settings(_Source(path), path.resolve().parent, env)


def default_settings(*, env: Mapping[str, str] | None = None) -> Settings:
    """The built-in default (what an empty file gives), for a command run without a config;
    relative paths start in the working folder."""
    return _settings(_Source(Path("(built-in default)"), text=""), Path.cwd(), env)


def _settings(source: _Source, base_dir: Path, env: Mapping[str, str] | None) -> Settings:
    raw = source.data if source.data is not None else {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{source.path}:1: expected a mapping of settings (store:, channels:,"
                          f" agents:), found {type(raw).__name__}")
    environment = _environment(base_dir, env)
    resolved = _resolve(raw, (), source, environment)
    problems: list[str] = []
    if "channels" in resolved:
        resolved["channels"], problems = _validated_channels(resolved["channels"], source)
    model = resolved.get("model")
    if (isinstance(model, dict) and "api_key" not in model) or model is None:
        # The key is a secret, so it is found in the environment without being named.
        variable = key_variable(str((model or {}).get("provider", AUTO_PROVIDER)),
                                base_url=(model or {}).get("base_url"))
        resolved["model"] = {**(model or {}),
                             "api_key": environment.get(variable) or None if variable else None}
    try:
        settings = Settings.model_validate({**resolved, "base_dir": base_dir})
    except ValidationError as exc:
        problems += [f"{source.where(_error_path(tuple(e['loc'])))}: "
                     f"{_describe_error(e, Settings)}" for e in exc.errors()]
        raise ConfigError("\n".join(problems)) from exc
    problems = problems or cross_check(settings, source)
    if problems:
        raise ConfigError("\n".join(problems))
    return settings


def is_loopback(host: str) -> bool:
    """Whether a bind address is reachable only from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def addressed_to_loopback(host_header: str) -> bool:
    """Whether an HTTP `Host` header names this machine by a loopback address or localhost.

    A server bound to loopback answers only such requests: a web page elsewhere that points
    its own DNS name here (DNS rebinding) sends its own name as the Host, and is refused."""
    return is_loopback(urlsplit(f"//{host_header}").hostname or "")


MIN_CONSOLE_TOKEN_CHARS = 24


def console_token_problem(host: str, token: str | None) -> str | None:
    """Why the console may not be served on `host` with this token, or None.

    Beyond loopback it needs a token, and one long enough not to be guessed (the login is
    rate limited, but a short token falls to patience)."""
    if is_loopback(host):
        return None
    if not token:
        return (f"the console would listen on {host!r}, beyond this machine, without a token: "
                "set inspector.token: ${THREADLINE_CONSOLE_TOKEN}, or bind to 127.0.0.1")
    if len(token) < MIN_CONSOLE_TOKEN_CHARS:
        return (f"the console token is {len(token)} characters; beyond this machine ({host!r}) "
                f"it must be at least {MIN_CONSOLE_TOKEN_CHARS} (for example the output of "
                "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`), or bind to "
                "127.0.0.1")
    return None


def _missing_key(settings: Settings, source: _Source) -> list[str]:
    """The default provider needs a key and none was set or found."""
    try:
        plug = provider_plug(settings.model.provider)
    except ConfigError:
        return []  # an unknown or uninstalled provider is reported with the providers
    if not plug.key_required or settings.model.api_key:
        return []
    return [f"{source.where(('model', 'api_key'))}: provider {plug.name} needs api_key: "
            f"${{{plug.key_variable}}}"]


def cross_check(settings: Settings, source: _Source) -> list[str]:
    """Problems between sections: unknown channels, bad names, settings that do not fit."""
    problems: list[str] = []
    for name in (*settings.channels, *settings.agents):
        if not _NAME.match(name):
            section = "channels" if name in settings.channels else "agents"
            problems.append(f"{source.where((section, name))}: expected a lower-case name "
                            f"(letters, digits, - and _), found {name!r}")
    for agent, agent_settings in settings.agents.items():
        for index, joined in enumerate(agent_settings.channels):
            if joined.name not in settings.channels:
                known = ", ".join(sorted(settings.channels)) or "none"
                problems.append(f"{source.where(('agents', agent, 'channels', index))}: unknown "
                                f"channel {joined.name!r} (channels defined: {known})")
        for key in ("allow", "deny"):
            entries = getattr(agent_settings.mcp, key)
            problems += [f"{source.where(('agents', agent, 'mcp', key))}: {problem}"
                         for problem in check_lists(settings.mcp_servers, entries)]
        if agent_settings.system_prompt and agent_settings.system_prompt_file:
            problems.append(f"{source.where(('agents', agent))}: set system_prompt or "
                            "system_prompt_file, not both")
    for name in settings.access.channels:
        if name not in settings.channels:
            problems.append(f"{source.where(('access', 'channels', name))}: unknown channel "
                            f"{name!r} (channels: {', '.join(sorted(settings.channels))})")
    for name, channel in settings.channels.items():
        problems += [f"{source.where(('channels', name))}: {problem}"
                     for problem in channel.problems()]
    inspector = settings.inspector
    unsafe = console_token_problem(settings.ops.host, inspector.token)
    if settings.ops.enabled and inspector.console and unsafe:
        problems.append(f"{source.where(('inspector', 'token'))}: {unsafe} (the console is "
                        "served on ops.host; or set inspector.console: false)")
    problems += _missing_key(settings, source)
    for agent in settings.spend.agent_daily_tokens:
        if agent not in settings.agents:
            problems.append(f"{source.where(('spend', 'agent_daily_tokens', agent))}: unknown "
                            f"agent {agent!r} (agents: {', '.join(sorted(settings.agents))})")
    problems += [f"{source.where(path)}: {problem}" for path, problem in _timing_problems(settings)]
    if not problems:
        problems += [f"{source.where(path)}: {problem}"
                     for path, problem in provider_problems(settings)]
    return problems


def _timing_problems(settings: Settings) -> Iterator[tuple[KeyPath, str]]:
    """Schedules and handoff naming channels, agents and time zones that exist."""
    zones: list[tuple[KeyPath, str]] = [(("scheduler", "timezone"), settings.scheduler.timezone)]
    zones += [(("scheduler", "channel_timezones", c), z)
              for c, z in settings.scheduler.channel_timezones.items()]
    for name, entry in settings.schedules.items():
        where: KeyPath = ("schedules", name)
        if entry.channel not in settings.channels:
            yield (*where, "channel"), f"unknown channel {entry.channel!r}"
        if entry.agent is not None and entry.agent not in settings.agents:
            yield (*where, "agent"), f"unknown agent {entry.agent!r}"
        if (entry.cron is None) == (entry.at is None):
            yield where, "set cron (recurring) or at (once), exactly one"
        elif entry.cron is not None and not croniter.is_valid(entry.cron):
            yield (*where, "cron"), (f"{entry.cron!r} is not a cron expression (minute hour "
                                     "day month weekday, for example '0 9 * * 1')")
        if (entry.message is None) == (entry.prompt is None):
            yield where, "set message (posted as written) or prompt (the agent answers it)"
        if entry.timezone is not None:
            zones.append(((*where, "timezone"), entry.timezone))
    for path, name in zones:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            yield path, f"unknown time zone {name!r} (an IANA name such as 'Europe/Paris')"
    notify = settings.handoff.notify
    if notify is not None and notify.channel not in settings.channels:
        yield ("handoff", "notify", "channel"), f"unknown channel {notify.channel!r}"
