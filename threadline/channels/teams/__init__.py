"""Microsoft Teams: Bot Framework activities over HTTP (needs `threadline[teams]`).

`TeamsChannel` is imported on first use: the Teams SDK takes seconds to import, and reading a
config (`threadline init`, `config schema`) needs only `teams.platform`, which imports no SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from threadline.channels.teams.channel import TeamsChannel

__all__ = ["TeamsChannel"]


def __getattr__(name: str) -> Any:
    if name == "TeamsChannel":
        from threadline.channels.teams.channel import TeamsChannel

        return TeamsChannel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
