"""`threadline check CONFIG`: is the config valid, and does every connection work?

Each channel is built from its settings and asked for its own `check()`, which works before the
channel starts: it asks the platform who the bot is and reports what would keep the bot deaf or
mute (missing scopes, privacy mode, intents) as warnings. Each model provider the agents use is
tried with its plug's own check (a model list: proves the key and the address); each MCP server
is connected and its tools listed (a server down here does not stop `run`, it is retried there);
each agent's tools are imported as `run` imports them (one that cannot be is a failure here too);
SQLite files that do not exist yet are not created, only their folder is checked. When a
`threadline run` of this config answers on its ops port, its `/readyz` says which channels are
not receiving. With tracing on, the trace receiver is sent an empty export.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial

import aiohttp

from threadline.agents.mcp import probe, tool_names
from threadline.agents.mcp_feature import unknown_approval_names
from threadline.backends import BackendOptions, open_backend
from threadline.backends.sql.database_url import sqlite_file
from threadline.channels.platform import ChannelContext, ChannelSettings
from threadline.channels.registry import DEFAULT_PLATFORM, platform_for
from threadline.cli.config_file import settings_for
from threadline.config import Settings
from threadline.errors import ConfigError, PortUnavailableError, ThreadlineError
from threadline.listening import Listener, port_problem
from threadline.ops import ops_listener
from threadline.provider_setup import checks as provider_checks
from threadline.runtime import load_tool
from threadline.spend.setup import spend_today
from threadline.tracing.export import probe_receiver, wanted


@dataclass(frozen=True, slots=True)
class Report:
    """What a check found, and what works but will surprise (privacy mode, a missing scope)."""

    found: str
    warnings: tuple[str, ...] = ()


Check = Callable[[], Awaitable[str | Report]]  # raises with what is wrong
Result = tuple[str, str | None, Report]  # subject, problem or None, report


def new_sqlite_file(url: str) -> str | None:
    """For a SQLite file not created yet: what will happen (raises if it cannot be created)."""
    path = sqlite_file(url)
    if path is None or path.exists():
        return None
    folder = path.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise ThreadlineError(f"the folder {str(folder)!r} for {str(path)!r} does not "
                              "exist or is not writable")
    return f"{path} will be created on first run"


async def check_store(settings: Settings) -> str:
    url = settings.store.url
    planned = await asyncio.to_thread(new_sqlite_file, url)
    if planned is not None:
        return planned
    options = BackendOptions(busy_timeout=settings.store.busy_timeout)
    async with open_backend(url, options) as backend:
        conversations = await backend.history.count()
        spent = await spend_today(settings, backend)
        return f"{backend.shown_url}: {conversations} turns stored; spent {spent}"


async def check_approval_names(agent: str, settings: Settings, within: float) -> str:
    """Each `require_approval` entry names a tool the agent has: a Python tool, or an MCP
    tool by its own name, as `server/tool` or as the model sees it. A name that matches
    none would let the call run unasked, so it fails here with the names it could mean."""
    chosen = settings.agents[agent]
    python = [getattr(tool, "name", None) or tool.__name__
              for tool in (load_tool(t, agent=agent, settings=settings) for t in chosen.tools)]
    servers = {entry.partition("/")[0] for entry in chosen.mcp.allow}
    listed = {name: await tool_names(name, settings.mcp_servers[name], within)
              for name in sorted(servers) if name in settings.mcp_servers}
    problems = unknown_approval_names(chosen.require_approval, python_tools=python,
                                      server_tools=listed)
    if problems:
        raise ConfigError("; ".join(problems))
    return f"{len(chosen.require_approval)} tool(s) wait for approval"


async def check_tools(agent: str, settings: Settings) -> str:
    """Imports the agent's `tools:` references as `run` does, so a missing module or name
    fails here with `run`'s own words rather than at start."""
    references = settings.agents[agent].tools
    for reference in references:
        load_tool(reference, agent=agent, settings=settings)
    return f"{len(references)} tool(s) import: {', '.join(references)}"


async def check_channel(name: str, settings: ChannelSettings, app: Settings) -> Report:
    """The channel's own check, run before it starts: who the bot is, and its warnings. A
    channel built on what the backend keeps (a Slack app's installations) gets it."""
    if not settings.needs_backend:
        return await _checked(name, settings, ChannelContext(interactive=False))
    planned = await asyncio.to_thread(new_sqlite_file, app.store.url)
    if planned is not None:
        return Report(f"installed nowhere yet ({planned})")
    options = BackendOptions(busy_timeout=app.store.busy_timeout)
    async with open_backend(app.store.url, options) as backend:
        return await _checked(name, settings, ChannelContext(
            interactive=False, platform_part=backend.platform_part(settings.type)))


async def _checked(name: str, settings: ChannelSettings, context: ChannelContext) -> Report:
    channel = platform_for(settings.type).build(name, settings, context)
    warnings = await channel.check()
    identity = channel.identity
    if channel.installations:
        found = "installed in " + "; ".join(channel.installations)
    else:
        found = "connected" if identity is None else (
            f"bot {identity.username or identity.display_name or identity.user_id} "
            f"({identity.user_id})")
    if channel.invite_url:
        found += f"; add it to a server with {channel.invite_url}"
    return Report(found, tuple(warnings))


def listeners(settings: Settings) -> list[Listener]:
    """Every port `threadline run` will listen on: the ops server's and the channels' own."""
    found = [ops_listener(settings.ops.host, settings.ops.port)] if settings.ops.enabled else []
    context = ChannelContext(interactive=False)
    for name, channel in settings.channels.items():
        found += platform_for(channel.type).build(name, channel, context).listeners()
    return found


