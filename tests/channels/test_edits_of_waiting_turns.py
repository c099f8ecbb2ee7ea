"""A message edited before its turn is answered is answered as edited; one deleted before it
is answered is never answered, whenever the edit or deletion arrives.

The waits are real. A conversation busy with an earlier turn whose model answer the test holds
back keeps the next turns waiting in the inbox; a worker held just after it took a turn, or
just after it stored the turn and before it read it back, is in the window between the inbox
and the history. The platform's edit and deletion events arrive meanwhile (Slack
`message_changed` / `message_deleted`, Telegram `edited_message`, Discord `MESSAGE_UPDATE` /
`MESSAGE_DELETE`), through each platform's real SDK, in memory, on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.conftest import drop_pg_schema, fresh_pg_schema, pg_url_or_skip
from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text
from tests.fakes.discord_gateway import DiscordWorld, FakeDiscord
from tests.fakes.slack import FakeSlack, fake_slack_fixture
from tests.fakes.telegram import ALICE, GROUP, FakeTelegram
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.channels.base import Channel
from threadline.channels.discord.channel import DiscordChannel
from threadline.channels.slack import SlackChannel
from threadline.channels.telegram import TelegramChannel
from threadline.history.inbox import TurnState
from threadline.history.memory import InMemoryConversationStore
from threadline.team import Team

anthropic = fake_anthropic_fixture()
slack = fake_slack_fixture()
Handle = Any  # the platform's message, as its fake delivered it
Store = SqlConversationStore | InMemoryConversationStore  # the stores with an inbox


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, sqlite_url: str) -> AsyncIterator[Store]:
    if request.param == "memory":
        memory = InMemoryConversationStore()
        yield memory
        await memory.close()
        return
    url = sqlite_url if request.param == "sqlite" else await fresh_pg_schema(pg_url_or_skip())
    try:
        async with SqlConversationStore(url) as opened:
            yield opened
    finally:
        if request.param == "postgresql":
            await drop_pg_schema(url)


async def waiting(store: Store) -> list[str]:
    """The text of every turn still waiting to be taken (not the one being answered)."""
    found = []
    for conversation_id in await store.inbox.conversations_waiting():
        found += [t.message.content for t in await store.inbox.open_turns(conversation_id)
                  if t.state is TurnState.RECEIVED]
    return found


async def open_texts(store: Store) -> list[str]:
    """The text of every turn not answered yet, waiting or being answered."""
    found = []
    for conversation_id in await store.inbox.conversations_waiting():
        found += [t.message.content for t in await store.inbox.open_turns(conversation_id)]
    return found


async def until(check: Callable[[], Awaitable[bool]]) -> None:
    async with asyncio.timeout(10):
        while not await check():  # noqa: ASYNC110 (the database is the only signal)
            await asyncio.sleep(0.02)


@asynccontextmanager
async def team_on(store: Store, channel: Channel, anthropic: FakeAnthropic,
                  *, answer_edits: bool = False) -> AsyncIterator[None]:
    """One agent answering every message on `channel`. Leaving the block stops the team once
    nothing waits (stopping lets a turn being answered finish)."""
    agent = Agent(name="support", conversation_history=store,
                  provider=AnthropicProvider(anthropic.client()))
    team = Team([agent], respond_to_all=True, answer_edits=answer_edits)
    team.attach(channel, respond_to_all=True)
    await team.start()
    try:
        yield
        await until(lambda: _settled(store))
    finally:
        await team.stop()


@asynccontextmanager
async def busy_team(store: Store, channel: Channel,
                    anthropic: FakeAnthropic) -> AsyncIterator[asyncio.Event]:
    """`team_on`, its first model answer waiting for the event this yields."""
    release = asyncio.Event()
    anthropic.script(text("the first answer", until=release))
    try:
        async with team_on(store, channel, anthropic):
            yield release
    finally:
        release.set()


async def _settled(store: Store) -> bool:
    return not await store.inbox.conversations_waiting()


async def scenario(store: Store, anthropic: FakeAnthropic, release: asyncio.Event,
                   *, post: Callable[[str], Awaitable[Handle]],
                   edit: Callable[[Handle, str], Awaitable[object]],
                   delete: Callable[[Handle], Awaitable[object]] | None) -> None:
    """The first turn holds the model; the second is edited and the third deleted (where the
    platform tells deletions) while they wait; then the model answers."""
    await post("what is the status of the release?")
    await anthropic.wait_for_requests(1)
    second = await post("deploy at 5?")
    await until(lambda: _waits(store, ["deploy at 5?"]))
    await edit(second, "deploy at 6?")
    await until(lambda: _waits(store, ["deploy at 6?"]))
    if delete is not None:
        third = await post("my password is hunter2")
        await until(lambda: _waits(store, ["deploy at 6?", "my password is hunter2"]))
        await delete(third)
        await until(lambda: _waits(store, ["deploy at 6?"]))
    release.set()


async def _waits(store: Store, texts: list[str]) -> bool:
    return await waiting(store) == texts


async def assert_answered_as_edited(store: Store, anthropic: FakeAnthropic,
                                    conversation_id: str) -> None:
    """Two model calls, the second for the edited text; the deleted turn reached nobody."""
    assert len(anthropic.requests) == 2
    asked = json.dumps(anthropic.bodies[1]["messages"][-1])
    assert "deploy at 6?" in asked and "deploy at 5?" not in asked
    everything = json.dumps(anthropic.bodies)
    assert "hunter2" not in everything
    turns = await store.get(conversation_id)
    said = [(m.participant.kind, m.content) for m in turns]
    assert said == [("user", "what is the status of the release?"),
                    ("agent", "the first answer"),
                    ("user", "deploy at 6?"),
                    ("agent", "fake reply 2")]


async def test_slack_edit_and_deletion_of_waiting_turns(
        slack: FakeSlack, anthropic: FakeAnthropic, store: Store) -> None:
    channel = SlackChannel(**slack.channel_settings(), streaming=False)
    thread = "1600000000.000001"

    async def post(words: str) -> Handle:
        event = slack.message_event(words, thread_ts=thread)
        await slack.deliver_event(channel.events_url, event)
        return event

    async def edit(event: Handle, words: str) -> None:
        await slack.deliver_event(channel.events_url, slack.edit_event(event, words))

    async def delete(event: Handle) -> None:
        await slack.deliver_event(channel.events_url, slack.delete_event(event))

    async with busy_team(store, channel, anthropic) as release:
        await scenario(store, anthropic, release, post=post, edit=edit, delete=delete)
    await assert_answered_as_edited(store, anthropic, f"slack:T0FAKE:C0GENERAL:{thread}")
    posted = [c.params["text"] for c in slack.calls_to("chat.postMessage")]
    assert posted == ["the first answer", "fake reply 2"]


async def test_telegram_edit_of_a_waiting_turn(
        anthropic: FakeAnthropic, store: Store) -> None:
    async with FakeTelegram() as fake:
        channel = TelegramChannel(name="tg", **fake.channel_settings(), streaming=False)

        async def post(words: str) -> Handle:
            update = fake.message(GROUP, ALICE, words)
            await fake.deliver(update)
            return update

        async def edit(update: Handle, words: str) -> None:
            await fake.deliver(fake.edit(update, words))

        async with busy_team(store, channel, anthropic) as release:
            await scenario(store, anthropic, release, post=post, edit=edit, delete=None)
        await assert_answered_as_edited(store, anthropic, f"telegram:{GROUP.id}")
        assert [c.params["text"] for c in fake.calls_to("sendMessage")] == [
            "the first answer", "fake reply 2"]


async def test_discord_edit_and_deletion_of_waiting_turns(
        anthropic: FakeAnthropic, store: Store) -> None:
    async with FakeDiscord() as fake:
        world = DiscordWorld.build(fake)

        async def post(words: str) -> Handle:
            return await fake.deliver_message(world.general, author=world.ada, content=words)

        async def edit(message: Handle, words: str) -> None:
            await fake.deliver_edit(message, words)

        async def delete(message: Handle) -> None:
            await fake.deliver_delete(message)

        channel = DiscordChannel(token=fake.token, api_base_url=fake.api_base_url,
                                 gateway_url=fake.gateway_url, guild_ready_timeout=0.02,
                                 streaming=False)
        async with busy_team(store, channel, anthropic) as release:
            await scenario(store, anthropic, release, post=post, edit=edit, delete=delete)
        await assert_answered_as_edited(store, anthropic,
                                        f"discord:{world.guild.id}:{world.general}")
        assert [m["content"] for m in fake.posted] == ["the first answer", "fake reply 2"]


# -- the window between the inbox and the history ---------------------------------------------

THREAD = "1600000000.000001"
SLACK_THREAD = f"slack:T0FAKE:C0GENERAL:{THREAD}"


@dataclass
class HeldWorker:
    """The worker stopped at `moment` of its first turn: `reached` once it is there, going on
    once `release` is set."""

    moment: str
    reached: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def there(self) -> None:
        async with asyncio.timeout(10):
            await self.reached.wait()

    async def stop_here(self) -> None:
        if not self.reached.is_set():
            self.reached.set()
            await self.release.wait()


def hold_worker(store: Store, monkeypatch: pytest.MonkeyPatch,
                moment: str) -> HeldWorker:
    """Hold the worker `taken` (the inbox row is being answered, the history does not hold
    the turn) or `stored` (the history holds it, the worker has not read the row back)."""
    held = HeldWorker(moment)
    inbox = store.inbox
    if moment == "taken":
        take = inbox.take_next

        async def take_next(conversation_id: str) -> Any:
            taken = await take(conversation_id)
            if taken is not None:
                await held.stop_here()
            return taken

        monkeypatch.setattr(inbox, "take_next", take_next)
    else:
        read_back = inbox.retake

        async def retake(turn_id: str) -> Any:
            await held.stop_here()
            return await read_back(turn_id)

        monkeypatch.setattr(inbox, "retake", retake)
    return held


async def said_in(store: Store, conversation_id: str) -> list[tuple[str, str]]:
    return [(m.participant.kind, m.content) for m in await store.get(conversation_id)]


WINDOW = pytest.mark.parametrize("moment", ["taken", "stored"])


@WINDOW
@pytest.mark.parametrize("answer_edits", [False, True])
async def test_slack_edit_of_a_turn_a_worker_took_is_stored_and_answered_as_edited_once(
        slack: FakeSlack, anthropic: FakeAnthropic, store: Store,
        monkeypatch: pytest.MonkeyPatch, moment: str, answer_edits: bool) -> None:
    channel = SlackChannel(**slack.channel_settings(), streaming=False)
    held = hold_worker(store, monkeypatch, moment)
    async with team_on(store, channel, anthropic, answer_edits=answer_edits):
        event = slack.message_event("deploy at 5?", thread_ts=THREAD)
        await slack.deliver_event(channel.events_url, event)
        await held.there()
        assert await said_in(store, SLACK_THREAD) == (
            [] if moment == "taken" else [("user", "deploy at 5?")])
        await slack.deliver_event(channel.events_url, slack.edit_event(event, "deploy at 6?"))
        await until(lambda: _open_texts_are(store, ["deploy at 6?"]))
        held.release.set()
    assert await said_in(store, SLACK_THREAD) == [("user", "deploy at 6?"),
                                                  ("agent", "fake reply 1")]
    [asked] = [json.dumps(body["messages"][-1]) for body in anthropic.bodies]
    assert "deploy at 6?" in asked and "deploy at 5?" not in asked
    assert [c.params["text"] for c in slack.calls_to("chat.postMessage")] == ["fake reply 1"]


@WINDOW
async def test_slack_deletion_of_a_turn_a_worker_took_is_never_answered_nor_kept(
        slack: FakeSlack, anthropic: FakeAnthropic, store: Store,
        monkeypatch: pytest.MonkeyPatch, moment: str) -> None:
    channel = SlackChannel(**slack.channel_settings(), streaming=False)
    held = hold_worker(store, monkeypatch, moment)
    async with team_on(store, channel, anthropic):
        event = slack.message_event("my password is hunter2", thread_ts=THREAD)
        await slack.deliver_event(channel.events_url, event)
        await held.there()
        await slack.deliver_event(channel.events_url, slack.delete_event(event))
        await until(lambda: _open_texts_are(store, []))
        held.release.set()
    assert await said_in(store, SLACK_THREAD) == []
    assert anthropic.requests == []
    assert slack.calls_to("chat.postMessage") == []


@WINDOW
async def test_discord_edit_of_a_turn_a_worker_took_is_stored_and_answered_as_edited(
        anthropic: FakeAnthropic, store: Store,
        monkeypatch: pytest.MonkeyPatch, moment: str) -> None:
    held = hold_worker(store, monkeypatch, moment)
    async with FakeDiscord() as fake:
        world = DiscordWorld.build(fake)
        channel = DiscordChannel(token=fake.token, api_base_url=fake.api_base_url,
                                 gateway_url=fake.gateway_url, guild_ready_timeout=0.02,
                                 streaming=False)
        async with team_on(store, channel, anthropic):
            message = await fake.deliver_message(world.general, author=world.ada,
                                                 content="deploy at 5?")
            await held.there()
            await fake.deliver_edit(message, "deploy at 6?")
            await until(lambda: _open_texts_are(store, ["deploy at 6?"]))
            held.release.set()
        conversation = f"discord:{world.guild.id}:{world.general}"
        assert await said_in(store, conversation) == [("user", "deploy at 6?"),
                                                      ("agent", "fake reply 1")]
        [asked] = [json.dumps(body["messages"][-1]) for body in anthropic.bodies]
        assert "deploy at 6?" in asked and "deploy at 5?" not in asked
        assert [m["content"] for m in fake.posted] == ["fake reply 1"]


@pytest.mark.parametrize("answer_edits", [False, True])
async def test_slack_edit_while_the_model_answers_is_stored_and_answered_again_when_set(
        slack: FakeSlack, anthropic: FakeAnthropic, store: Store,
        answer_edits: bool) -> None:
    """Past the window the history holds the turn: the edit is stored there, and the turn is
    answered again as edited once the answer being written is done, when the team is set to."""
    channel = SlackChannel(**slack.channel_settings(), streaming=False)
    release = asyncio.Event()
    anthropic.script(text("the first answer", until=release))
    async with team_on(store, channel, anthropic, answer_edits=answer_edits):
        event = slack.message_event("deploy at 5?", thread_ts=THREAD)
        await slack.deliver_event(channel.events_url, event)
        await anthropic.wait_for_requests(1)
        await slack.deliver_event(channel.events_url, slack.edit_event(event, "deploy at 6?"))
        await until(lambda: _said_first(store, "deploy at 6?"))
        release.set()
        await slack.wait_for_calls("chat.postMessage", 2 if answer_edits else 1)
    asked = [json.dumps(body["messages"][-1]) for body in anthropic.bodies]
    posted = [c.params["text"] for c in slack.calls_to("chat.postMessage")]
    said = await said_in(store, SLACK_THREAD)
    assert "deploy at 5?" in asked[0]
    if answer_edits:
        assert len(asked) == 2 and "deploy at 6?" in asked[1] and "deploy at 5?" not in asked[1]
        assert posted == ["the first answer", "fake reply 2"]
        assert said == [("user", "deploy at 6?"), ("agent", "the first answer"),
                        ("agent", "fake reply 2")]
    else:
        assert (len(asked), posted) == (1, ["the first answer"])
        assert said == [("user", "deploy at 6?"), ("agent", "the first answer")]


async def _said_first(store: Store, words: str) -> bool:
    said = await said_in(store, SLACK_THREAD)
    return bool(said) and said[0] == ("user", words)


async def test_slack_edits_racing_the_worker_are_never_lost_nor_turns_doubled(
        slack: FakeSlack, anthropic: FakeAnthropic, store: Store) -> None:
    """Each turn is edited the moment it is acknowledged, while the worker takes, stores and
    answers it: wherever the edit lands, the history ends with the edited text, once."""
    channel = SlackChannel(**slack.channel_settings(), streaming=False)
    rounds = 50
    async with team_on(store, channel, anthropic):
        for i in range(rounds):
            event = slack.message_event(f"draft {i}", thread_ts=THREAD)
            await slack.deliver_event(channel.events_url, event)
            await asyncio.gather(
                slack.deliver_event(channel.events_url, slack.edit_event(event, f"edited {i}")),
                slack.wait_for_calls("chat.postMessage", i + 1))
    said = await said_in(store, SLACK_THREAD)
    assert [text for kind, text in said if kind == "user"] == [
        f"edited {i}" for i in range(rounds)]
    assert [kind for kind, _ in said] == ["user", "agent"] * rounds
    assert len(anthropic.requests) == rounds
    for i, body in enumerate(anthropic.bodies):  # each answer was for its own turn
        asked = json.dumps(body["messages"][-1])
        assert f"draft {i}\"" in asked or f"edited {i}\"" in asked


async def _open_texts_are(store: Store, texts: list[str]) -> bool:
    return await open_texts(store) == texts
