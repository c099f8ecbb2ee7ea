"""`threadline --version` and `--help` answer without importing any SDK: a command's module
(and the SDKs it needs) is imported only when that command runs. Checked by import trace."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("anthropic", "openai", "slack_bolt", "telegram", "discord", "sqlalchemy",
         "opentelemetry", "threadline.cli.check", "threadline.runtime")


def imported_by(*argv: str) -> set[str]:
    """Every module `python -X importtime -m threadline ARGV` imported."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "threadline", *argv],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()
            if line.startswith("import time:") and "|" in line}


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_import_no_sdk(flag: str) -> None:
    modules = imported_by(flag)
    assert "threadline.cli.main" in modules  # the trace is real: it saw our own import
    loaded = sorted(m for m in modules
                    if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert loaded == []


def test_a_command_imports_what_it_needs() -> None:
    modules = imported_by("check", "--help")
    assert "threadline.cli.check" in modules
    assert "threadline.cli.history" not in modules  # another command's module stays out



def test_the_openai_sdk_waits_for_a_config_that_names_an_openai_endpoint() -> None:
    """`threadline run` and `check` import the runtime; every one of them (and every process
    a test starts) paid most of a second for this SDK when no agent or speech endpoint used
    it."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys, threadline.runtime, threadline.cli.check; "
                               "print(sorted(m for m in sys.modules if m.startswith("
                               "('openai', 'threadline.agents.speech'))))"],
        capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["['threadline.agents.speech']"]