async def check_port(listener: Listener, settings: Settings) -> str:
    """Whether the port is free now, or held by this config's running process (whose
    /readyz answers on the ops port): anything else holding it would stop `run`."""
    problem = port_problem(listener)
    if problem is None:
        return f"free on {listener.host}" if listener.port else "any free port (0)"
    if settings.ops.enabled and settings.ops.port and await _readiness(settings) is not None:
        return f"in use by the running threadline ({readyz_url(settings)} answers)"
    raise PortUnavailableError(problem)


READYZ_SECONDS = 3.0


def readyz_url(settings: Settings) -> str:
    """Where this config's running process answers /readyz (on this machine)."""
    host = settings.ops.host
    host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return f"http://{host if ':' not in host else f'[{host}]'}:{settings.ops.port}/readyz"


async def _readiness(settings: Settings) -> dict[str, str] | None:
    """The running process's readiness checks, or None when no process answers (within
    `READYZ_SECONDS`: a port held by something that is not threadline answers nothing)."""
    timeout = aiohttp.ClientTimeout(total=READYZ_SECONDS)
    try:
        async with aiohttp.ClientSession(timeout=timeout) as session, \
                session.get(readyz_url(settings)) as response:
            return dict((await response.json()).get("checks", {}))
    except (aiohttp.ClientError, OSError, ValueError, TimeoutError):
        return None


async def check_running(settings: Settings) -> Report:
    """What the running process (if any) says of its channels: one warning per channel that
    is not receiving (its listener down, or not connected)."""
    url = readyz_url(settings)
    checks = await _readiness(settings)
    if checks is None:
        return Report(f"no process answers on {url} (not running)")
    deaf = tuple(f"channel {name.removeprefix('channel:')} is not receiving: {problem}"
                 for name, problem in sorted(checks.items())
                 if name.startswith("channel:") and problem != "ok")
    return Report(f"{url}: {len(checks)} checks, {len(deaf)} channel(s) not receiving", deaf)


async def check_admins(settings: Settings) -> Report:
    """Who may use the commands that change a conversation for everyone (`/forget`, `/bot
    on`, a whole chat's `/human`): with no admins, any member of a group may."""
    admins = settings.access.admins
    if admins:
        return Report(f"{len(admins)} admin(s) may /forget, /bot on and hand a whole chat over")
    return Report("no access.admins", (
        "any member of a group may /forget its history or hand the whole chat to people; "
        "set access.admins where members are not all trusted",))


async def run_checks(settings: Settings, per_check: float) -> list[Result]:
    """(subject, problem or None, report) for every connection, checked concurrently."""
    checks: dict[str, Check] = {"database": lambda: check_store(settings),
                                **provider_checks(settings)}
    if any(channel.type != DEFAULT_PLATFORM for channel in settings.channels.values()):
        checks["admins"] = partial(check_admins, settings)  # a platform with groups
    for name, channel in settings.channels.items():
        checks[f"channel {name} ({channel.type})"] = partial(check_channel, name, channel,
                                                             settings)
    for name, agent in settings.agents.items():
        if agent.tools:
            checks[f"agent {name} tools"] = partial(check_tools, name, settings)
        if agent.require_approval:
            checks[f"agent {name} require_approval"] = partial(
                check_approval_names, name, settings, per_check * 0.8)
    for name, server in settings.mcp_servers.items():
        # Within the check's own time limit, so the server's last problem is what is reported.
        checks[f"mcp server {name}"] = partial(probe, name, server,
                                               min(server.connect_timeout, per_check * 0.8))
    for listener in listeners(settings):
        checks[f"port {listener.port} ({listener.port_setting})"] = partial(check_port, listener,
                                                                            settings)
    if settings.ops.enabled and settings.ops.port:
        checks["running process"] = partial(check_running, settings)
    tracing = settings.tracing.options()
    if wanted(tracing):
        checks["tracing"] = partial(probe_receiver, tracing)

    async def one(subject: str, check: Check) -> Result:
        nothing = Report("")
        try:
            async with asyncio.timeout(per_check):
                found = await check()
            return subject, None, found if isinstance(found, Report) else Report(found)
        except TimeoutError:
            return subject, f"no answer within {per_check:g} s (unreachable?)", nothing
        except (ThreadlineError, OSError, aiohttp.ClientError) as exc:
            return subject, str(exc) or type(exc).__name__, nothing
        except Exception as exc:  # a check must report, whatever an SDK raises
            return subject, f"{type(exc).__name__}: {exc}", nothing

    return list(await asyncio.gather(*(one(s, c) for s, c in checks.items())))


def main(args: argparse.Namespace) -> int:
    """`threadline check CONFIG`: exit 2 for an invalid config, 1 if a connection fails;
    warnings (a bot that connects but will miss messages) are printed and do not fail."""
    settings = settings_for(args)
    print(f"ok    config {args.config or 'built-in default'}: {len(settings.agents)} agent(s), "
          f"{len(settings.channels)} channel(s)")
    results = asyncio.run(run_checks(settings, args.timeout))
    failed = 0
    for subject, problem, report in results:
        if problem is None:
            print(f"ok    {subject}: {report.found}")
            for warning in report.warnings:
                print(f"warn  {subject}: {warning}")
        else:
            failed += 1
            print(f"FAIL  {subject}: {problem}", file=sys.stderr)
    return 1 if failed else 0
