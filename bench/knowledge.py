"""How often the page span that answers a support question reaches the model, at what cost.

On the development half of doc2dial (`../shared/data/kb-dev`: 112 help pages, 1,976 questions
in 327 conversations, each with the span of the page that answers it; its README says how to
measure), the bot is given the pages as its one knowledge source, synced into a SQLite store
(`threadline knowledge sync`'s code, timed). Each question is asked with the conversation
before it (user turns, agent turns as the bot's own earlier replies); what the model is shown
from the knowledge base is the grounding block assembled for the turn (in the default settings'
`share` of a 3,000-token budget, all of it or half by `block_room`) plus one `knowledge_search`
call made as the tool makes it (`search_ask`: the query with the turn and the turns before
it; sections the block already shows left out; `search_tokens`). No model is called, so the
user's question stands in for the model's own query. A question is reached when a shown
section of its page overlaps an evidence span (by character offsets). Each line gives the
share reached of all questions and of first questions, the median and mean knowledge tokens
shown, and the share reached in each half of the conversations split by id (a gain that holds
in one half only is fitted to those pages). Printed in the same run, beside it: the README's
baseline, BM25 over ~300-token passages (FTS5, porter, OR-ed words without stop words, top 5,
each with its page title), given the whole conversation so far and given the question alone.

Then the search's latency at 100,000 sections (the pages' sections copied under generated
sources' names... see `--scale`), on SQLite and, with THREADLINE_TEST_PG_URL set, PostgreSQL.

    .venv/bin/python bench/knowledge.py                 # figures on kb-dev, SQLite
    .venv/bin/python bench/knowledge.py --scale         # and search latency at 100,000 sections
    .venv/bin/python bench/knowledge.py --scale-only    # the latency alone (no kb-dev figures)
    THREADLINE_EMBEDDING_MODEL=minilm .venv/bin/python bench/knowledge.py   # the other model
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from figures import percentile  # noqa: E402

from tests.conftest import drop_pg_schema, fresh_pg_schema  # noqa: E402
from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.backends.sql.operations import SqlRunner, one_write  # noqa: E402
from threadline.history.beside import parts_beside  # noqa: E402
from threadline.history.embedding_model import shared_embedder  # noqa: E402
from threadline.history.indexer import VectorIndexer  # noqa: E402
from threadline.history.search import ENGLISH_STOP_WORDS  # noqa: E402
from threadline.history.store import ConversationStore, SearchIndexMerging  # noqa: E402
from threadline.history.tokens import default_counter  # noqa: E402
from threadline.knowledge.documents import Document  # noqa: E402
from threadline.knowledge.documents_source import DocumentsSettings, DocumentsSource  # noqa: E402
from threadline.knowledge.grounding import CANDIDATES, block_room, fit_sections  # noqa: E402
from threadline.knowledge.kept_words import kept_words  # noqa: E402
from threadline.knowledge.library import Library  # noqa: E402
from threadline.knowledge.sections import Section, split_sections  # noqa: E402
from threadline.knowledge.settings import KnowledgeSettings  # noqa: E402
from threadline.knowledge.shelf import section_turn, source_conversation  # noqa: E402
from threadline.knowledge.source import FoundSection, KnowledgeAsk, SourceContext  # noqa: E402
from threadline.knowledge.tool import search_ask, search_result  # noqa: E402
from threadline.log import configure_logging  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "kb-dev"
BUDGET = 3000  # the default token budget (AssemblerOptions)
SETTINGS = KnowledgeSettings()  # the defaults: share of the budget, search_tokens
AGENT = "support"
SOURCE = "help"
SCALE_SECTIONS = 100_000
PASSAGE_CHARS = 1000


@dataclass(frozen=True, slots=True)
class Question:
    conversation: str
    turns: tuple[tuple[str, str], ...]  # (role, text) before the question
    question: str
    evidence: tuple[tuple[str, int, int, str], ...]  # (doc_id, start, end, text)

    @property
    def first(self) -> bool:
        return not self.turns


def load_questions(data: Path) -> list[Question]:
    questions = []
    with open(data / "questions.jsonl", encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            questions.append(Question(
                row["conversation_id"], tuple((t["role"], t["text"]) for t in row["context"]),
                row["question"], tuple((e["doc_id"], e["start"], e["end"], e["text"])
                                       for e in row["evidence"])))
    return questions


def reached(question: Question, shown: list[FoundSection]) -> bool:
    return any(s.document == f"{doc}.md" and s.start < end and s.end > start
               for doc, start, end, _ in question.evidence for s in shown)


async def sync_pages(store: ConversationStore, data: Path) -> tuple[DocumentsSource, float]:
    source = DocumentsSource(SourceContext(
        name=SOURCE, options=DocumentsSettings(folder=str(data / "docs")), history=store,
        config_dir=data, counter=default_counter()))
    started = time.perf_counter()
    report = await source.sync(lambda *_: None)
    synced = time.perf_counter() - started
    print(f"sync: {' '.join(report.lines())}")
    vectors, embedder = parts_beside(store).vectors, await shared_embedder()
    if vectors is not None and embedder is not None:
        started = time.perf_counter()
        await VectorIndexer(store, vectors, embedder).fill()
        print(f"embedded with {embedder.name} in {time.perf_counter() - started:.1f} s")
    return source, synced


async def measure_ours(library: Library, questions: list[Question], *, tool: bool
                       ) -> tuple[list[bool], list[int], list[float]]:
    counter = default_counter()
    hits, tokens, seconds = [], [], []
    for q in questions:
        earlier = tuple(text for _, text in q.turns)
        started = time.perf_counter()
        found = await library.search(AGENT, KnowledgeAsk(q.question, earlier), limit=CANDIDATES)
        seconds.append(time.perf_counter() - started)
        room = block_room(found, int(BUDGET * SETTINGS.share))
        grounded = fit_sections(found, room=room, counter=counter)
        shown = list(grounded.sections)
        used = grounded.tokens
        if tool:  # one knowledge_search made as the tool makes it, the user's question
            # standing in for the model's query (a model words its own; none is called here)
            ask = search_ask(q.question, inbound=q.question, earlier=earlier)
            more = await library.search(AGENT, ask, limit=12)
            text, listed = search_result(more, leave_out={s.id for s in shown},
                                         counter=counter, room=SETTINGS.search_tokens)
            shown += listed
            used += counter.count(text)
        hits.append(reached(q, shown))
        tokens.append(used)
    return hits, tokens, seconds


_WORD = re.compile(r"[^\W_]+")


def baseline(data: Path, questions: list[Question], *, whole: bool
             ) -> tuple[list[bool], list[int]]:
    """The README's baseline: FTS5 BM25 over ~300-token passages cut at line boundaries, top 5
    (re-made here to run beside ours; the README's own script gives 79.5% / 73.4%)."""
    counter = default_counter()
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE p USING fts5(title, body, tokenize='porter')")
    passages: list[tuple[str, int, int, str]] = []  # (file, start, end, title + text)
    for path in sorted((data / "docs").glob("*.md")):
        with path.open(encoding="utf-8", newline="") as file:
            text = file.read()
        title = text.split("\n", 1)[0][2:]
        start = at = 0
        piece: list[str] = []
        for line in text.splitlines(keepends=True):
            # Lines gathered up to ~1,000 characters (583 passages; the README's script made 572)
            if piece and sum(map(len, piece)) + len(line) > PASSAGE_CHARS:
                passages.append((path.name, start, at, f"{title}\n{''.join(piece)}"))
                start, piece = at, []
            piece.append(line)
            at += len(line)
        if piece:
            passages.append((path.name, start, at, f"{title}\n{''.join(piece)}"))
    db.executemany("INSERT INTO p(rowid, title, body) VALUES (?, ?, ?)",
                   [(n, p[3].split("\n", 1)[0], p[3]) for n, p in enumerate(passages)])
    hits, tokens = [], []
    for q in questions:
        text = " ".join([q.question, *(t for _, t in q.turns)]) if whole else q.question
        words = [w.lower() for w in _WORD.findall(text) if w.lower() not in ENGLISH_STOP_WORDS]
        found: list[int] = []
        if words:
            match = " OR ".join('"' + w + '"' for w in dict.fromkeys(words))
            found = [r[0] for r in db.execute(
                "SELECT rowid FROM p WHERE p MATCH ? ORDER BY bm25(p) LIMIT 5", (match,))]
        shown = [passages[i] for i in found]
        hits.append(any(doc == f"{d}.md" and s < end and e > start
                        for d, start, end, _ in q.evidence for doc, s, e, _ in shown))
        tokens.append(sum(counter.count(body) for *_, body in shown))
    return hits, tokens


async def scale_latency(store: ConversationStore, data: Path, questions: list[Question], *,
                        sections: int) -> tuple[float, float, float]:
    """(p50 ms, p99 ms, seconds to store and embed) of the knowledge search over `sections`
    generated sections: the pages' sections with their sentences shuffled, under generated
    document names, in one source."""
    counter = default_counter()
    pages = []
    for path in sorted((data / "docs").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        pages.append((text.split("\n", 1)[0][2:], text))
    base = [(title, s) for title, text in pages
            for s in split_sections(text, title=title, counter=counter, max_tokens=250)]
    rng = random.Random(41)
    started = time.perf_counter()
    when = datetime.now(UTC)
    batch = []
    for n in range(sections):
        title, section = base[n % len(base)]
        sentences = section.text.split(". ")
        rng.shuffle(sentences)
        text = ". ".join(sentences)
        document = Document(f"generated-{n // 8}.md", f"{title} ({n // 8})", text,
                            f"{n:064x}")
        batch.append(section_turn("scale", document, Section(
            title=document.title, headings=section.headings, text=text, start=0,
            end=len(text)), part=n % 8, timestamp=when))
        if len(batch) == 2000:
            await store.append_many(batch)
            batch = []
    if batch:
        await store.append_many(batch)
    if isinstance(store, SearchIndexMerging):  # as a sync of this many sections does
        await store.merge_search_index()
    vectors, embedder = parts_beside(store).vectors, await shared_embedder()
    if vectors is not None and embedder is not None:
        await VectorIndexer(store, vectors, embedder).fill()
    if isinstance(store, SqlConversationStore) and store.dialect == "postgresql":
        # What autovacuum does within a minute of a bulk load (its insert threshold is 20% of
        # the table): without statistics the planner takes the 100,000 new rows for a few
        # hundred and reads them all, and the words index's pending list (up to 4 MB of
        # entries not yet merged, which every search walks whole: 1 ms and more a statement)
        # is merged by VACUUM, or by autovacuum's ANALYZE, not by a plain ANALYZE.
        await store.run("vacuum and analyze", _vacuum_analyze, write=True)
    built = time.perf_counter() - started
    source = DocumentsSource(SourceContext(
        name="scale", options=DocumentsSettings(), history=store, config_dir=data,
        counter=counter))
    library = Library({"scale": source}, agents={AGENT: ["scale"]})
    words = kept_words(store)
    if words is not None:  # the steady state: the source's words kept (built off the turns)
        started = time.perf_counter()
        index = await words.ready(source_conversation("scale"))
        print(f"kept word index: {index.words.sections if index else 0:,} sections, "
              f"{index.size / 2**20 if index else 0:.1f} MiB, built in "
              f"{time.perf_counter() - started:.1f} s")
    latency = []
    for q in questions[:1] + questions[::10]:
        ask = KnowledgeAsk(q.question, tuple(text for _, text in q.turns))
        began = time.perf_counter()
        await library.search(AGENT, ask, limit=12)
        latency.append(time.perf_counter() - began)
    latency = latency[1:]  # the first search reads the vectors into the cache
    return 1000 * percentile(latency, 0.5), 1000 * percentile(latency, 0.99), built


@one_write  # outside a transaction, where VACUUM must run
def _vacuum_analyze(runner: SqlRunner) -> int:
    return runner.rowcount("VACUUM ANALYZE threadline_messages", {})


def line(name: str, questions: list[Question], hits: list[bool], tokens: list[int]) -> str:
    """Shares reached (all, first questions; then all in each half of the conversations split
    by id, a check that a gain is not one half's) and the median and mean tokens shown."""
    ids = sorted({q.conversation for q in questions})
    middle = ids[len(ids) // 2]

    def share(keep: list[bool]) -> str:
        reached = [h for h, k in zip(hits, keep, strict=True) if k]
        return f"{100 * sum(reached) / len(reached):5.1f}%"

    halves = [[q.conversation < middle for q in questions],
              [q.conversation >= middle for q in questions]]
    return (f"{name:<44} {share([True] * len(hits))}  {share([q.first for q in questions])}  "
            f"{statistics.median(tokens):7.0f}  {statistics.mean(tokens):5.0f}  "
            f"{share(halves[0])} / {share(halves[1])}")


async def print_scale(data: Path, questions: list[Question]) -> None:
    urls = {"sqlite": None, "postgresql": os.environ.get("THREADLINE_TEST_PG_URL")}
    for name, url in urls.items():
        if name == "postgresql" and not url:
            print("postgresql: set THREADLINE_TEST_PG_URL for its figure")
            continue
        with tempfile.TemporaryDirectory() as folder:
            # PostgreSQL: a schema of this run's own (another run may be measuring beside it)
            url = f"sqlite:///{folder}/scale.db" if url is None else await fresh_pg_schema(url)
            try:
                async with SqlConversationStore(url) as store:
                    p50, p99, built = await scale_latency(store, data, questions,
                                                          sections=SCALE_SECTIONS)
            finally:
                if name == "postgresql":
                    await drop_pg_schema(url)
        print(f"{name}: knowledge search at {SCALE_SECTIONS:,} sections p50 {p50:.1f} ms, "
              f"p99 {p99:.1f} ms ({len(questions[::10])} questions; stored and embedded in "
              f"{built:.0f} s)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--scale", action="store_true", help="search latency at 100,000 "
                                                             "sections too")
    parser.add_argument("--scale-only", action="store_true",
                        help="only the search latency at 100,000 sections")
    args = parser.parse_args()
    configure_logging(level="WARNING")
    questions = load_questions(args.data)
    if args.scale_only:
        await print_scale(args.data, questions)
        return
    with tempfile.TemporaryDirectory() as folder:
        store = SqlConversationStore(f"sqlite:///{folder}/kb.db")
        async with store:
            source, synced = await sync_pages(store, args.data)
            started = time.perf_counter()
            again = await source.sync(lambda *_: None)
            print(f"second sync (unchanged): {time.perf_counter() - started:.2f} s, "
                  f"did work: {again.did_work}")
            library = Library({SOURCE: source}, agents={AGENT: [SOURCE]})
            grounded_hits, grounded_tokens, latency = await measure_ours(
                library, questions, tool=False)
            both_hits, both_tokens, _ = await measure_ours(library, questions, tool=True)
    print(f"\n{len(questions)} questions ({sum(q.first for q in questions)} first), "
          f"sync of {args.data / 'docs'} in {synced:.1f} s\n")
    print(f"{'':<44} {'all':>6}  {'first':>6}  {'tokens: median':>7}  {'mean':>5}  "
          f"{'all by conversation halves':>6}")
    print(line("threadline: grounding block", questions, grounded_hits, grounded_tokens))
    print(line("threadline: grounding + one knowledge_search", questions, both_hits,
               both_tokens))
    for whole in (True, False):
        hits, tokens = baseline(args.data, questions, whole=whole)
        print(line(f"BM25 300-token passages, {'whole conversation' if whole else 'question'}",
                   questions, hits, tokens))
    if args.scale:
        await print_scale(args.data, questions)
    print(f"\nknowledge search (its searches fused) on {len(questions)} questions: p50 "
          f"{1000 * percentile(latency, 0.5):.1f} ms, p99 {1000 * percentile(latency, 0.99):.1f} ms"
          f" (embedding model: {os.environ.get('THREADLINE_EMBEDDING_MODEL', 'wordllama')})")


if __name__ == "__main__":
    asyncio.run(main())
