"""Handoff settings: the `handoff:` section (who is told, how long the bot stays quiet)."""

from __future__ import annotations

from pydantic import (
    Field,
)

from threadline.settings_section import Section


class HandoffNotify(Section):
    """Where the team hears of a handoff: a channel of this config and a chat id on it (a
    Slack channel id, a Telegram group id, a Discord channel id)."""

    channel: str
    """The channels: entry the team is told on."""
    chat: str
    """The chat id there (a Slack channel id, a Telegram group id, a Discord channel id)."""


class HandoffSettings(Section):
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
