"""Teams messages answered where they were said: a 1:1 chat, a group chat, a channel thread."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import jwt

from tests.fakes.teams import ALICE, APP_ID, TENANT, FakeTeams
from threadline.agents import Agent
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
