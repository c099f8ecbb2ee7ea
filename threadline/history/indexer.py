"""Gives stored turns their vectors in the background, so embedding is never on a turn's path.

    indexer = VectorIndexer(history, backend.vectors, embedder)
    indexer.start()            # woken by appends; picks up whatever lacks a vector
    ...
    await indexer.stop()

A turn is appended and answered without waiting for its vector: until the indexer has made
it, recall finds the turn by its words only. The indexer asks the backend for turns without a
vector by this model (`VectorIndex.unembedded`), oldest first, embeds a batch in a worker
thread (the turn or two just added at once, when that costs less than the hop:
`embeds_at_once`) and stores it, batch after batch until one comes back short of full (all
there was); then it waits for the next append (heard through the history's change
notifications) or `idle_seconds`, whichever comes first, and `GATHER_SECONDS` more for the
appends that follow it.
The work lives in the database, not in this process: a restart, a backlog from before the
extra was installed, an import, or turns another process appended are all found the same way,
and `threadline history reindex` runs the same batches in the foreground with progress (`fill`).

Two indexers on one database may embed the same turns, never store them twice: the backend's
put is idempotent. A failing embedder or store is logged and retried after a pause that grows
to `MAX_PAUSE`; answering never waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from threadline.errors import StoreError
from threadline.history.changes import HistoryChange, Unsubscribe
from threadline.history.embedding_model import embedded_text, embeds_at_once
from threadline.history.store import ConversationStore
from threadline.history.vectors import Embedder, VectorIndex
from threadline.waiting import cancel_and_wait, set_within

log = structlog.get_logger("threadline.history.indexer")

# Turns embedded and stored together: one thread hop and one transaction (about 10 ms of
# WordLlama on one core for 256 turns).
BATCH = 256
# Seconds an append waits for others to join its batch before the indexer wakes.
GATHER_SECONDS = 0.2
# Longest pause between attempts after a failure (the first is one second, then doubling).
MAX_PAUSE = 60.0
# Seconds between progress lines while the background indexer works through a backlog.
SAY_EVERY = 30.0


@dataclass(frozen=True, slots=True)
class Progress:
    """How far a fill has come: turns with a vector of all that should have one, and speed."""

    done: int
    total: int
    embedded: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.embedded / self.seconds if self.seconds > 0 else 0.0


class VectorIndexer:
    """Embeds stored turns without a vector, batch by batch (see the module docstring)."""

    def __init__(self, history: ConversationStore, vectors: VectorIndex, embedder: Embedder,
                 *, batch: int = BATCH, idle_seconds: float = 60.0) -> None:
        self.history = history
        self.vectors = vectors
        self.embedder = embedder
        self.batch = batch
        self.idle_seconds = idle_seconds
        self.embedded = 0  # turns this indexer has stored vectors for, since it was made
        # Set while the last pass found nothing left to embed and no append was heard since.
        self.caught_up = asyncio.Event()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._unsubscribe: Unsubscribe | None = None

    async def embed_batch(self) -> int:
        """Embed and store the next batch of turns without a vector; how many were found
        (0: nothing is left)."""
        model = self.embedder.name
        turns = await self.vectors.unembedded(model, limit=self.batch)
        if not turns:
            return 0
        texts = [embedded_text(self.embedder, turn) for turn in turns]
        vectors = (self.embedder.embed(texts) if embeds_at_once(self.embedder, texts)
                   else await asyncio.to_thread(self.embedder.embed, texts))
        stored = await self.vectors.put_many(
            model, [(turn.id, vector) for turn, vector in zip(turns, vectors, strict=True)])
        self.embedded += stored
        log.debug("vectors.indexed", model=model, turns=len(turns), stored=stored,
                  conversations=sorted({t.conversation_id for t in turns}))
        return len(turns)

    async def fill(self, on_progress: Callable[[Progress], None] | None = None, *,
                   every: float = 2.0) -> Progress:
        """Embed every turn without a vector now, in the foreground (`history reindex`);
        `on_progress` hears where it stands at the start, every `every` seconds and at the
        end. Stopping half-way loses nothing: the next fill starts where this one stopped."""
        model = self.embedder.name
        done, total = await self.vectors.progress(model)
        started = last_said = time.monotonic()
        embedded = 0

        async def say() -> Progress:
            progress = Progress(min(done + embedded, total), total, embedded,
                                time.monotonic() - started)
            if on_progress is not None:
                on_progress(progress)
            return progress

        await say()
        while found := await self.embed_batch():
            embedded += found
            if time.monotonic() - last_said >= every:
                last_said = time.monotonic()
                await say()
        return await say()

    def start(self) -> None:
        """Index in the background from now on, woken by appends to the history."""
        if self._task is not None:
            return
        self._unsubscribe = self.history.subscribe(self._heard)
        self._task = asyncio.get_running_loop().create_task(self._run())
        log.info("vectors.indexer_started", model=self.embedder.name, batch=self.batch)

    def _heard(self, change: HistoryChange) -> None:
        if change.kind in ("append", "edit"):
            self.caught_up.clear()
            self._wake.set()

    async def _say_progress(self) -> None:
        done, total = await self.vectors.progress(self.embedder.name)
        log.info("vectors.backlog", model=self.embedder.name, done=done, total=total,
                 embedded=self.embedded)

    async def _run(self) -> None:
        pause = 1.0
        said = time.monotonic()
        while True:
            try:
                found = await self.embed_batch()
            except Exception as exc:  # a dead model or store must not end indexing for good
                log.warning("vectors.indexing_failed", model=self.embedder.name,
                            error=f"{type(exc).__name__}: {exc}", retry_in=pause,
                            consequence="new turns are found by their words until it works")
                await asyncio.sleep(pause)
                pause = min(pause * 2, MAX_PAUSE)
                continue
            pause = 1.0
            if found >= self.batch:  # a backlog: its next batch at once
                if time.monotonic() - said >= SAY_EVERY:
                    said = time.monotonic()
                    with contextlib.suppress(StoreError):
                        await self._say_progress()
                continue
            # A pass that found less than a batch embedded all there was; what was appended
            # since waits for the next pass, gathered. (Passing again at once chased a busy
            # chat a turn or two at a time: a read, an embedding and a write every few turns.)
            if not self._wake.is_set():  # an append heard during the pass may be unseen
                self.caught_up.set()
            await set_within(self._wake, self.idle_seconds)
            self._wake.clear()
            await asyncio.sleep(GATHER_SECONDS)

    async def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None


def indexer_for(history: ConversationStore, vectors: VectorIndex | None,
                embedder: Embedder | None) -> VectorIndexer | None:
    """The background indexer when both halves are there (a model from the embeddings extra,
    a backend that keeps vectors); None, and recall stays lexical, otherwise."""
    if vectors is None or embedder is None:
        return None
    return VectorIndexer(history, vectors, embedder)
