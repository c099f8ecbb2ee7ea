"""Whether each agent can still reach the facts told to it, and at what share of the tokens.

A generated 500-turn channel: three agents and four humans, small talk between 50 planted
facts, each stated to one agent (an order number, a preference, a name...). For each agent at a
3,000-token budget it asks about every one of its facts as the newest turn and prints the share
reachable (in the assembled prompt, in the stored rolling summary, or in the top 5 of
conversation_search for the question) and the tokens used against the whole history. The
summarizer is extractive, so no model is needed.

    .venv/bin/python bench/memory.py
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dataset import AGENTS, HUMANS, build_conversation, question_turn  # noqa: E402

from threadline.agents.summarizer import ExtractiveSummarizer  # noqa: E402
from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.history.assembler import AssemblerOptions, assemble_prompt  # noqa: E402
from threadline.history.summary import latest_summary  # noqa: E402
from threadline.log import configure_logging  # noqa: E402

OPTIONS = AssemblerOptions(token_budget=3000)


async def main() -> None:
    configure_logging("warning")
    rng = random.Random(5)
    conversation = build_conversation(rng, "slack:T1:CMEM", turns=500, sessions=20,
                                      humans=HUMANS[:4], agents=AGENTS, facts=50,
                                      address_facts=True)
    summarizer = ExtractiveSummarizer()
    with tempfile.TemporaryDirectory() as folder:
        async with SqlConversationStore(f"sqlite+aiosqlite:///{folder}/memory.db") as store:
            await store.append_many(conversation.turns)
            cid = conversation.conversation_id
            whole = sum(m.token_count or 0 for m in await store.get(cid))
            by_id = {t.id: t for t in conversation.turns}
            print(f"500 turns, {whole:,} tokens in the whole history; budget 3,000 per prompt")
            print(f"{'agent':10} {'facts':>5} {'reachable':>10} {'in prompt':>10} "
                  f"{'in summary':>11} {'via search':>11} {'tokens/turn':>12} {'vs whole':>9}")
            for agent in AGENTS:
                mine = [q for q in conversation.questions if q.asked_of == agent]
                where: Counter[str] = Counter()
                tokens: list[int] = []
                missed: list[str] = []
                for position, question in enumerate(mine):
                    asked = question_turn(conversation, question, position)
                    await store.append(asked)
                    prompt = await assemble_prompt(store, cid, agent, agent, OPTIONS, summarizer)
                    summary = await latest_summary(store, cid, agent)
                    hits = await store.search_context(cid, question.text, limit=5, context=0)
                    found_ids = {m.id for w in hits for m in w.messages}
                    in_prompt = set(prompt.included_ids) | set(prompt.recalled_ids)
                    places = []
                    for evidence in question.evidence_ids:
                        if evidence in in_prompt:
                            places.append("prompt")
                        elif summary and by_id[evidence].content in summary.content:
                            places.append("summary")
                        elif evidence in found_ids:
                            places.append("search")
                        else:
                            places.append("missed")
                    if "missed" in places:
                        missed.append(f"{question.kind}: {question.text!r}")
                    else:
                        where[min(places, key=["prompt", "summary", "search"].index)] += 1
                    tokens.append(prompt.token_count)
                    await store.delete_messages(cid, [asked.id])
                reachable = sum(where.values())
                spent = statistics.mean(tokens)
                print(f"{agent:10} {len(mine):5} {reachable / len(mine):10.0%} "
                      f"{where['prompt']:10} {where['summary']:11} {where['search']:11} "
                      f"{spent:12,.0f} {spent / whole:9.1%}")
                for line in missed:
                    print(f"    missed {line}")


if __name__ == "__main__":
    asyncio.run(main())
