"""Backfill settings: the `backfill:` section (reading what was said before the bot joined)."""

from __future__ import annotations

from pydantic import Field

from threadline.settings_section import Section


class BackfillSettings(Section):
    """A bot addressed in a thread or channel whose earlier turns the history lacks reads
    them from the platform first (`threadline.backfill`): Slack's conversations.replies and
    conversations.history. Telegram gives bots no history, and says so in the log."""

    enabled: bool = False
    """Read earlier messages the first time an agent is addressed in a conversation."""
    limit: int = Field(default=50, ge=1, le=1000)
    """At most this many earlier messages are read and stored."""
