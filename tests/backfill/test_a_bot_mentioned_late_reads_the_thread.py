"""A bot mentioned in a Slack thread of 12 earlier messages reads them first (Slack's
conversations.replies on the fake) and answers with them in context: it can quote the first.
The same messages delivered later as events are recognized, not stored twice. On Telegram,
which gives bots no history, the turn is answered all the same and the log says why."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from tests.bursts.helpers import words_of
from tests.fakes.anthropic import FakeAnthropic, Reply, text
from tests.fakes.discord_gateway import FakeDiscord
from tests.fakes.slack import FakeSlack
from tests.runtime.in_process import running_in_process
from tests.runtime.platforms import platform, replies_sent, say
from tests.runtime.test_listeners_survive_bad_events import until
from threadline.backends.sql import SqlConversationStore

BACKFILL = "backfill:\n  enabled: true\n  limit: 50\n"
EARLIER = 12
_TAG = re.compile(r"msg-\d\d")


def prompt_of(body: dict[str, Any]) -> str:
    """The system blocks (where the turns around this one are shown) and the messages."""
    system = body.get("system") or []
    return " ".join(b.get("text", "") for b in system) + " " + words_of(body)


def quote_the_first(body: dict[str, Any]) -> Reply:
    tags = _TAG.findall(prompt_of(body))
    return text(f"the first was {tags[0]}" if tags else "I saw nothing before")


async def settled(store: SqlConversationStore) -> None:
    async with asyncio.timeout(30):
        while await store.inbox.conversations_waiting():  # noqa: ASYNC110
            await asyncio.sleep(0.05)


async def test_mentioned_in_a_thread_of_twelve_it_quotes_the_first(tmp_path: Path) -> None:
    async with platform("slack", streaming=False) as where, FakeAnthropic() as anthropic:
        slack: FakeSlack = where.fake
        slack.add_user("U0BOB", display_name="Bob")
        anthropic.responder = quote_the_first
        root = slack.said_earlier("msg-01 my order #4412 never came", user="U0BOB")
        earlier = [root] + [
            slack.said_earlier(f"msg-{n:02d} still waiting", user="U0BOB",
                               thread_ts=root["ts"]) for n in range(2, EARLIER + 1)]
        async with running_in_process(tmp_path, "slack", where, anthropic.url,
                                      more_yaml=BACKFILL) as runtime:
            store: SqlConversationStore = runtime.store
            mention = slack.message_event(f"<@{slack.bot_user_id}> what did Bob say first?",
                                          thread_ts=root["ts"])
            await slack.deliver_event(where.extra["events_url"], mention)
            await until(lambda: len(replies_sent("slack", where)) >= 1)
            await settled(store)
            # The thread's earlier messages arrive as events after all (late, or retried).
            for message in earlier[1:]:
                event = slack.message_event(message["text"], user="U0BOB", ts=message["ts"],
                                            thread_ts=root["ts"])
                assert (await slack.deliver_event(where.extra["events_url"], event)).status == 200
            await asyncio.sleep(1.0)
            await settled(store)
            thread = f"slack:{slack.team_id}:C0GENERAL:{root['ts']}"
            turns = await store.get(thread)
    assert replies_sent("slack", where) == ["the first was msg-01"]
    assert len(anthropic.requests) == 1
    assert _TAG.findall(prompt_of(anthropic.requests[0].body)) == [
        f"msg-{n:02d}" for n in range(1, EARLIER + 1)]
    said = [t.content for t in turns]
    assert [_TAG.findall(s) for s in said[:EARLIER]] == [
        [f"msg-{n:02d}"] for n in range(1, EARLIER + 1)]
    assert len(turns) == EARLIER + 2, said  # the earlier ones once, the mention, the reply
    assert [t.metadata.message_id for t in turns[:EARLIER]] == [m["ts"] for m in earlier]


async def test_on_telegram_the_turn_is_answered_and_the_log_says_why(
        tmp_path: Path, capfd: Any) -> None:
    async with platform("telegram", streaming=False) as where, FakeAnthropic() as anthropic:
        anthropic.responder = quote_the_first
        async with running_in_process(tmp_path, "telegram", where, anthropic.url,
                                      more_yaml=BACKFILL):
            await say("telegram", where, 0, "hello there")
            await until(lambda: len(replies_sent("telegram", where)) >= 1)
    assert replies_sent("telegram", where) == ["I saw nothing before"]
    assert "Telegram's Bot API gives a bot no chat history" in capfd.readouterr().out


async def test_on_discord_a_bot_added_late_reads_the_channel(tmp_path: Path) -> None:
    async with platform("discord", streaming=False) as where, FakeAnthropic() as anthropic:
        discord: FakeDiscord = where.fake
        anthropic.responder = quote_the_first
        bob = discord.add_user("bob")
        discord.add_member(where.extra["guild"], bob)
        room = where.extra["channels"][0]
        earlier = [discord.said_earlier(room, author=bob, content=f"msg-{n:02d} still here")
                   for n in range(1, EARLIER + 1)]
        async with running_in_process(tmp_path, "discord", where, anthropic.url,
                                      more_yaml=BACKFILL) as runtime:
            await discord.deliver_message(room, author=bob,
                                          content=f"<@{discord.bot.id}> what came first?")
            await until(lambda: len(replies_sent("discord", where)) >= 1)
            await settled(runtime.store)
            await discord.deliver("MESSAGE_CREATE", earlier[3])  # a late duplicate event
            await asyncio.sleep(1.0)
            await settled(runtime.store)
            turns = await runtime.store.get(
                (await runtime.store.list_conversations())[0].conversation_id)
    # The history has all twelve; the prompt shows the turns said just before, as for any
    # turns nobody addressed to the agent (older ones reach it through recall).
    assert len(replies_sent("discord", where)) == 1
    assert _TAG.findall(prompt_of(anthropic.requests[0].body))[-1] == f"msg-{EARLIER}"
    assert [_TAG.findall(t.content) for t in turns[:EARLIER]] == [
        [f"msg-{n:02d}"] for n in range(1, EARLIER + 1)]
    assert len(turns) == EARLIER + 2
