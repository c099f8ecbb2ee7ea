"""Where plugs come from: the built-in ones a registry lists, then other packages' entry points.

Platforms (`threadline.channels.registry`) and model providers (`threadline.agents.providers`)
are found the same way: a name maps to `module:attribute`; a third-party package adds a name
with an entry point in the registry's group, and cannot take over a built-in name. A plug's
module is imported only when a configuration uses it, so listing names imports nothing. Each
registry checks what it loaded and says, in its own words, what to install when an import fails.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any


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


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A package's `__getattr__` that imports each exported name's module on first use.

    A package face lists what a user may import (`from threadline.agents import Agent`)
    without loading it: importing one module of the package (its settings, say) then loads
    that module and what it needs, not the agent loop or a database driver beside it.
    `exports` maps each name to the module that defines it; type checkers read the same
    names from the package's `if TYPE_CHECKING:` imports.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
