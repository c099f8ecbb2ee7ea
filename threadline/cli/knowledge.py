"""`threadline knowledge sync`: the operator brings the knowledge sources up to date.

    threadline knowledge sync --config threadline.yaml [--source help]

Reads each source (`knowledge.sources` in the config) with a progress line, stores changed
and new documents' sections, deletes removed ones, then gives the new sections their vectors
(the embedding model, when installed) so they are found by meaning from the first turn. URLs
are fetched here and only here. What could not be read is printed, one line each; the command
fails (exit 1) only when a source could not be synced at all.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from threadline.backends import open_backend
from threadline.cli.history import Progress
from threadline.config import load_settings
from threadline.errors import ConfigError
from threadline.history.beside import parts_beside
from threadline.history.embedding_model import shared_embedder
from threadline.history.indexer import VectorIndexer
from threadline.history.store import ConversationStore
from threadline.history.tokens import default_counter
from threadline.knowledge.feature import build_library
from threadline.knowledge.source import SyncedSource
from threadline.knowledge.sync import SyncProgress

ACTIONS = {
    "sync": "Read the knowledge sources into the store: changed documents re-indexed, removed "
            "ones deleted, unchanged ones left alone; URLs are fetched now.",
}


def add_arguments(action: str, parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source", action="append", metavar="NAME",
                        help="only this source (repeat for more; default: all)")


def main(args: argparse.Namespace) -> int:
    """`threadline knowledge sync`."""
    if args.config is None:
        raise ConfigError("knowledge sync needs --config FILE: the sources are read from it")
    settings = load_settings(args.config)
    if args.url or args.db:
        raise ConfigError("knowledge sync reads the store from --config (store.url), so the "
                          "bot finds what it syncs; drop --db/--url")
    names = args.source or list(settings.knowledge.sources)
    unknown = sorted(set(names) - set(settings.knowledge.sources))
    if unknown or not names:
        raise ConfigError(f"no knowledge source {', '.join(unknown) or '(none configured)'} in "
                          f"{args.config} (sources: "
                          f"{', '.join(settings.knowledge.sources) or 'none'})")

    async def run() -> int:
        async with open_backend(settings.store.url) as backend:
            library = build_library(settings.knowledge, history=backend.history,
                                    base_dir=settings.base_dir, counter=default_counter())
            failed = 0
            for name in names:
                source = library.sources[name]
                if not isinstance(source, SyncedSource):
                    print(f"{name}: a live source, nothing to sync")
                    continue
                progress = Progress(f"{name}: read", unit="documents")
                try:
                    report = await source.sync(_said_by(progress))
                except Exception as exc:  # one source failing does not stop the others
                    failed += 1
                    print(f"{name}: not synced: {type(exc).__name__}: {exc}", file=sys.stderr)
                    continue
                progress.done("\n".join(report.lines()))
            await _embed(backend.history)
            return 1 if failed else 0

    return asyncio.run(run())


def _said_by(progress: Progress) -> SyncProgress:
    def said(source: str, done: int, seen: int, key: str) -> None:
        progress.add(1, f" ({key})")

    return said


async def _embed(history: ConversationStore) -> None:
    vectors, embedder = parts_beside(history).vectors, await shared_embedder()
    if vectors is None or embedder is None:
        print("no embedding model or vectors: sections are found by their words only")
        return
    progress = Progress("embedded", unit="sections and turns")
    done = await VectorIndexer(history, vectors, embedder).fill(
        lambda p: progress.add(p.embedded - progress.count, f" ({p.done:,} of {p.total:,})"))
    progress.done(f"vectors: {done.done:,} of {done.total:,} ({embedder.name})")
