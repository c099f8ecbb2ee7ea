"""`threadline history ...` and `threadline db upgrade`: the stored conversations, by hand.

Export writes JSON Lines (one turn per line, in `history.codec`'s encoding, so nothing is encoded
twice), every turn redacted of the secrets the environment and `--config` hold (an export
leaves the machine; `inspector.redaction`); import reads it back in batches and is idempotent:
the store's duplicate protection skips turns it already has, so a file can be imported twice or
after a partial run.

Turns' vectors are not exported: they are made again from the text (`reindex`, or the
running bot's background indexer, which finds imported turns without one), they belong to
one model version that the importing side may not share, and they would quadruple the file
(a kilobyte a turn).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import IO, TextIO

from threadline.backends import open_backend
from threadline.backends.registry import DEFAULT_STORE_URL
from threadline.backends.sql.database_url import sqlite_file
from threadline.cli.invoked import command
from threadline.config import FilesSettings, load_settings
from threadline.errors import ConfigError
from threadline.history.beside import parts_beside
from threadline.history.codec import message_from_dict, message_to_dict
from threadline.history.files import file_from_record, file_record, kept_files
from threadline.history.model import StoredMessage, utc_now
from threadline.history.retention import prune_conversation
from threadline.history.store import ConversationStore
from threadline.inspector.redaction import redactor_for

ACTIONS = {
    "list": "List conversations, most recently active first.",
    "show": "Print one conversation's turns, oldest first.",
    "search": "Search one conversation (ranked, with a neighbouring turn around each hit).",
    "export": "Write every turn of every conversation as JSON Lines.",
    "import": "Read turns from a JSON Lines export; turns already stored are skipped.",
    "prune": "Delete turns older than a number of days.",
    "backfill": "Read what was said in a conversation before the bot heard it (Slack), "
                "into a conversation the history does not know yet.",
    "reindex": "Give every turn without a vector by the installed embedding model one (a "
               "database filled before the embeddings extra, an import); resumable.",
}
IMPORT_BATCH = 500
PROGRESS_EVERY = 0.5  # seconds between progress lines
ALL_CONVERSATIONS = 1_000_000_000


def add_arguments(action: str, parser: argparse.ArgumentParser) -> None:
    if action == "list":
        parser.add_argument("--limit", type=int, default=50, help="how many (default 50)")
    elif action == "show":
        parser.add_argument("conversation", help="conversation id, e.g. slack:T1:C1")
        parser.add_argument("--limit", type=int, help="only the newest N turns")
        parser.add_argument("--json", action="store_true", help="JSON Lines instead of text")
    elif action == "search":
        parser.add_argument("conversation", help="conversation id")
        parser.add_argument("query", help="a question or keywords")
        parser.add_argument("--limit", type=int, default=5, help="how many hits (default 5)")
    elif action == "export":
        parser.add_argument("--out", type=Path, metavar="FILE", help="file (default stdout)")
    elif action == "import":
        parser.add_argument("file", type=Path, help="a JSON Lines export (- for stdin)")
    elif action == "backfill":
        from threadline.cli.backfill import add_arguments as backfill_arguments

        backfill_arguments(parser)
    elif action == "prune":
        parser.add_argument("--older-than", type=float, required=True, metavar="DAYS",
                            dest="older_than", help="delete turns older than DAYS days")


def store_url(args: argparse.Namespace) -> str:
    """The database the command works on: --url, --db, --config's store.url, or the default."""
    if args.url:
        return str(args.url)
    if args.db:
        return f"sqlite:///{args.db}"
    if args.config:
        return load_settings(args.config).store.url
    return DEFAULT_STORE_URL


def files_directory(args: argparse.Namespace) -> str:
    """Where imported files larger than the inline size go: the config's files.directory."""
    settings = load_settings(args.config) if args.config else None
    return settings.files.directory if settings else FilesSettings().directory


def require_database(url: str) -> None:
    """Refuse to read from a SQLite file that does not exist (opening would create it): it is
    made by the first `threadline run`, or by `threadline db upgrade` before that."""
    path = sqlite_file(url)
    if path is not None and not path.exists():
        raise ConfigError(f"no database at {str(path)!r} yet: `{command()} run` creates it on "
                          f"its first start, or create it now with `{command()} db upgrade` "
                          "(with the same --db, --url or --config); if it is elsewhere, pass "
                          "--db PATH, --url URL or --config FILE")


