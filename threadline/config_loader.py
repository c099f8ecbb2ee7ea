"""Reading a config file: YAML with line numbers, `${VAR}` references resolved from the
environment and `.env`, validation into `Settings`, and the checks between sections; every
problem a `ConfigError` naming the file, the line and the key path."""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, get_args
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from croniter import croniter
from dotenv import dotenv_values
from pydantic import (
    BaseModel,
    ValidationError,
)

from threadline.agents.mcp import check_lists
from threadline.agents.providers import provider_plug
from threadline.channels.registry import platform_for, platform_names
from threadline.config import AUTO_PROVIDER, SECRET_FIELDS, Settings, channel_settings
from threadline.errors import ConfigError
from threadline.history.addressing import normalize_mention
from threadline.listening_hosts import console_token_problem
from threadline.provider_setup import key_variable
from threadline.provider_setup import problems as provider_problems
from threadline.settings_section import KeyPath

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


_URL_PASSWORD = re.compile(r"^[\w+]+://[^/@:]*:([^@/]+)@")


_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


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
                    written: Any = None, secrets: frozenset[str] = SECRET_FIELDS) -> str:
    """One validation error as a sentence. Pydantic's own ("Input should be a valid integer")
    read as "expected ..., found VALUE"; our validators' messages are whole sentences and are
    shown as written. A value that came from `${VARIABLE}` (`written`, the file's text) is
    shown as that reference, never as its value, which may be a secret."""
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
    from_environment = isinstance(written, str) and _REFERENCE.search(written) is not None
    if kind == "value_error":
        message = str(error["msg"]).removeprefix("Value error, ")
        if from_environment and isinstance(found, str) and found:
            message = message.replace(found, str(written))
        return message
    # Pydantic's second clause repeats the first ("a valid integer, unable to parse ...").
    message = str(error["msg"]).removeprefix("Input should be ").split(", ")[0]
    shown = f"{written} (from the environment)" if from_environment else repr(found)
    secret = any(str(part) in secrets | _SECRET_MAPPINGS for part in error.get("loc", ()))
    if secret and not from_environment:  # a `${VARIABLE}` reference is no secret itself
        shown = "a value not shown (it is a secret)"
    elif len(shown) > 60:
        shown = shown[:57] + "..."
    return f"expected {message[0].lower()}{message[1:]}, found {shown}"


def _written(data: Any, path: KeyPath) -> Any:
    """The value at `path` as the file has it (`${VARIABLE}` unresolved), or None."""
    for part in path:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


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
            for e in exc.errors():
                path = where + _error_path(tuple(e["loc"]))
                problem = _describe_error(e, model, written=_written(source.data, path),
                                          secrets=secrets)
                problems.append(f"{source.where(path)}: {problem}")
    return validated, problems


def load_settings(path: str | Path, *, env: Mapping[str, str] | None = None) -> Settings:
    """Read, resolve and validate a config file; every problem names file, line and key."""
    path = Path(path)
    return _settings(_Source(path), path.resolve().parent, env)


def load_config_text(text: str, path: Path, *, env: Mapping[str, str] | None = None
                     ) -> Settings:
    """`load_settings` for a config not written yet (`threadline init` reads what it will
    write); `path` is where it will be."""
    return _settings(_Source(path, text=text), path.resolve().parent, env)


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
        for e in exc.errors():
            path = _error_path(tuple(e["loc"]))
            problems.append(f"{source.where(path)}: "
                            f"{_describe_error(e, Settings, written=_written(source.data, path))}")
        raise ConfigError("\n".join(problems)) from exc
    problems = problems or cross_check(settings, source)
    if problems:
        raise ConfigError("\n".join(problems))
    return settings


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
    problems += [f"{source.where(path)}: {problem}" for path, problem in _alias_clashes(settings)]
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


def _alias_clashes(settings: Settings) -> Iterator[tuple[KeyPath, str]]:
    """Aliases that would address two agents at once: one equal to another agent's name or
    alias (compared as mentions are: case and a leading @ ignored), where both would answer."""
    owners: dict[str, str] = {normalize_mention(name): name for name in settings.agents}
    for agent, agent_settings in settings.agents.items():
        for index, alias in enumerate(agent_settings.aliases):
            key = normalize_mention(alias)
            owner = owners.setdefault(key, agent)
            if owner != agent:
                what = "the name" if owner == key else "an alias"
                yield (("agents", agent, "aliases", index),
                       f"{alias!r} is already {what} of agent {owner!r}, so @{key} would "
                       "address both and both would answer; give each agent its own aliases")


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
