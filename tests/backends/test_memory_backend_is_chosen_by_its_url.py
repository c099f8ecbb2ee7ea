"""`store.url: memory://` picks the memory backend through the same registry as any other:
`threadline check` opens it and says what it does not keep, and a wrong memory URL is a usage
error that says what to write."""

from __future__ import annotations

from pathlib import Path

from tests.cli.helpers import run_process

CONFIG = "store:\n  url: {url}\nops:\n  enabled: false\n"


def test_check_opens_the_memory_backend(tmp_path: Path) -> None:
    config = tmp_path / "threadline.yaml"
    config.write_text(CONFIG.format(url="memory://"), encoding="utf-8")
    outcome = run_process("check", str(config), cwd=tmp_path)
    assert outcome.code == 0, outcome.err
    assert ("ok    database: memory://: 0 turns stored; spent not kept (backend memory keeps "
            "no spend ledger)") in outcome.out
    assert not list(tmp_path.glob("*.db"))  # nothing written to disk


def test_a_memory_url_with_a_path_says_what_to_write(tmp_path: Path) -> None:
    config = tmp_path / "threadline.yaml"
    config.write_text(CONFIG.format(url="memory:///bot.db"), encoding="utf-8")
    outcome = run_process("check", str(config), cwd=tmp_path)
    assert outcome.code == 2
    assert "the memory backend takes no path or options; write memory://" in outcome.err