class Progress:
    """A progress line on stderr for long runs, at most every half second."""

    def __init__(self, verb: str, stream: TextIO | None = None, *, unit: str = "turns") -> None:
        self.verb = verb
        self.unit = unit
        self.stream = stream or sys.stderr
        self.count = 0
        self._last = time.monotonic()
        self._shown = False

    def add(self, n: int, detail: str = "") -> None:
        self.count += n
        now = time.monotonic()
        if now - self._last >= PROGRESS_EVERY:
            self._last = now
            self._shown = True
            end = "\r" if self.stream.isatty() else "\n"
            self.stream.write(f"{self.verb} {self.count:,} {self.unit}{detail}{end}")
            self.stream.flush()

    def done(self, summary: str) -> None:
        if self._shown and self.stream.isatty():
            self.stream.write("\n")
        self.stream.write(summary + "\n")


def format_turn(message: StoredMessage) -> str:
    when = message.timestamp.strftime("%Y-%m-%d %H:%M:%S")
    who = message.participant.display_name
    kind = "summary" if message.is_summary else message.participant.kind
    lines = [f"#{message.sequence} {when} {who} ({kind}): {message.content}"]
    for exchange in message.tool_exchanges:
        lines.append(f"    tool {exchange.call.name}({json.dumps(dict(exchange.call.input))})"
                     f" -> {exchange.result.content[:200]}")
    return "\n".join(lines)


async def _list(store: ConversationStore, args: argparse.Namespace) -> int:
    conversations = await store.list_conversations(limit=args.limit)
    if not conversations:
        print("no conversations stored yet", file=sys.stderr)
    for info in conversations:
        print(f"{info.conversation_id}\t{info.message_count} turns\t"
              f"last {info.last_activity:%Y-%m-%d %H:%M:%S}")
    return 0


async def _show(store: ConversationStore, args: argparse.Namespace) -> int:
    turns = await store.get(args.conversation, limit=args.limit, include_summaries=True)
    if not turns:
        raise ConfigError(f"conversation {args.conversation!r} has no stored turns; "
                          "`threadline history list` shows the ids")
    for message in turns:
        print(json.dumps(message_to_dict(message), ensure_ascii=False, sort_keys=True)
              if args.json else format_turn(message))
    return 0


async def _search(store: ConversationStore, args: argparse.Namespace) -> int:
    windows = await store.search_context(args.conversation, args.query, limit=args.limit)
    if not windows:
        print(f"no turns of {args.conversation!r} match {args.query!r}", file=sys.stderr)
        return 0
    for window in windows:
        for message in window.messages:
            marker = ">" if message.id in window.hit_ids else " "
            print(f"{marker} {format_turn(message)}")
        print("--")
    return 0


async def _export(store: ConversationStore, args: argparse.Namespace) -> int:
    conversations = await store.list_conversations(limit=ALL_CONVERSATIONS)
    progress = Progress("exported")
    target: IO[str] = args.target
    # Oldest conversation first, each in its own order, so an import replays history.
    files, written = parts_beside(store).files, set()
    redactor = redactor_for(load_settings(args.config) if args.config else None)
    for index, info in enumerate(reversed(conversations), start=1):
        turns = await store.get(info.conversation_id, include_summaries=True)
        target.writelines(json.dumps(redactor.value(message_to_dict(message)),
                                     ensure_ascii=False, sort_keys=True, default=repr) + "\n"
                          for message in turns)
        for file in kept_files(turns):  # each file's bytes once, after the turns naming it
            data = (None if files is None or file.sha256 in written
                    else await files.get(file.sha256))
            if data is not None:
                written.add(file.sha256)
                target.write(json.dumps({"kind": "file", **file_record(file, data)},
                                        sort_keys=True) + "\n")
        progress.add(len(turns), f" ({index}/{len(conversations)} conversations)")
    target.flush()
    progress.done(f"exported {progress.count:,} turns of {len(conversations):,} conversations"
                  + (f" to {args.out}" if args.out else ""))
    return 0


def _read_export(path: Path) -> Iterator[tuple[int, StoredMessage | tuple[str, str, bytes]]]:
    stream = sys.stdin if str(path) == "-" else open(path, encoding="utf-8")  # noqa: SIM115
    try:
        for number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
                yield number, (file_from_record(raw) if raw.get("kind") == "file"
                               else message_from_dict(raw))
            except (ValueError, KeyError, TypeError) as exc:
                raise ConfigError(f"{path}:{number}: not a Threadline export line ({exc!r}); "
                                  "nothing after this line was imported") from exc
    finally:
        if stream is not sys.stdin:
            stream.close()


