"""People settings: person memory and link codes (`people:`), access lists and rate limits
(`access:`), and who approves tool calls (`approvals:`)."""

from __future__ import annotations

from pydantic import (
    Field,
)

from threadline.settings_section import Section


class PeopleSettings(Section):
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


class PeopleListSettings(Section):
    """Who may ask: platform identities (`telegram:42`) or persons (`person-...`)."""

    allow: list[str] = Field(default_factory=list)
    """Who may ask (everyone when empty)."""
    deny: list[str] = Field(default_factory=list)
    """Who may not ask (wins over allow)."""


class RateSettings(Section):
    """At most `turns` turns per person every `per_seconds` seconds."""

    turns: int = Field(ge=1)
    """Turns allowed in the window."""
    per_seconds: float = Field(gt=0)
    """The window, in seconds."""


class AccessSettings(Section):
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


class ApprovalSettings(Section):
    """`approvals:` who may approve a tool call (the asker when empty), and for how long."""

    approvers: list[str] = Field(default_factory=list)
    """Identities or persons who may approve (default: the person who asked)."""
    timeout_seconds: float = Field(default=600.0, gt=0)
    """Seconds a request waits for an answer before the call is refused as expired."""
