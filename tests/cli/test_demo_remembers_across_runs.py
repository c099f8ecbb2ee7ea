"""`threadline demo --script` from a fresh folder, twice: the second run remembers the first."""

from __future__ import annotations

from pathlib import Path

from tests.cli.helpers import run_process

FIRST = """\
# comments and blank lines are skipped

@support hi, my order number is 4417-B and I prefer email
@billing please send the invoice for order 4417-B by email
nobody in particular
"""
SECOND = "@support what did I say about my order number?\n"


def test_second_run_answers_from_the_first(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    (tmp_path / "first.txt").write_text(FIRST, encoding="utf-8")
    (tmp_path / "second.txt").write_text(SECOND, encoding="utf-8")

    first = run_process("demo", "--script", "first.txt", "--db", str(db), cwd=tmp_path)
    assert first.code == 0, first.err
    assert "no earlier turns yet" in first.out
    lines = first.out.splitlines()
    assert "you> @support hi, my order number is 4417-B and I prefer email" in lines
    assert "    addressed: support" in lines
    assert "    addressed: billing" in lines
    assert any(line.startswith("support> [offline model]") for line in lines)
    assert any(line.startswith("billing> [offline model]") for line in lines)
    assert any(line.startswith("    saw 1 turns, ") and "/1500 tokens" in line for line in lines)
    assert "    (nobody was addressed: start with @support or @billing)" in lines

    second = run_process("demo", "--script", "second.txt", "--db", str(db), cwd=tmp_path)
    assert second.code == 0, second.err
    assert "5 earlier turns remembered" in second.out
    lines = second.out.splitlines()
    [search] = [line for line in lines if "conversation_search(" in line]
    assert "order number" in search
    [answer] = [line for line in lines if line.startswith("support> ")]
    assert "my order number is 4417-B" in answer
    assert not (tmp_path / "threadline.db").exists()  # --db was used, nothing else written


def test_missing_script_is_a_usage_error(tmp_path: Path) -> None:
    outcome = run_process("demo", "--script", "nope.txt", "--db", str(tmp_path / "x.db"),
                          cwd=tmp_path)
    assert outcome.code == 2
    assert "threadline: error: --script nope.txt: cannot read it (No such file or directory)" \
        in outcome.err


def test_interactive_lines_from_stdin(tmp_path: Path) -> None:
    outcome = run_process("demo", "--db", str(tmp_path / "x.db"), cwd=tmp_path,
                          stdin="@billing hello there\nquit\n")
    assert outcome.code == 0, outcome.err
    assert "billing> [offline model]" in outcome.out
    assert "you> " in outcome.out  # the prompt a person sees