async def _import(store: ConversationStore, args: argparse.Namespace) -> int:
    progress = Progress("imported")
    stored = duplicates = 0
    batch: list[StoredMessage] = []

    async def flush() -> None:
        nonlocal stored, duplicates
        # Fresh copies: the target store allocates its own sequences and token counts.
        flags = await store.append_many([replace(m, sequence=None, token_count=None)
                                         for m in batch])
        stored += flags.count(True)
        duplicates += flags.count(False)
        progress.add(len(batch))
        batch.clear()

    kept = parts_beside(store).files
    files = None if kept is None else kept.limited(directory=files_directory(args))
    for number, message in _read_export(args.file):
        if isinstance(message, tuple):  # a file's bytes
            sha, media_type, data = message
            if files is None:
                raise ConfigError(f"{args.file}:{number}: a file's bytes, and this store "
                                  "keeps no files; import into a SQL store (SQLite or "
                                  "PostgreSQL)")
            await files.put(data, sha256=sha, media_type=media_type)
            continue
        batch.append(message)
        if len(batch) >= IMPORT_BATCH:
            await flush()
    if batch:
        await flush()
    progress.done(f"imported {stored:,} turns; {duplicates:,} were already stored")
    return 0


async def _prune(store: ConversationStore, args: argparse.Namespace) -> int:
    if args.older_than < 0:
        raise ConfigError(f"--older-than must be a number of days >= 0, got {args.older_than}")
    cutoff = utc_now() - timedelta(days=args.older_than)
    conversations = await store.list_conversations(limit=ALL_CONVERSATIONS)
    progress = Progress("deleted")
    for info in conversations:
        progress.add(await prune_conversation(store, info.conversation_id, cutoff))
    progress.done(f"deleted {progress.count:,} turns older than {args.older_than:g} days "
                  f"(before {cutoff:%Y-%m-%d %H:%M} UTC)")
    return 0


async def _reindex(store: ConversationStore, args: argparse.Namespace) -> int:
    from threadline.history.embedding_model import EXTRA_HINT, load_embedder
    from threadline.history.indexer import Progress as Indexed
    from threadline.history.indexer import VectorIndexer

    vectors = parts_beside(store).vectors
    embedder = load_embedder() if vectors is not None else None
    if vectors is None or embedder is None:
        raise ConfigError(f"nothing to reindex with: the store {parts_beside(store).name} keeps "
                          f"no vectors or no embedding model is installed; {EXTRA_HINT}, then "
                          "run this again (recall finds turns by their words meanwhile)")
    stream: TextIO = sys.stderr
    end = "\r" if stream.isatty() else "\n"

    def say(progress: Indexed) -> None:
        stream.write(f"reindexed {progress.done:,}/{progress.total:,} turns "
                     f"({progress.per_second:,.0f} turns/s){end}")
        stream.flush()

    final = await VectorIndexer(store, vectors, embedder).fill(say, every=PROGRESS_EVERY)
    if stream.isatty():
        stream.write("\n")
    print(f"{final.embedded:,} turns embedded by {embedder.name} in {final.seconds:.1f}s; "
          f"{final.done:,} of {final.total:,} turns have a vector", file=sys.stderr)
    return 0


async def _backfill(store: ConversationStore, args: argparse.Namespace) -> int:
    from threadline.cli.backfill import backfill_conversation  # builds a channel

    return await backfill_conversation(store, args)


StoreAction = Callable[[ConversationStore, argparse.Namespace], Awaitable[int]]
_HANDLERS: dict[str, StoreAction] = {
    "list": _list, "show": _show, "search": _search, "export": _export, "import": _import,
    "prune": _prune, "reindex": _reindex, "backfill": _backfill,
}


def main(args: argparse.Namespace) -> int:
    """`threadline history ACTION`."""
    url = store_url(args)
    if args.action == "import":
        if str(args.file) != "-" and not args.file.is_file():
            raise ConfigError(f"{args.file}: no such file to import")
    else:
        require_database(url)
    return run_action(url, _HANDLERS[args.action], args,
                      target=args.out if args.action == "export" else None)


def run_action(url: str, action: StoreAction, args: argparse.Namespace, *,
               target: str | Path | None) -> int:
    """Run one command on the store at `url`, its output (`args.target`) a file opened on
    `target`, or standard output when None."""

    async def run() -> int:
        async with open_backend(url) as backend:
            store = backend.history
            return await action(store, args)

    if target is None:
        args.target = sys.stdout
        return asyncio.run(run())
    with open(target, "w", encoding="utf-8") as args.target:
        return asyncio.run(run())


def upgrade_main(args: argparse.Namespace) -> int:
    """`threadline db upgrade`: opening the store runs the packaged migrations."""
    url = store_url(args)

    async def run() -> str:
        async with open_backend(url) as backend:
            return backend.shown_url

    described = asyncio.run(run())
    print(f"database {described} is at the current schema", file=sys.stderr)
    return 0
