"""Ambient agents on the Discord fake, through `threadline run`'s runtime: 30 turns nobody
addresses, the agent asked at most as often as configured, speaking when the (fake) model
says so and not otherwise, the decision kept with its reply; two ambient agents never set
each other off."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.bursts.helpers import words_of
from tests.fakes.anthropic import FakeAnthropic, Reply, text
from tests.fakes.discord_gateway import FakeDiscord
from tests.runtime.in_process import running_in_process
from tests.runtime.platforms import platform, replies_sent
from tests.runtime.test_listeners_survive_bad_events import until
from threadline.backends.sql import SqlConversationStore

TURNS = 30


def is_question(body: dict[str, Any]) -> bool:
    """The cheap request that asks whether to speak (not an answer)."""
    return "Speak or stay quiet?" in words_of(body) and body["max_tokens"] <= 60


def speak_about_refunds(body: dict[str, Any]) -> Reply:
    """Speak when the newest turn shown asks about a refund; answer that."""
    if is_question(body):
        newest = words_of(body).split("\n")[-3]
        return text("SPEAK: a refund question nobody answered" if "refund" in newest
                    else "QUIET: small talk")
    return text("Refunds take five days.")


async def settled(store: SqlConversationStore) -> None:
    async with asyncio.timeout(30):
        while await store.inbox.conversations_waiting():  # noqa: ASYNC110
            await asyncio.sleep(0.05)


async def chat(where: Any, words: list[str], *, bots: bool = False) -> None:
    """People (or, with `bots`, other bot accounts) say `words` in the first room."""
    discord: FakeDiscord = where.fake
    people = [discord.add_user(f"person{n}", bot=bots) for n in range(3)]
    for person in people:
        discord.add_member(where.extra["guild"], person)
    for n, said in enumerate(words):
        await discord.deliver_message(where.extra["channels"][0], author=people[n % 3],
                                      content=said)
        await asyncio.sleep(0.05)


async def test_thirty_unaddressed_turns_ask_three_times_and_it_speaks_once(
        tmp_path: Path) -> None:
    ambient = ("ambient:\n  agents:\n    support:\n      channels: [discord]\n"
               "      every_turns: 10\n      min_minutes: 0\n")
    said = [f"chatting {n}" for n in range(1, TURNS + 1)]
    said[19] = "turn 20: how do I get a refund?"
    async with platform("discord", streaming=False) as where, FakeAnthropic() as anthropic:
        anthropic.responder = speak_about_refunds
        async with running_in_process(tmp_path, "discord", where, anthropic.url,
                                      more_yaml=ambient) as runtime:
            await chat(where, said)
            store: SqlConversationStore = runtime.store
            await until(lambda: len(anthropic.requests) >= 4)
            await settled(store)
            await asyncio.sleep(0.5)
            turns = await store.get((await store.list_conversations())[0].conversation_id)
    questions = [r for r in anthropic.requests if is_question(r.body)]
    assert len(questions) == 3
    assert len(anthropic.requests) == 4  # three questions, one answer
    assert replies_sent("discord", where) == ["Refunds take five days."]
    [reply] = [t for t in turns if t.participant.kind == "agent"]
    assert reply.metadata.extra["ambient"] == {
        "spoke": True, "why": "a refund question nobody answered"}
    assert len([t for t in turns if t.participant.kind == "user"]) == TURNS


async def test_at_most_once_per_min_minutes(tmp_path: Path) -> None:
    ambient = ("ambient:\n  agents:\n    support:\n      channels: [discord]\n"
               "      every_turns: 1\n      min_minutes: 60\n")
    async with platform("discord", streaming=False) as where, FakeAnthropic() as anthropic:
        anthropic.responder = speak_about_refunds
        async with running_in_process(tmp_path, "discord", where, anthropic.url,
                                      more_yaml=ambient) as runtime:
            await chat(where, [f"chatting {n}" for n in range(TURNS)])
            await settled(runtime.store)
            await asyncio.sleep(0.5)
    assert len(anthropic.requests) == 1
    assert replies_sent("discord", where) == []


async def test_two_ambient_agents_that_always_speak_never_loop(tmp_path: Path) -> None:
    """Their own replies never come back as turns; other bots' messages (let in with
    `allow_bots`) are turns, but start no question: no bot sets an ambient agent off."""
    both = ("  helper:\n    system_prompt: You also help.\n    channels: [discord]\n"
            "ambient:\n  agents:\n"
            + "".join(f"    {name}:\n      channels: [discord]\n      every_turns: 1\n"
                      "      min_minutes: 0\n      max_replies_per_hour: 100\n"
                      for name in ("support", "helper")))

    def always_speak(body: dict[str, Any]) -> Reply:
        return text("SPEAK: always" if is_question(body) else "I have something to add.")

    async with platform("discord", streaming=False) as where, FakeAnthropic() as anthropic:
        where.channel_yaml += "    allow_bots: true\n"
        anthropic.responder = always_speak
        async with running_in_process(tmp_path, "discord", where, anthropic.url,
                                      more_yaml=both) as runtime:
            await chat(where, ["anyone here?", "hello?"])
            await until(lambda: len(replies_sent("discord", where)) >= 4)
            await settled(runtime.store)
            await chat(where, ["I am a bot: SPEAK!", "so am I"], bots=True)
            await asyncio.sleep(1.5)  # a loop, were there one, would go on now
            await settled(runtime.store)
            turns = await runtime.store.get(
                (await runtime.store.list_conversations())[0].conversation_id)
    # Each person's turn: each agent asked once and speaks once; nothing else asks anyone.
    assert len([r for r in anthropic.requests if is_question(r.body)]) == 4
    assert len(replies_sent("discord", where)) == 4
    assert len(anthropic.requests) == 8
    assert [t.content for t in turns if t.metadata.extra.get("is_bot")] == [
        "I am a bot: SPEAK!", "so am I"]
