"""`threadline history` and `threadline db upgrade` on a real SQLite file."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.cli.helpers import run_cli
from threadline.backends.sql.files import SqlFileStore
from threadline.backends.sql.store import SqlConversationStore
from threadline.history.files import TurnFile, files_extra, sha256_of
from threadline.history.model import MessageMetadata, Participant, StoredMessage

ADA = Participant(kind="user", id="U1", display_name="ada")
SUPPORT = Participant(kind="agent", id="support")


def turn(conversation: str, n: int, text: str, *, days_ago: float = 0,
         who: Participant = ADA) -> StoredMessage:
    return StoredMessage(conversation_id=conversation, participant=who, content=text,
                         id=f"{conversation}:{n}",
                         timestamp=datetime.now(UTC) - timedelta(days=days_ago),
                         metadata=MessageMetadata(channel_type="slack", message_id=str(n)))


def fill(db: Path, turns: list[StoredMessage]) -> None:
    async def go() -> None:
        async with SqlConversationStore(f"sqlite+aiosqlite:///{db}") as store:
            await store.append_many(turns)
    asyncio.run(go())


def contents(db: Path, conversation: str) -> list[str]:
    async def go() -> list[str]:
        async with SqlConversationStore(f"sqlite+aiosqlite:///{db}") as store:
            return [m.content for m in await store.get(conversation)]
    return asyncio.run(go())


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "threadline.db"
    fill(path, [
        turn("slack:T:C1", 1, "my order 4417 never arrived", days_ago=40),
        turn("slack:T:C1", 2, "sorry to hear that, checking 4417", days_ago=40, who=SUPPORT),
        turn("slack:T:C1", 3, "also I moved to Lyon", days_ago=1),
        turn("telegram:42", 1, "hello from telegram"),
    ])
    return path


def test_list_show_and_search(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    listed = run_cli(capsys, "history", "list", "--db", str(db))
    assert listed.code == 0
    lines = listed.out.splitlines()
    assert [line.split("\t")[:2] for line in lines] == [
        ["telegram:42", "1 turns"], ["slack:T:C1", "3 turns"]]

    shown = run_cli(capsys, "history", "show", "slack:T:C1", "--db", str(db))
    assert shown.code == 0
    assert "ada (user): my order 4417 never arrived" in shown.out.splitlines()[0]
    assert "support (agent): sorry to hear that" in shown.out.splitlines()[1]

    as_json = run_cli(capsys, "history", "show", "telegram:42", "--json", "--db", str(db))
    assert json.loads(as_json.out)["content"] == "hello from telegram"

    found = run_cli(capsys, "history", "search", "slack:T:C1", "where is order 4417?",
                    "--db", str(db))
    assert found.code == 0
    hits = [line for line in found.out.splitlines() if line.startswith(">")]
    assert any("my order 4417 never arrived" in h for h in hits)


def test_show_unknown_conversation_and_missing_db(db: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    unknown = run_cli(capsys, "history", "show", "slack:T:NOPE", "--db", str(db))
    assert unknown.code == 2
    assert "conversation 'slack:T:NOPE' has no stored turns; `threadline history list` shows " \
        "the ids" in unknown.err
    missing = run_cli(capsys, "history", "list", "--db", str(tmp_path / "missing.db"))
    assert missing.code == 2
    assert f"no database at '{tmp_path / 'missing.db'}'" in missing.err
    assert not (tmp_path / "missing.db").exists()


def test_export_then_import_twice_is_idempotent(db: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    export = tmp_path / "export.jsonl"
    exported = run_cli(capsys, "history", "export", "--out", str(export), "--db", str(db))
    assert exported.code == 0
    assert "exported 4 turns of 2 conversations" in exported.err
    lines = export.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4
    assert {json.loads(line)["conversation_id"] for line in lines} == {"slack:T:C1",
                                                                        "telegram:42"}

    copy = tmp_path / "copy.db"
    first = run_cli(capsys, "history", "import", str(export), "--db", str(copy))
    assert first.code == 0
    assert "imported 4 turns; 0 were already stored" in first.err
    again = run_cli(capsys, "history", "import", str(export), "--db", str(copy))
    assert "imported 0 turns; 4 were already stored" in again.err
    assert contents(copy, "slack:T:C1") == contents(db, "slack:T:C1")


def test_import_bad_line_names_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{\"id\": \"x\"}\n", encoding="utf-8")
    outcome = run_cli(capsys, "history", "import", str(bad), "--db", str(tmp_path / "n.db"))
    assert outcome.code == 2
    assert f"{bad}:1: not a Threadline export line" in outcome.err
    missing = run_cli(capsys, "history", "import", str(tmp_path / "nope.jsonl"))
    assert missing.code == 2
    assert "nope.jsonl: no such file to import" in missing.err


def test_prune_deletes_only_old_turns(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run_cli(capsys, "history", "prune", "--older-than", "30", "--db", str(db))
    assert outcome.code == 0
    assert "deleted 2 turns older than 30 days" in outcome.err
    assert contents(db, "slack:T:C1") == ["also I moved to Lyon"]
    assert contents(db, "telegram:42") == ["hello from telegram"]


def test_db_upgrade_creates_and_is_repeatable(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "new.db"
    for _ in range(2):
        outcome = run_cli(capsys, "db", "upgrade", "--db", str(path))
        assert outcome.code == 0
        assert "is at the current schema" in outcome.err
    fill(path, [turn("local:x", 1, "works")])
    assert contents(path, "local:x") == ["works"]


def test_db_upgrade_unreachable_postgres_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run_cli(capsys, "db", "upgrade", "--url",
                      "postgresql+asyncpg://postgres@127.0.0.1:1/nothing")
    assert outcome.code == 1
    assert "threadline: error: conversation store postgresql+asyncpg://postgres@127.0.0.1:1/" \
        "nothing could not open or upgrade its schema" in outcome.err


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run_cli(capsys, "history", "prune")
    assert outcome.code == 2
    assert "the following arguments are required: --older-than" in outcome.err
    assert run_cli(capsys, "frobnicate").code == 2


def test_long_runs_report_progress_on_stderr(db: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import threadline.cli.history as cli_history

    monkeypatch.setattr(cli_history, "PROGRESS_EVERY", 0.0)  # every step counts as "long"
    outcome = run_cli(capsys, "history", "export", "--db", str(db))
    assert outcome.code == 0
    assert len(outcome.out.splitlines()) == 4  # stdout holds only the export
    assert outcome.err.splitlines() == [
        "exported 3 turns (1/2 conversations)", "exported 4 turns (2/2 conversations)",
        "exported 4 turns of 2 conversations"]


def test_export_carries_file_bytes_and_import_keeps_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source, copy, export = tmp_path / "s.db", tmp_path / "c.db", tmp_path / "export.jsonl"
    invoice = b"%PDF-1.4 invoice 4417"
    sent = TurnFile(name="invoice.pdf", media_type="application/pdf", size=len(invoice),
                    sha256=sha256_of(invoice))

    async def keep() -> None:
        async with SqlConversationStore(f"sqlite+aiosqlite:///{source}") as store:
            await SqlFileStore(store).put(invoice, sha256=sent.sha256, media_type=sent.media_type)
            await store.append(replace(turn("telegram:42", 1, "[document invoice.pdf]"),
                                       metadata=MessageMetadata(
                                           channel_type="telegram", message_id="1",
                                           extra=files_extra([sent]))))
    asyncio.run(keep())
    assert run_cli(capsys, "history", "export", "--out", str(export), "--db", str(source)
                   ).code == 0
    lines = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines()]
    assert [line.get("kind") for line in lines] == [None, "file"]
    assert run_cli(capsys, "history", "import", str(export), "--db", str(copy)).code == 0

    async def read_back() -> bytes | None:
        async with SqlConversationStore(f"sqlite+aiosqlite:///{copy}") as store:
            return await SqlFileStore(store).get(sent.sha256)
    assert asyncio.run(read_back()) == invoice
