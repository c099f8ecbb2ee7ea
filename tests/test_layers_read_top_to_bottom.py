"""Threadline's modules import downwards only, and no two modules import each other.

Reading one message's path top to bottom needs the layers to run one way: the command line and
the runtime on top, then the app (the team and its turn pipeline), then what the app wires
(inspector, spend, config), provider set-up, the agents and their traces, people, the channels
(the platforms), the commands they offer, the interceptors around an agent turn, the turn's own
data, the history, and the errors everything shares at the bottom. A module may import its own
layer and those below; an import that climbs, or a circle of imports (even through a
function-local import), fails here with the line to fix.

Imports under `if TYPE_CHECKING:` are held to the same order: a type is a dependency too. The
exceptions are listed in `ALLOWED_UPWARD`, each with the reason it is needed. Within one
package a module may name another's type that imports it at run time (a platform's live reply
names its channel): that is one concept split over files, not a circle anything executes.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "threadline"

# Lowest first. A module belongs to the layer of the longest name that prefixes it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("threadline.errors", "threadline.log", "threadline.periodic", "threadline.waiting",
     "threadline.plugs",
     "threadline.settings_section", "threadline.listening_hosts",
     "threadline.listening"),
    ("threadline.history",),
    ("threadline.turn", "threadline.locks", "threadline.feedback.votes",
     "threadline.schedules.clock",
     "threadline.schedules.timing", "threadline.schedules.schedule",
     "threadline.schedules.turns"),
    ("threadline.interceptors", "threadline.after_delivery"),
    ("threadline.commands",),
    ("threadline.channels",),
    ("threadline.people",),
    ("threadline.agents", "threadline.tracing"),
    ("threadline.provider_setup", "threadline.schedules", "threadline.handoff.book",
     "threadline.handoff.settings", "threadline.bursts.settings",
     "threadline.backfill.settings", "threadline.ambient.settings",
     "threadline.knowledge"),
    ("threadline.stages", "threadline.commands.stage", "threadline.schedules.stage",
     "threadline.people.stages", "threadline.feedback.command", "threadline.feedback.offer",
     "threadline.bursts", "threadline.backfill", "threadline.ambient"),
    ("threadline.config", "threadline.config_loader", "threadline.ops", "threadline.spend",
     "threadline.inspector", "threadline.backends"),
    ("threadline.reply_delivery", "threadline.pipeline", "threadline.team", "threadline.owners",
     "threadline.routing", "threadline.turn_edits",
     "threadline.handoff"),
    ("threadline.features", "threadline.people.feature", "threadline.handoff.feature",
     "threadline.schedules.feature", "threadline.agents.mcp_feature", "threadline.spend.feature",
     "threadline.tracing.feature", "threadline.agents.approvals_feature",
     "threadline.feedback.feature", "threadline.bursts.feature", "threadline.backfill.feature",
     "threadline.ambient.feature", "threadline.knowledge.feature"),
    ("threadline.runtime", "threadline.demo", "threadline.app", "threadline.evals"),
    ("threadline.cli", "threadline.__main__", "threadline"),
)

# (importer, imported): why the import may climb. None today; an entry needs its reason.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    type_only: bool


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in ROOT.rglob("*.py")}


def resolve(name: str) -> str:
    """The module `name` is, or the package or module that defines it (`from x import y`)."""
    while name not in MODULES and "." in name:
        name = name.rpartition(".")[0]
    return name


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside.update(id(n) for child in node.body for n in ast.walk(child))
    return inside


def imports_of(name: str, path: Path) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = _type_checking_nodes(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Import] = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [f"{base}.{alias.name}" for alias in node.names]
        for target in targets:
            if target.split(".")[0] != "threadline":
                continue
            imported = resolve(target)
            if imported != name:
                found.append(Import(name, imported, node.lineno, id(node) in type_only))
    return found


ALL_IMPORTS = [i for name, path in sorted(MODULES.items()) for i in imports_of(name, path)]


def layer_of(name: str) -> int:
    best, depth = -1, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > depth:
                best, depth = index, len(prefix)
    return best


def test_every_module_has_a_layer() -> None:
    assert [name for name in MODULES if layer_of(name) < 0] == []


def test_no_import_climbs_a_layer() -> None:
    climbing = [
        f"{MODULES[i.importer].relative_to(ROOT.parent)}:{i.line}: {i.importer} (layer "
        f"{layer_of(i.importer)}) imports {i.imported} (layer {layer_of(i.imported)})"
        f"{' under TYPE_CHECKING' if i.type_only else ''}"
        for i in ALL_IMPORTS
        if layer_of(i.imported) > layer_of(i.importer)
        and (i.importer, i.imported) not in ALLOWED_UPWARD]
    assert climbing == []


def test_each_allowed_exception_is_still_needed_and_type_only() -> None:
    """An exception nobody needs any more, or one used at run time, is a mistake to fix."""
    for importer, imported in ALLOWED_UPWARD:
        uses = [i for i in ALL_IMPORTS if (i.importer, i.imported) == (importer, imported)]
        assert uses, f"{importer} no longer imports {imported}: drop the exception"
        assert all(i.type_only for i in uses), f"{importer} imports {imported} at run time"


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("with_types", [False, True], ids=["run time", "with type imports"])
def test_no_module_imports_itself_through_others(with_types: bool) -> None:
    edges: dict[str, set[str]] = {}
    for i in ALL_IMPORTS:
        same_package_types = i.type_only and i.importer.rpartition(".")[0] == i.imported.rpartition(
            ".")[0]
        if i.type_only and (not with_types or same_package_types
                            or (i.importer, i.imported) in ALLOWED_UPWARD):
            continue
        edges.setdefault(i.importer, set()).add(i.imported)
    assert cycles(edges) == []


def test_the_checks_see_a_climbing_import_and_a_circle() -> None:
    """The walk finds what it guards against (so the tests above cannot pass by seeing nothing)."""
    assert layer_of("threadline.history.model") < layer_of("threadline.channels.base")
    assert layer_of("threadline.agents.agent") < layer_of("threadline.team")
    assert any(i.importer == "threadline.team" and i.imported == "threadline.pipeline"
               for i in ALL_IMPORTS)
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# Package faces that may load their package at import, each with its reason. Every other
# `__init__.py` names its exports lazily (`threadline.plugs.lazy_exports`): importing one
# module of a package (its settings, say) must not load the rest of it.
HEAVY_FACES: dict[str, str] = {
    "threadline.channels.slack": "a platform's face is imported only when a config uses it",
    "threadline.channels.telegram": "a platform's face is imported only when a config uses it",
    "threadline.channels.discord": "a platform's face is imported only when a config uses it",
    "threadline.channels.matrix": "a platform's face is imported only when a config uses it",
    "threadline.backends.sql": "a backend's face registers how it finds its parts "
                               "(`add_adopter`); imported only when a store URL names it",
    "threadline.inspector.console": "the console's web app, imported only to serve it",
    "threadline.cli": "the command line's entry point",
    "threadline.backends": "registers the in-memory backend's adopter, so an in-memory history "
                           "built directly finds its parts (no database driver)",
}


def face_imports(path: Path) -> list[str]:
    """What a package's `__init__.py` imports of threadline at run time."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in tree.body:  # top level only: `if TYPE_CHECKING:` blocks are not run
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return [m for m in found if m.startswith("threadline") and m != "threadline.plugs"]


def test_package_faces_load_nothing_until_a_name_is_used() -> None:
    heavy = {module_name(path): face_imports(path) for path in ROOT.rglob("__init__.py")
             if "migrations" not in path.parts}
    assert {name: imported for name, imported in heavy.items()
            if imported and name not in HEAVY_FACES} == {}


def test_reading_the_settings_loads_no_database_library() -> None:
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, threadline.config; print(' '.join(sys.modules))"],
        capture_output=True, text=True, check=True, cwd=ROOT.parent,
        env={**os.environ, "PYTHONPATH": str(ROOT.parent)}).stdout.split()
    assert [m for m in loaded if m.split(".")[0] in {
        "sqlalchemy", "alembic", "asyncpg", "aiosqlite", "sqlite3"}] == []
