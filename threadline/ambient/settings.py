"""Ambient settings: the `ambient:` section (agents that listen in a room and may speak)."""

from __future__ import annotations

from pydantic import Field

from threadline.settings_section import Section


class AmbientAgent(Section):
    """One agent listening in rooms where nobody addresses it: after `every_turns` new turns
    of people, and at most once every `min_minutes`, it is asked (a short prompt, a small
    reply) whether to speak; it speaks at most `max_replies_per_hour` times an hour per
    conversation. Turns of bots and agents never count, so ambient agents cannot set each
    other off."""

    channels: list[str] = Field(min_length=1)
    """The channels: entries it listens on."""
    every_turns: int = Field(default=10, ge=1)
    """Ask after this many new turns of people."""
    min_minutes: float = Field(default=5.0, ge=0)
    """Ask at most once every this many minutes per conversation."""
    max_replies_per_hour: int = Field(default=4, ge=0)
    """Speak at most this many times an hour per conversation."""
    model: str | None = None
    """The model asked whether to speak (default: the agent's own; a small one costs less)."""
    context_turns: int = Field(default=20, ge=1, le=200)
    """How many recent turns the question shows."""


class AmbientSettings(Section):
    """Agents that listen in rooms and decide for themselves whether to speak
    (`threadline.ambient`), by agent name."""

    agents: dict[str, AmbientAgent] = Field(default_factory=dict)
    """The ambient agents, by name."""
