"""`threadline knowledge sync --config FILE`: the operator's command reads every source into
the configured store, says what it did per source and which files it could not read, and a
second run finds nothing to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import run_cli
from tests.knowledge.helpers import write


def test_sync_prints_a_report_and_a_second_run_does_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "help", {"refunds.md": "# Refunds\n\n## Vouchers\nVouchers are not "
                                            "refunded.\n",
                              "broken.txt": b"\xff\xfe\xfa not text"})
    config = tmp_path / "threadline.yaml"
    config.write_text(f"store:\n  url: sqlite:///{tmp_path / 'kb.db'}\n"
                      "knowledge:\n  sources:\n    help:\n      folder: ./help\n"
                      "  agents:\n    support: [help]\n", encoding="utf-8")
    first = run_cli(capsys, "knowledge", "sync", "--config", str(config))
    assert first.code == 0, first.err
    assert "help: 1 added, 0 changed, 0 removed, 0 unchanged (1 sections written)" in first.err
    assert "broken.txt: not UTF-8 text" in first.err
    assert "vectors: " in first.err
    second = run_cli(capsys, "knowledge", "sync", "--config", str(config))
    assert second.code == 0, second.err
    assert "help: 0 added, 0 changed, 0 removed, 1 unchanged (0 sections written)" in second.err


def test_an_unknown_source_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "threadline.yaml"
    config.write_text(f"store:\n  url: sqlite:///{tmp_path / 'kb.db'}\n"
                      "knowledge:\n  sources:\n    help:\n      folder: ./help\n",
                      encoding="utf-8")
    refused = run_cli(capsys, "knowledge", "sync", "--config", str(config), "--source", "wiki")
    assert refused.code == 2
    assert "no knowledge source wiki" in refused.err
