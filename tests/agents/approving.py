"""A team whose `refund` tool waits for a person's approval, as the runtime wires it."""

from __future__ import annotations

from threadline.agents import Agent
from threadline.agents.agent import Tooling
from threadline.agents.approvals import ApprovalGate
from threadline.agents.llm import ModelProvider
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.approvals import SqlApprovalBook
from threadline.channels.base import Channel
from threadline.commands import CommandRegistry
from threadline.team import Team, default_commands


class Refunds:
    """The tool that needs approval, and every refund it really made."""

    def __init__(self) -> None:
        self.made: list[str] = []

    async def refund(self, order: str) -> str:
        """Refund an order in full."""
        self.made.append(order)
        return f"order {order} refunded"


def approving_team(store: SqlConversationStore, provider: ModelProvider, channel: Channel,
                   refunds: Refunds, *, timeout: float = 600.0) -> Team:
    gate = ApprovalGate(SqlApprovalBook(store), store=store, channels={channel.name: channel},
                        timeout=timeout, poll=0.05)
    agent = Agent(name="support", conversation_history=store, provider=provider,
                  tools=[refunds.refund],
                  tooling=Tooling(approvals=gate, require_approval=["refund"]))
    team = Team([agent], approvals=gate,
                commands=CommandRegistry((*default_commands(), *gate.commands())))
    team.attach(channel)
    return team
