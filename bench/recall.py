"""How often the turns that answer a question reach the model, and at what cost in tokens.

On real long conversations (LoCoMo, five conversations in shared/data) and on our generated
set, each question is asked as the newest turn, addressed to the agent. Ours is the prompt
assembled with default `AssemblerOptions` plus one `conversation_search(question, limit=5)`
call (which leaves out what the prompt holds), and the same as an agent keeping its recall
block (`history.kept_recall`: a kept block made for each question, since a question's turn is
gone before the next, and a fresh block beside it). Printed in the same run: the share of
evidence turns reachable, median tokens per question, both by kind of question, against a
30-line FTS5 BM25 baseline (OR of stemmed words, top 5, +-1 turn, plus a 3,000-token recency
window) and the recency window alone; then the latency of recall at 1,000,000 stored messages:
search_context p50/p99 for the real questions and assemble_prompt p50/p99 in 1,000- and
10,000-turn conversations (for the newest turn, and for a given answered turn as agents call
it, which lets the search run beside the load), on SQLite and (with THREADLINE_TEST_PG_URL
set) PostgreSQL.

    .venv/bin/python bench/recall.py            # full run (builds the 1M-row stores once, cached)
    .venv/bin/python bench/recall.py --quick    # recall figures only
    .venv/bin/python bench/recall.py --quick --postgres   # and recall on PostgreSQL too
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import dataset  # noqa: E402
from assembler import prepare  # noqa: E402
from figures import percentile  # noqa: E402
from locomo import AGENT, locomo_conversations  # noqa: E402
from store import ensure_pg_schema  # noqa: E402

from threadline.agents.search_tool import make_conversation_search_tool  # noqa: E402
from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.history import StoredMessage  # noqa: E402
from threadline.history.assembler import AssemblerOptions, assemble_prompt  # noqa: E402
from threadline.history.beside import parts_beside  # noqa: E402
from threadline.history.embedding_model import shared_embedder  # noqa: E402
from threadline.history.indexer import VectorIndexer  # noqa: E402
from threadline.history.kept_recall import KeptRecall  # noqa: E402
from threadline.history.search import ENGLISH_STOP_WORDS, format_windows  # noqa: E402
from threadline.history.store import ConversationStore  # noqa: E402
from threadline.history.tokens import default_counter  # noqa: E402
from threadline.log import configure_logging  # noqa: E402

RECENCY = 3000
CACHE = Path(tempfile.gettempdir()) / "threadline-bench"


@dataclass
class Asked:
    """One question as the benchmark asks it, whichever data set it comes from."""

    turn: StoredMessage
    text: str
    kind: str
    evidence_ids: list[str]
    agent: str = AGENT


@dataclass
class Tally:
    """Evidence reached and tokens spent by one method, overall and by kind of question."""

    reached: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    evidence: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    tokens: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    assembly_ms: list[float] = field(default_factory=list)
    missed: dict[str, list[Asked]] = field(default_factory=lambda: defaultdict(list))

    def add(self, asked: Asked, found: set[str], tokens: int) -> None:
        hits = sum(e in found for e in asked.evidence_ids)
        for key in ("all", asked.kind):
            self.reached[key] += hits
            self.evidence[key] += len(asked.evidence_ids)
            self.tokens[key].append(tokens)
        if hits < len(asked.evidence_ids):
            self.missed[asked.kind].append(asked)

    def share(self, key: str = "all") -> float:
        return self.reached[key] / max(self.evidence[key], 1)

    def cell(self, key: str) -> str:
        return f"{self.share(key):6.1%} {statistics.median(self.tokens[key]):6,.0f}"


class Bm25Baseline:
    """The 30-line baseline: FTS5 porter BM25, OR of words, top 5 +-1 turn, recency window."""

    def __init__(self, turns: Sequence[StoredMessage]) -> None:
        self.turns = list(turns)
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='porter')")
        self.db.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)", [
            (n, f"{m.participant.display_name}: {m.content}") for n, m in enumerate(self.turns)])
        tokens = [m.token_count or 0 for m in self.turns]
        self.recent = len(self.turns)
        while self.recent > 0 and sum(tokens[self.recent - 1:]) <= RECENCY:
            self.recent -= 1

    def answer(self, question: str) -> tuple[set[str], str]:
        words = [w for w in re.findall(r"\w+", question.lower()) if w not in ENGLISH_STOP_WORDS]
        match = " OR ".join(f'"{w}"' for w in words)
        rows = self.db.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 5",
                               (match,)).fetchall() if words else []
        shown = sorted({n + d for (n,) in rows for d in (-1, 0, 1)
                        if 0 <= n + d < len(self.turns)} | set(range(self.recent, len(self.turns))))
        text = "\n".join(f"[{m.timestamp:%Y-%m-%d}] {m.participant.display_name}: {m.content}"
                         for m in (self.turns[n] for n in shown))
        return {self.turns[n].id for n in shown}, text


async def evaluate(label: str, conversations: Sequence[tuple[list[StoredMessage], list[Asked]]],
                   url: str, *, by_kind: bool) -> Tally:
    counter = default_counter()
    ours, lexical, baseline, recency = Tally(), Tally(), Tally(), Tally()
    keeping = Tally()
    async with SqlConversationStore(url) as store:
        embedder, vectors = await shared_embedder(), parts_beside(store).vectors
        for turns, questions in conversations:
            await store.append_many(turns)
            if embedder is not None and vectors is not None:
                await VectorIndexer(store, vectors, embedder).fill()
            stored = await store.get(turns[0].conversation_id)
            bm25 = Bm25Baseline(stored)
            kept = KeptRecall()
            for asked in questions:
                for by_meaning, tally, kept_recall in ((True, ours, None), (False, lexical, None),
                                                       (True, keeping, kept)):
                    found, tokens, took = await ours_for(store, asked, by_meaning=by_meaning,
                                                         kept_recall=kept_recall)
                    tally.add(asked, found, tokens)
                    tally.assembly_ms.append(took)
                found_ids, text = bm25.answer(asked.text)
                baseline.add(asked, found_ids, counter.count(text))
                recent = {m.id for m in stored[bm25.recent:]}
                recency.add(asked, recent, sum(m.token_count or 0 for m in stored[bm25.recent:]))
    questions = sum(len(q) for _, q in conversations)
    kinds = sorted(k for k in ours.evidence if k != "all") if by_kind else []
    print(f"\n{label}: {len(conversations)} conversations, {questions} questions, "
          f"{ours.evidence['all']} evidence turns; evidence reachable and median tokens/question")
    print(f"  {'method':46} {'all':>13}" + "".join(f" {k:>13}" for k in kinds))
    model = embedder.name if embedder is not None and vectors is not None else "none installed"
    for name, tally in ((f"ours, by words and meaning ({model})", ours),
                        ("ours, by words only (recall_by_meaning off)", lexical),
                        ("ours, as an agent keeping its recall block", keeping),
                        ("FTS5 BM25 top 5 +-1 turn + recency window", baseline),
                        ("recency window alone", recency)):
        print(f"  {name:46} {tally.cell('all')}" + "".join(f" {tally.cell(k)}" for k in kinds))
    print(f"  ours - baseline: {100 * (ours.share() - baseline.share()):+.1f} points; "
          f"meaning adds {100 * (ours.share() - lexical.share()):+.1f} points")
    for name, tally in (("by words and meaning", ours), ("by words only", lexical)):
        print(f"  assemble_prompt, {name}: p50 {percentile(tally.assembly_ms, 0.5):.2f} ms, "
              f"p99 {percentile(tally.assembly_ms, 0.99):.2f} ms")
    print("  questions with evidence missed, by kind (missed/asked): " + ", ".join(
        f"{k} {len(ours.missed[k])}/{len(ours.tokens[k])}" for k in sorted(ours.missed)))
    return ours


async def ours_for(store: ConversationStore, asked: Asked, *, by_meaning: bool,
                   kept_recall: KeptRecall | None = None) -> tuple[set[str], int, float]:
    """What the agent sees for one question: the prompt and one search tool call; and the
    milliseconds the prompt's assembly took (recall included). With `kept_recall`, recall
    keeps a block as an agent does (`history.kept_recall`)."""
    counter = default_counter()
    cid = asked.turn.conversation_id
    await store.append(asked.turn)
    try:
        started = time.perf_counter()
        prompt = await assemble_prompt(store, cid, asked.agent, asked.agent,
                                       AssemblerOptions(recall_by_meaning=by_meaning),
                                       answering=asked.turn, kept_recall=kept_recall)
        took = (time.perf_counter() - started) * 1000
        tool = make_conversation_search_tool(store, cid,
                                             exclude_ids=(asked.turn.id, *prompt.shown_ids),
                                             by_meaning=by_meaning)
        windows = await tool.search(asked.text, 5)
    finally:
        await store.delete_messages(cid, [asked.turn.id])
    found = set(prompt.included_ids) | set(prompt.recalled_ids)
    found |= {m.id for w in windows for m in w.messages}
    return found, prompt.token_count + counter.count(format_windows(windows)), took


def real_set() -> list[tuple[list[StoredMessage], list[Asked]]]:
    return [(c.turns, [Asked(c.asked(n), q.text, q.kind, q.evidence_ids)
                       for n, q in enumerate(c.questions)])
            for c in locomo_conversations()]


def generated_set(seed: int) -> list[tuple[list[StoredMessage], list[Asked]]]:
    result = []
    for c in dataset.long_conversations(seed=seed):
        asked = [Asked(dataset.question_turn(c, q, n), q.text, q.kind, q.evidence_ids, q.asked_of)
                 for n, q in enumerate(c.questions)]
        result.append((c.turns, asked))
    return result


async def latency_at_scale(label: str, url: str, rows: int, repeat: int) -> None:
    """search_context on the real questions and assemble_prompt at 10,000 turns, in `rows`."""
    async with SqlConversationStore(url) as store:
        await prepare(store, rows)
        conversations = locomo_conversations()
        for conversation in conversations:
            await store.append_many(conversation.turns)
        print(f"\n{label}: {await store.count():,} rows in the store")
        searches = []
        for conversation in conversations:
            for question in conversation.questions:
                started = time.perf_counter()
                await store.search_context(conversation.conversation_id, question.text,
                                           limit=5, context=1)
                searches.append((time.perf_counter() - started) * 1000)
        print(f"  search_context (limit 5), {len(searches)} real questions: "
              f"p50 {percentile(searches, 0.5):.2f} ms, p99 {percentile(searches, 0.99):.2f} ms")
        for size in (1_000, 10_000):
            cid = f"bench:assembler:{size}"
            newest = (await store.get(cid, limit=1))[0]
            for how, answering in (("newest turn", None), ("answering=the turn", newest)):
                await assemble_prompt(store, cid, "support", "Support", answering=answering)
                timings = []
                for _ in range(repeat):
                    started = time.perf_counter()
                    await assemble_prompt(store, cid, "support", "Support", answering=answering)
                    timings.append((time.perf_counter() - started) * 1000)
                print(f"  assemble_prompt (defaults, {how}), {size:,}-turn conversation: "
                      f"p50 {percentile(timings, 0.5):.2f} ms, "
                      f"p99 {percentile(timings, 0.99):.2f} ms")


async def fresh_pg_schema(url: str, schema: str) -> None:
    """An empty schema for the recall run (the previous run's turns would be duplicates)."""
    import asyncpg

    connection = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        await connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        await connection.execute(f"CREATE SCHEMA {schema}")
    finally:
        await connection.close()


async def main() -> None:
    configure_logging("warning")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the 1M-row latency figures")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--postgres", action="store_true",
                        help="measure recall on PostgreSQL (THREADLINE_TEST_PG_URL) too")
    args = parser.parse_args()
    pg = os.environ.get("THREADLINE_TEST_PG_URL")
    real = real_set()
    if not real:
        print("Real conversations: skipped (no LoCoMo files in shared/data/locomo-dev)")
    with tempfile.TemporaryDirectory() as folder:
        stores = [("SQLite", f"sqlite+aiosqlite:///{folder}/real.db")]
        if args.postgres and pg:
            schema = "bench_recall_real"
            await fresh_pg_schema(pg, schema)
            stores.append(("PostgreSQL", f"{pg}{'&' if '?' in pg else '?'}search_path={schema}"))
        for label, url in stores if real else []:
            await evaluate(f"Real conversations (LoCoMo), {label}", real, url, by_kind=True)
        await evaluate("Generated set, SQLite", generated_set(args.seed),
                       f"sqlite+aiosqlite:///{folder}/generated.db", by_kind=False)
    if args.quick:
        return
    CACHE.mkdir(exist_ok=True)
    targets = [("SQLite", f"sqlite+aiosqlite:///{CACHE / f'recall-{args.rows}.db'}")]
    if pg:
        schema = f"bench_recall_{args.rows}"
        await ensure_pg_schema(pg, schema)
        targets.append(("PostgreSQL", f"{pg}{'&' if '?' in pg else '?'}search_path={schema}"))
    else:
        print("PostgreSQL: skipped (set THREADLINE_TEST_PG_URL to include it)")
    for label, url in targets:
        await latency_at_scale(label, url, args.rows, args.repeat)


if __name__ == "__main__":
    asyncio.run(main())
