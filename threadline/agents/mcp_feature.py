"""MCP servers as a feature: each `mcp_servers:` entry kept connected (`threadline.agents.mcp`)
and its tools offered to the agents whose `mcp:` lists allow them.

The servers connect when the runtime starts, and the runtime takes no turn (nor re-takes one
left waiting before a restart) until each server is up or has spent its `connect_timeout`:
a turn answered in between would be offered none of their tools, and an approved call whose
turn was answered so would never be asked for again. A server still down then is said in the
log and in `/readyz`, and retried in the background.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence

from threadline.agents.mcp import McpServer, McpToolset, model_tool_name
from threadline.features import Feature, FeatureContext, FeatureParts
from threadline.team import Team


class _Servers:
    """Starts every server, waits for them once, stops them."""

    def __init__(self, servers: Sequence[McpServer]) -> None:
        self.servers = servers

    async def start(self, team: Team) -> None:
        for server in self.servers:
            server.start()  # connects in the background; `ready` waits for it

    async def ready(self) -> str | None:
        up = await asyncio.gather(*(s.wait_up(s.settings.connect_timeout)
                                    for s in self.servers))
        down = [f"MCP server {s.name!r} is down ({s.problem}); its tools are offered once it "
                "connects" for s, ok in zip(self.servers, up, strict=True) if not ok]
        return "; ".join(down) or None

    async def stop(self) -> None:
        for server in self.servers:
            await server.stop()


def _build(context: FeatureContext) -> FeatureParts | None:
    settings = context.settings
    if not settings.mcp_servers:
        return None
    servers = {name: McpServer(name, entry) for name, entry in settings.mcp_servers.items()}

    def toolsets(agent: str) -> list[McpToolset]:
        chosen = settings.agents[agent].mcp
        if not chosen.allow:
            return []
        used = {entry.partition("/")[0] for entry in chosen.allow}
        return [McpToolset([s for n, s in servers.items() if n in used],
                           allow=tuple(chosen.allow), deny=tuple(chosen.deny),
                           approval=tuple(settings.agents[agent].require_approval))]

    return FeatureParts(toolsets=toolsets, service=_Servers(list(servers.values())))


def unknown_approval_names(entries: Iterable[str], *, python_tools: Iterable[str],
                           server_tools: Mapping[str, Iterable[str]]) -> list[str]:
    """Each `require_approval` entry that names no tool, with the names it could have meant
    (a tool by its own name, `server/tool`, or the name the model sees)."""
    known = set(python_tools)
    for server, tools in server_tools.items():
        for tool in tools:
            known |= {tool, f"{server}/{tool}", model_tool_name(server, tool)}
    problems = []
    for entry in entries:
        if entry in known:
            continue
        close = [k for k in sorted(known) if entry.lower() in k.lower()
                 or k.lower() in entry.lower()] or sorted(known)
        problems.append(f"require_approval: {entry!r} names no tool (tools: "
                        f"{', '.join(close[:8]) or 'none'}); a call to it would not wait for "
                        "approval")
    return problems


FEATURE = Feature(name="mcp", build=_build)
