"""One process of the shared-budget test: answers turns of one conversation on PostgreSQL.

    python -m tests.spend.budget_worker URL CAP TURNS NAME

It opens the store, prints "ready" and waits for a line on stdin, so two workers start their
turns together. Every model call takes 50 ms and reports 100 tokens; at the end it prints how
many turns were answered and how many refused, as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys

from tests.interceptors.scripted import ScriptedModel, say
from threadline.agents.agent import Agent
from threadline.agents.llm import ModelRequest, ModelResponse, ModelUsage
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.spend import SqlSpendLedger
from threadline.log import configure_logging
from threadline.spend import DailyBudgets
from threadline.spend.limit import STOP_REASON, SpendLimitInterceptor

TOKENS_PER_TURN = 100


async def slow(request: ModelRequest) -> ModelResponse:
    await asyncio.sleep(0.05)
    return ModelResponse(text="ok", usage=ModelUsage(input_tokens=80, output_tokens=20))


async def main(url: str, cap: int, turns: int, name: str) -> None:
    configure_logging("warning")  # to stderr: stdout carries "ready" and the result
    async with SqlConversationStore(url) as store:
        limit = SpendLimitInterceptor(SqlSpendLedger(store),
                                      budgets=DailyBudgets(per_conversation=cap),
                                      reserve=TOKENS_PER_TURN)
        agent = Agent(name=name, conversation_history=store, provider=ScriptedModel(slow),
                      interceptors=[limit])
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        outcomes = [(await agent.invoke(say(f"@{name} turn {n}", message_id=f"{name}{n}"))
                     ).stop_reason
                    for n in range(turns)]
        await agent.close()
    print(json.dumps({"answered": outcomes.count("end_turn"),
                      "refused": outcomes.count(STOP_REASON)}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]))
