"""Where plugs come from: the built-in ones a registry lists, then other packages' entry points.

Platforms (`threadline.channels.registry`) and model providers (`threadline.agents.providers`)
are found the same way: a name maps to `module:attribute`; a third-party package adds a name
with an entry point in the registry's group, and cannot take over a built-in name. A plug's
module is imported only when a configuration uses it, so listing names imports nothing. Each
registry checks what it loaded and says, in its own words, what to install when an import fails.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from importlib.metadata import entry_points


def plug_references(group: str, built_in: Mapping[str, str]) -> dict[str, str]:
    """`name` -> `module:attribute`: the built-ins, then each entry point of `group`."""
    found = dict(built_in)
    for entry in entry_points(group=group):
        found.setdefault(entry.name, entry.value)
    return found


def load_plug(reference: str) -> object | None:
    """The object `module:attribute` names (None when the module lacks it); raises ImportError
    when the module or one of its dependencies is not installed."""
    module_name, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module_name), attribute, None)
