"""`threadline run`'s runtime in this process: built from a YAML config on a fake platform and
the fake Messages API, started, and stopped after the block (for tests that act as a member
would and then look at what crossed the wire, without a subprocess per test)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.runtime.platforms import Platform, write_config
from threadline.config import load_settings
from threadline.runtime import Runtime


@asynccontextmanager
async def running_in_process(tmp_path: Path, name: str, where: Platform, model_url: str, *,
                             more_yaml: str = "", agent_yaml: str = "",
                             store_url: str | None = None) -> AsyncIterator[Runtime]:
    """The runtime of `write_config`'s config plus `more_yaml` (and `agent_yaml` in its one
    agent's entry), its secrets in `.env`; `store_url` replaces its SQLite file's."""
    config = write_config(tmp_path, name, where, model_url)
    if store_url is not None:
        sqlite_url = f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}"
        config.write_text(config.read_text(encoding="utf-8").replace(sqlite_url, store_url),
                          encoding="utf-8")
    if agent_yaml:
        config.write_text(config.read_text(encoding="utf-8") + agent_yaml, encoding="utf-8")
    with config.open("a", encoding="utf-8") as file:
        file.write(more_yaml)
    secrets = {**where.env, "ANTHROPIC_API_KEY": "test-key"}
    (tmp_path / ".env").write_text("".join(f"{k}={v}\n" for k, v in secrets.items()),
                                   encoding="utf-8")
    runtime = Runtime.build(load_settings(config), interactive=False)
    await runtime.start()
    try:
        yield runtime
    finally:
        await runtime.stop()
