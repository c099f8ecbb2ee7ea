"""Approvals as a feature: tool calls that wait for a person (`require_approval:` on an agent
or an MCP server, `approvals:` for who decides and how long), their `/approve` and `/deny`
commands where anything asks, and the gate every agent's tool loop waits at (see
`threadline.agents.approvals`). Without the backend's approval book, such calls are refused,
not run."""

from __future__ import annotations

from threadline.agents.approvals import ApprovalGate
from threadline.features import Feature, FeatureContext, FeatureParts


def _build(context: FeatureContext) -> FeatureParts:
    settings = context.settings
    gate = ApprovalGate(context.backend.approvals, store=context.backend.history,
                        channels=context.channels, access=context.access,
                        approvers=settings.approvals.approvers,
                        timeout=settings.approvals.timeout_seconds)
    asks = any(a.require_approval for a in settings.agents.values()) or any(
        s.require_approval for s in settings.mcp_servers.values())
    return FeatureParts(commands=gate.commands() if asks else (), approvals=gate)


FEATURE = Feature(name="approvals", build=_build)
