"""All SQL lives under `threadline/backends/`: no other module imports SQLAlchemy, Alembic or a
database driver, so a backend is a plug and the rest of the house names none."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "threadline"
DATABASE_MODULES = ("sqlalchemy", "alembic", "sqlite3", "aiosqlite", "asyncpg", "psycopg",
                    "psycopg2")


def imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return found


def test_only_backends_import_a_database_library() -> None:
    offenders = sorted(
        f"{path.relative_to(PACKAGE.parent)} imports {module}"
        for path in PACKAGE.rglob("*.py")
        if "backends" not in path.relative_to(PACKAGE).parts
        for module in imported_modules(path)
        if module.split(".")[0] in DATABASE_MODULES)
    assert offenders == []


def test_the_walk_sees_the_sql_backend_import_sqlalchemy() -> None:
    """The check above can fail: the SQL backend's own modules are found importing it."""
    store = PACKAGE / "backends" / "sql" / "engines.py"
    assert "sqlalchemy" in {m.split(".")[0] for m in imported_modules(store)}
