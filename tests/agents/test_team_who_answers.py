"""Two agents, one channel, three humans: who answers what, and what nobody answers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from tests.interceptors.scripted import ANN, BOB, CAL, RecordingChannel, ScriptedModel, say
from threadline.agents.agent import Agent
from threadline.agents.llm import ModelResponse
from threadline.backends.sql import SqlConversationStore
from threadline.errors import ConfigError
from threadline.history.assembler import CONTEXT_HEADER
from threadline.history.model import Participant
from threadline.team import Team


def named_reply(name: str) -> ScriptedModel:
    return ScriptedModel(lambda r: ModelResponse(text=f"{name} answering"))


@dataclass
class Room:
    store: SqlConversationStore
    team: Team
    channel: RecordingChannel
    support_model: ScriptedModel
    billing_model: ScriptedModel

    async def post(self, text: str, who: Participant = ANN, **metadata: object) -> list[str]:
        """Who answered this message, as the platform saw it."""
        before = len(self.channel.sent)
        await self.team.until_answered(say(text, who=who, conversation_id="local:room", **metadata),
                                   self.channel)
        return [agent or "" for _, _, agent in self.channel.sent[before:]]


async def make_room(sqlite_url: str, *, respond_to_all: list[str] | None = None,
                    answer_bots: bool = False) -> AsyncIterator[Room]:
    async with SqlConversationStore(sqlite_url) as store:
        support_model, billing_model = named_reply("support"), named_reply("billing")
        support = Agent(name="support", aliases=("helpdesk",), conversation_history=store,
                        provider=support_model)
        billing = Agent(name="billing", conversation_history=store, provider=billing_model)
        team = Team([support, billing], answer_bots=answer_bots)
        channel = RecordingChannel()
        team.attach(channel, respond_to_all=respond_to_all or False)
        await team.start()
        yield Room(store, team, channel, support_model, billing_model)
        await team.stop()


@pytest.fixture
async def room(sqlite_url: str) -> AsyncIterator[Room]:
    async for made in make_room(sqlite_url):
        yield made


async def test_a_mention_by_name_or_alias_reaches_that_agent_only(room: Room) -> None:
    assert await room.post("@support my order is late") == ["support"]
    assert await room.post("@billing why was I charged twice?", who=BOB) == ["billing"]
    assert await room.post("@HelpDesk are you there?", who=CAL) == ["support"]
    assert await room.post("@support @billing both of you please") == ["support", "billing"]
    assert await room.post("hi", mentions=["billing"]) == ["billing"]  # resolved by the channel


async def test_mentioning_the_shared_bot_reaches_the_channels_first_agent(room: Room) -> None:
    assert await room.post("hello bot", mentions=["UBOT"]) == ["support"]
    assert await room.post("<@UBOT> @billing refund?") == ["billing"]  # named wins
    assert await room.post("hello @helperbot") == ["support"]  # the bot's username


async def test_a_dm_and_a_reply_to_the_bot_are_addressed(room: Room) -> None:
    assert await room.post("psst", scope="dm") == ["support"]
    assert await room.post("psst @billing", scope="dm") == ["billing"]
    assert await room.post("about your last message", reply_to_participant_id="UBOT") == [
        "support"]


async def test_a_reply_to_an_agents_message_reaches_that_agent(room: Room) -> None:
    await room.post("@billing what do I owe?")
    billing_post = f"sent{len(room.channel.sent)}"  # the platform id of billing's reply
    assert await room.post("why so much?", who=ANN, reply_to_message_id=billing_post,
                           reply_to_participant_id="UBOT") == ["billing"]


async def test_chatter_between_humans_is_stored_but_not_answered(room: Room) -> None:
    assert await room.post("lunch?", who=ANN) == []
    assert await room.post("sure", who=BOB) == []
    assert await room.post("12:30", who=CAL) == []
    stored = await room.store.get("local:room")
    assert [m.content for m in stored] == ["lunch?", "sure", "12:30"]
    assert room.support_model.requests == [] and room.billing_model.requests == []


async def test_respond_to_all_answers_every_human_message(sqlite_url: str) -> None:
    async for room in make_room(sqlite_url, respond_to_all=["billing"]):
        assert await room.post("lunch?") == ["billing"]
        assert await room.post("@support help") == ["support", "billing"]


async def test_agents_ignore_other_bots_unless_allowed(sqlite_url: str) -> None:
    other_bot = Participant(kind="user", id="UOTHER", display_name="Jira")
    async for room in make_room(sqlite_url):
        assert await room.post("@support ticket 5 updated", who=other_bot, is_bot=True) == []
        assert [m.content for m in await room.store.get("local:room")] == [
            "@support ticket 5 updated"]  # still part of the history
    async for room in make_room(sqlite_url, answer_bots=True):
        assert await room.post("@support ticket 6 updated", who=other_bot, is_bot=True) == [
            "support"]


async def test_the_bots_own_posts_and_redeliveries_are_not_answered(room: Room) -> None:
    assert await room.post("echo of my own post", who=Participant(kind="user", id="UBOT")) == []
    assert await room.store.count("local:room") == 0  # our own capture stored the original
    first = say("@support once", conversation_id="local:room", message_id="p1")
    await room.team.until_answered(first, room.channel)
    await room.team.until_answered(first, room.channel)  # the platform delivers it again
    assert [agent for _, _, agent in room.channel.sent] == ["support"]


async def test_an_agent_does_not_answer_its_own_message(room: Room) -> None:
    own = say("@support note to self", who=Participant(kind="agent", id="support"),
              conversation_id="local:room")
    room.team.answer_bots = True
    assert await room.team.handle(own, room.channel) == []


async def test_a_failed_send_is_logged_and_the_next_message_still_answered(room: Room) -> None:
    room.channel.fail_next = 1
    assert await room.post("@support first") == []  # the post failed on the platform
    assert await room.post("@support second") == ["support"]
    stored = [m.content for m in await room.store.get("local:room")]
    assert stored == ["@support first", "support answering", "@support second",
                      "support answering"]


async def test_edits_and_deletions_update_the_store_in_order(room: Room) -> None:
    await room.post("@support my order is 4412", message_id="e1")
    await room.team.on_edit("local:room", "local:room:e1", "@support my order is 4413")
    [question, _] = await room.store.get("local:room")
    assert question.content == "@support my order is 4413"
    await room.team.on_delete("local:room", "local:room:e1")
    assert [m.participant.id for m in await room.store.get("local:room")] == ["support"]


async def test_the_agent_sees_who_addressed_it_in_a_shared_channel(room: Room) -> None:
    await room.post("lunch?", who=BOB)
    await room.post("@billing invoice 9 please")
    await room.post("@support my parcel is lost", who=CAL)
    seen = room.support_model.requests[-1].messages
    assert "parcel is lost" in seen[-1].content
    # Addressed to billing, not support: no turn of support's prompt, only the marked context
    # of what was said just before.
    assert all("invoice 9" not in m.content for m in seen if m.role != "system")
    assert any(m.role == "system" and m.content.startswith(CONTEXT_HEADER)
               and "invoice 9" in m.content for m in seen)


def test_agents_with_separate_stores_cannot_form_a_team() -> None:
    with pytest.raises(ConfigError, match="share one conversation store"):
        Team([Agent(name="a", provider=ScriptedModel()), Agent(name="b", provider=ScriptedModel())])
