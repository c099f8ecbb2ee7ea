"""The platforms this installation knows, by the `type:` of a `channels:` entry.

Built-in platforms are listed below; a third-party package adds one with an entry point in
the `threadline.platforms` group, named after its `type:`, pointing at its `Platform` object:

    [project.entry-points."threadline.platforms"]
    matrix = "threadline_matrix:PLATFORM"

A platform's module is imported only when a config uses it (its SDK is an optional extra), so
`platform_names()` reads names without importing anything.
"""

from __future__ import annotations

from typing import Any

from threadline.channels.platform import Platform
from threadline.errors import ConfigError
from threadline.plugs import load_plug, plug_references

ENTRY_POINT_GROUP = "threadline.platforms"
BUILT_IN = {
    "local": "threadline.channels.local:PLATFORM",
    "slack": "threadline.channels.slack.platform:PLATFORM",
    "telegram": "threadline.channels.telegram.platform:PLATFORM",
    "discord": "threadline.channels.discord.platform:PLATFORM",
    "http": "threadline.channels.http.platform:PLATFORM",
    "web": "threadline.channels.web.platform:PLATFORM",
    "whatsapp": "threadline.channels.whatsapp.platform:PLATFORM",
    "teams": "threadline.channels.teams.platform:PLATFORM",
    "matrix": "threadline.channels.matrix.platform:PLATFORM",
}
# The platform of the embedded default config's one channel (and of `threadline demo`).
DEFAULT_PLATFORM = "local"
_loaded: dict[str, Platform[Any]] = {}


def platform_names() -> list[str]:
    """Every platform `type:` a config may use."""
    return list(plug_references(ENTRY_POINT_GROUP, BUILT_IN))


def platform_for(name: str) -> Platform[Any]:
    """The platform whose channels have `type: NAME`; a `ConfigError` says what to do if none."""
    if name in _loaded:
        return _loaded[name]
    references = plug_references(ENTRY_POINT_GROUP, BUILT_IN)
    if name not in references:
        raise ConfigError(f"unknown platform type {name!r}; expected one of "
                          f"{', '.join(references)} (a third-party platform registers under "
                          f"the {ENTRY_POINT_GROUP!r} entry point group)")
    try:
        platform = load_plug(references[name])
    except ImportError as exc:
        extra = f" (pip install 'threadline[{name}]')" if name in BUILT_IN else ""
        raise ConfigError(f"platform {name!r} cannot be loaded: {exc}; install its "
                          f"dependencies{extra}") from exc
    if not isinstance(platform, Platform) or platform.name != name:
        raise ConfigError(f"{references[name]!r} is not the Platform object for {name!r}")
    _loaded[name] = platform
    return platform
