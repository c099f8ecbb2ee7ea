"""How often the turns that answer a question reach the model, and at what cost in tokens.

Prints, for our search (the assembled prompt with automatic recall, plus the conversation_search
tool's output at limit 5) and for baselines in the same run (a recency window of the same
budget, LIKE '%question%', FTS5 with every word required, the whole history): the share of
evidence turns reachable, tokens per question, misses by kind of question, and search p50/p99 on
a SQLite store of 1,000,000 messages.

    .venv/bin/python bench/recall.py            # full run (builds a 1M-row file once, cached)
    .venv/bin/python bench/recall.py --quick    # no 1M-row latency figures
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dataset import Conversation, long_conversations, question_turn  # noqa: E402
from figures import percentile  # noqa: E402
from fill import fill_to  # noqa: E402

from threadline.history import SqlConversationStore  # noqa: E402
from threadline.history.assembler import AssemblerOptions, assemble_prompt  # noqa: E402
from threadline.history.search import conversation_key, format_windows  # noqa: E402
from threadline.history.tokens import default_counter  # noqa: E402
from threadline.log import configure_logging  # noqa: E402

BUDGET = 3000
TOOL_TOKEN_CAP = 1500  # the conversation_search tool's own default
CACHE = Path(tempfile.gettempdir()) / "threadline-bench"


def fts5_all_words(db: Path, conversation_id: str, question: str) -> list[str]:
    """The obvious safe escaping: every word quoted, all required."""
    words = [w for w in "".join(c if c.isalnum() else " " for c in question).split()]
    if not words:
        return []
    match = f'conv_key : "{conversation_key(conversation_id)}" AND ' + " ".join(
        f'"{w}"' for w in words)
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "SELECT m.id FROM threadline_messages_fts f JOIN threadline_messages m "
            "ON m.row_id = f.rowid WHERE threadline_messages_fts MATCH ? "
            "ORDER BY bm25(threadline_messages_fts) LIMIT 5", (match,)).fetchall()
    return [r[0] for r in rows]


def like_question(db: Path, conversation_id: str, question: str) -> list[str]:
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "SELECT id FROM threadline_messages WHERE conversation_id = ? AND content LIKE ? "
            "LIMIT 5", (conversation_id, f"%{question}%")).fetchall()
    return [r[0] for r in rows]


async def evaluate(conversations: list[Conversation], db: Path) -> None:
    counter = default_counter()
    methods = ["ours: prompt with recall + search tool", "recency window (3,500 tokens)",
               "LIKE '%question%' top 5", "FTS5 all words required top 5"]
    reached: dict[str, int] = Counter()
    tokens: dict[str, list[int]] = {m: [] for m in methods}
    total_evidence = 0
    misses: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    whole_history: list[int] = []
    async with SqlConversationStore(f"sqlite+aiosqlite:///{db}") as store:
        for conversation in conversations:
            await store.append_many(conversation.turns)
            history_tokens = sum(m.token_count or 0 for m in
                                 await store.get(conversation.conversation_id))
            for position, question in enumerate(conversation.questions):
                asked = question_turn(conversation, question, position)
                await store.append(asked)
                cid = conversation.conversation_id
                prompt = await assemble_prompt(store, cid, question.asked_of, question.asked_of,
                                               AssemblerOptions(token_budget=BUDGET))
                windows = await store.search_context(cid, question.text, limit=5, context=1,
                                                     token_cap=TOOL_TOKEN_CAP)
                tool_ids = {m.id for w in windows for m in w.messages}
                ours = set(prompt.included_ids) | set(prompt.recalled_ids) | tool_ids
                tokens[methods[0]].append(prompt.token_count
                                          + counter.count(format_windows(windows)))
                recency = await assemble_prompt(
                    store, cid, question.asked_of, question.asked_of,
                    AssemblerOptions(token_budget=3500, recall=False, addressed_only_mode=False,
                                     max_turns_to_load=500))
                tokens[methods[1]].append(recency.token_count)
                like = set(like_question(db, cid, question.text))
                strict = set(fts5_all_words(db, cid, question.text))
                found_sets = [ours, set(recency.included_ids), like, strict]
                for method, found in zip(methods, found_sets, strict=True):
                    reached[method] += sum(e in found for e in question.evidence_ids)
                total_evidence += len(question.evidence_ids)
                whole_history.append(history_tokens)
                kinds[question.kind] += 1
                if not all(e in ours for e in question.evidence_ids):
                    misses[question.kind] += 1
                await store.delete_messages(cid, [asked.id])
    questions = sum(len(c.questions) for c in conversations)
    print(f"{len(conversations)} conversations, {questions} questions, "
          f"{total_evidence} evidence turns")
    print(f"{'method':44} {'evidence reached':>17} {'tokens/question':>16}")
    for method in methods:
        share = reached[method] / total_evidence
        spent = statistics.mean(tokens[method]) if tokens[method] else 0
        shown = f"{spent:,.0f}" if tokens[method] else "small"
        print(f"{method:44} {share:17.1%} {shown:>16}")
    print(f"{'whole history':44} {1:17.0%} {statistics.mean(whole_history):16,.0f}")
    best_baseline = max(reached[m] for m in methods[1:]) / total_evidence
    print(f"ours / best baseline: {reached[methods[0]] / total_evidence / best_baseline:.1f}x")
    print("questions missed, by kind (missed/asked):")
    for kind, asked_count in sorted(kinds.items()):
        print(f"  {kind:28} {misses[kind]}/{asked_count}")


async def latency_at_scale(conversations: list[Conversation], rows: int) -> None:
    """Search p50/p99 inside the benchmark's conversations when the file holds `rows` turns."""
    CACHE.mkdir(exist_ok=True)
    db = CACHE / f"recall-{rows}.db"
    url = f"sqlite+aiosqlite:///{db}"
    async with SqlConversationStore(url) as store:
        if await store.count() < rows:
            for conversation in conversations:
                await store.append_many(conversation.turns)
            await fill_to(store, rows)
        print(f"search latency with {await store.count():,} rows in the file:")
        timings = []
        for conversation in conversations:
            for question in conversation.questions:
                started = time.perf_counter()
                await store.search_context(conversation.conversation_id, question.text,
                                           limit=5, context=1, token_cap=TOOL_TOKEN_CAP)
                timings.append((time.perf_counter() - started) * 1000)
        print(f"  search_context (limit 5, context 1): p50 {percentile(timings, 0.5):.2f} ms, "
              f"p99 {percentile(timings, 0.99):.2f} ms over {len(timings)} questions")


async def main() -> None:
    configure_logging("warning")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the 1M-row latency figures")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    conversations = long_conversations(seed=args.seed)
    with tempfile.TemporaryDirectory() as folder:
        await evaluate(conversations, Path(folder) / "recall.db")
    if not args.quick:
        await latency_at_scale(conversations, args.rows)


if __name__ == "__main__":
    asyncio.run(main())
