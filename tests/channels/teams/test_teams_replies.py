"""Teams messages answered where they were said: a 1:1 chat, a group chat, a channel thread."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import jwt

from tests.fakes.anthropic import FakeAnthropic, text
from tests.fakes.teams import ALICE, APP_ID, TENANT, FakeTeams
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.agents.llm import ModelProvider
from threadline.agents.offline import OfflineModel
from threadline.backends.sql import SqlConversationStore
from threadline.channels.teams import TeamsChannel
from threadline.history.model import StoredMessage
from threadline.team import Team


async def stored(store: SqlConversationStore, conversation_id: str, count: int
                 ) -> list[StoredMessage]:
    """The conversation's turns once `count` are stored (a reply is stored after it is posted)."""
    for _ in range(400):
        if len(turns := await store.get(conversation_id)) >= count:
            return turns
        await asyncio.sleep(0.05)
    raise AssertionError(f"{conversation_id} holds {await store.get(conversation_id)}")


@asynccontextmanager
async def serving(sqlite_url: str, teams: FakeTeams, *, agents: tuple[str, ...] = ("support",),
                  provider: ModelProvider | None = None
                  ) -> AsyncIterator[tuple[TeamsChannel, SqlConversationStore]]:
    async with SqlConversationStore(sqlite_url) as store:
        team = Team([Agent(name=n, conversation_history=store,
                           provider=provider or OfflineModel()) for n in agents])
        channel = TeamsChannel(name="teams", port=0, streaming=False, **teams.settings())
        team.attach(channel)
        await team.start()
        try:
            yield channel, store
        finally:
            await team.stop()


async def test_a_personal_chat_is_answered_in_the_chat(sqlite_url: str, teams: FakeTeams) -> None:
    async with serving(sqlite_url, teams) as (channel, store):
        chat = teams.personal(ALICE)
        activity = teams.message("hello there", chat=chat)
        assert (await teams.deliver(channel.messaging_url, activity))[0] == 200
        [reply] = await teams.wait_for_messages(1)
        turns = await stored(store, f"teams:{TENANT}:a%3A1chat-with-alice", 2)

    assert reply.conversation_id == chat.id
    assert reply.activity_id == activity["id"]
    assert reply.body["replyToId"] == activity["id"]
    assert jwt.decode(reply.token, options={"verify_signature": False})["appid"] == APP_ID
    assert [t.participant.id for t in turns] == [ALICE.aad_object_id, "support"]
    assert turns[0].scope == "dm"


async def test_a_group_chat_mention_is_answered_in_the_chat(sqlite_url: str,
                                                            teams: FakeTeams) -> None:
    async with serving(sqlite_url, teams) as (channel, store):
        chat = teams.group()
        activity = teams.message("<at>Threadline</at> what time do you open?", chat=chat,
                                 mentions={"Threadline": f"28:{APP_ID}"})
        assert (await teams.deliver(channel.messaging_url, activity))[0] == 200
        [reply] = await teams.wait_for_messages(1)
        [asked, _] = await stored(store, f"teams:{TENANT}:19%3Agroupchat-0001%40thread.v2", 2)

    assert reply.conversation_id == chat.id
    assert asked.content == "@Threadline what time do you open?"
    assert asked.scope == "channel"
    assert f"28:{APP_ID}" in asked.metadata.mentions


async def test_one_of_two_agents_named_in_a_channel_thread_answers_there_alone(
        sqlite_url: str, teams: FakeTeams) -> None:
    async with serving(sqlite_url, teams, agents=("support", "billing")) as (channel, store):
        root = teams.next_id()
        thread = teams.channel(root)
        activity = teams.message("<at>Threadline</at> @billing was I charged twice?",
                                 chat=thread, mentions={"Threadline": f"28:{APP_ID}"},
                                 reply_to=root)
        assert (await teams.deliver(channel.messaging_url, activity))[0] == 200
        [reply] = await teams.wait_for_messages(1)
        conversation = f"teams:{TENANT}:19%3Achannel-general%40thread.tacv2:{root}"
        turns = await stored(store, conversation, 2)

    assert reply.conversation_id == f"19:channel-general@thread.tacv2;messageid={root}"
    assert reply.body["replyToId"] == activity["id"]
    assert [t.participant.id for t in turns] == [ALICE.aad_object_id, "billing"]
    assert turns[0].scope == "thread" and turns[0].metadata.thread_id == root
    assert turns[0].metadata.channel_name == "General"


async def test_a_redelivered_activity_is_answered_once(sqlite_url: str,
                                                       teams: FakeTeams) -> None:
    async with serving(sqlite_url, teams) as (channel, store):
        activity = teams.message("are you there?", chat=teams.personal(ALICE))
        for _ in range(3):
            assert (await teams.deliver(channel.messaging_url, activity))[0] == 200
        await teams.wait_for_messages(1)
        turns = await stored(store, f"teams:{TENANT}:a%3A1chat-with-alice", 2)
        await asyncio.sleep(0.5)  # room for a wrong second answer to be posted

    assert len(teams.messages()) == 1
    assert len(turns) == 2


async def test_an_edit_changes_the_stored_turn_and_a_deletion_removes_it(
        sqlite_url: str, teams: FakeTeams) -> None:
    async with FakeAnthropic() as model:
        answered = asyncio.Event()
        model.script(text("Opening hours are 9 to 5.", until=answered), text("Noted."))
        provider = AnthropicProvider(model.client(), stream=False)
        async with serving(sqlite_url, teams, provider=provider) as (channel, store):
            chat = teams.personal(ALICE)
            first = teams.message("when do you opne?", chat=chat)
            assert (await teams.deliver(channel.messaging_url, first))[0] == 200
            await model.wait_for_requests(1)
            edit = {**first, "type": "messageUpdate", "text": "when do you open?",
                    "channelData": {**first["channelData"], "eventType": "editMessage"}}
            assert (await teams.deliver(channel.messaging_url, edit))[0] == 200
            answered.set()
            await teams.wait_for_messages(1)
            second = teams.message("thanks", chat=chat)
            assert (await teams.deliver(channel.messaging_url, second))[0] == 200
            await teams.wait_for_messages(2)
            conversation = f"teams:{TENANT}:a%3A1chat-with-alice"
            await stored(store, conversation, 4)
            deletion = {**second, "type": "messageDelete",
                        "channelData": {**second["channelData"], "eventType": "softDeleteMessage"}}
            assert (await teams.deliver(channel.messaging_url, deletion))[0] == 200
            turns = await store.get(conversation)
            zone = await channel.person_timezone(turns[0])

    assert turns[0].content == "when do you open?"
    assert "thanks" not in [t.content for t in turns]
    assert zone == "Europe/Berlin"
