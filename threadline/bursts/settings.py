"""Burst settings: the `bursts:` section (several messages in a row, answered once)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from threadline.settings_section import Section

BurstMode = Literal["each", "coalesce", "interrupt"]


class BurstSettings(Section):
    """Several messages of one person in a row (`threadline.bursts`). `each`: every message
    is its own turn. `coalesce`: messages of one person arriving within `window` seconds of
    each other (or while the agent is still answering) are answered by one reply. `interrupt`:
    as coalesce, and a message arriving while the model is still writing stops that reply
    (a streamed one is edited to say so) and the agent answers again with everything. Set
    for everyone (`mode`), per channel and per agent (the agent's setting wins)."""

    mode: BurstMode = "each"
    """How a burst is answered where neither its channel nor its agent says otherwise."""
    window: float = Field(default=1.5, gt=0, le=300)
    """Seconds of quiet after a person's last message before their burst is answered."""
    max_turns: int = Field(default=20, ge=2, le=200)
    """At most this many messages are answered together (the rest form the next burst)."""
    channels: dict[str, BurstMode] = Field(default_factory=dict)
    """The mode on a channel, by its `channels:` name."""
    agents: dict[str, BurstMode] = Field(default_factory=dict)
    """The mode of an agent, by its name (wins over its channel's)."""

    def mode_for(self, *, agent: str, channel: str | None) -> BurstMode:
        """The mode a turn for `agent` on `channel` is answered in."""
        if agent in self.agents:
            return self.agents[agent]
        return self.channels.get(channel or "", self.mode)
