"""Every command finds `./threadline.yaml` by itself and takes `--config FILE` the same way;
`run`, `check` and `console` still take the file as their first argument; a config file
name is never read as a conversation id."""

from __future__ import annotations

from pathlib import Path

from tests.cli.helpers import run_process

CONFIG = """\
store:
  url: sqlite:///elsewhere.db
ops:
  enabled: false
"""


def test_commands_find_threadline_yaml_in_the_working_folder(tmp_path: Path) -> None:
    (tmp_path / "threadline.yaml").write_text(CONFIG, encoding="utf-8")
    upgraded = run_process("db", "upgrade", cwd=tmp_path)
    assert upgraded.code == 0, upgraded.err
    assert (tmp_path / "elsewhere.db").exists()  # the config's store, not ./threadline.db
    assert not (tmp_path / "threadline.db").exists()
    for argv in (("check",), ("check", "threadline.yaml"),
                 ("check", "--config", "threadline.yaml")):
        checked = run_process(*argv, cwd=tmp_path)
        assert checked.code == 0, checked.err
        assert checked.out.startswith("ok    config threadline.yaml: 1 agent(s)")
        assert "elsewhere.db: 0 turns stored" in checked.out
    listed = run_process("history", "list", cwd=tmp_path)
    assert (listed.code, listed.err) == (0, "no conversations stored yet\n")


def test_a_config_file_name_is_not_a_conversation_id(tmp_path: Path) -> None:
    (tmp_path / "threadline.yaml").write_text(CONFIG, encoding="utf-8")
    run_process("db", "upgrade", cwd=tmp_path)
    listed = run_process("inspect", "list", "threadline.yaml", cwd=tmp_path)
    assert (listed.code, listed.err) == (0, "no reply records yet\n")  # not "for 'threadline.yaml'"
    shown = run_process("history", "show", "threadline.yaml", cwd=tmp_path)
    assert shown.code == 2
    assert shown.err == ("threadline: error: 'threadline.yaml' is a config file, not a "
                         "conversation id; pass it as --config threadline.yaml and name the "
                         "conversation (ids look like slack:T1:C1, telegram:42, local:main)\n")


def test_without_any_config_the_built_in_default_is_used_and_said(tmp_path: Path) -> None:
    checked = run_process("check", cwd=tmp_path)
    assert checked.code == 0, checked.err
    assert checked.out.startswith("ok    config built-in default: 1 agent(s), 1 channel(s)")
    assert "no ./threadline.yaml: using the built-in default" in checked.err
    assert "threadline.db will be created on first run" in checked.out


def test_two_different_config_files_are_refused(tmp_path: Path) -> None:
    outcome = run_process("check", "a.yaml", "--config", "b.yaml", cwd=tmp_path)
    assert outcome.code == 2
    assert outcome.err == ("threadline: error: two config files given (a.yaml and --config "
                           "b.yaml); pass one\n")
