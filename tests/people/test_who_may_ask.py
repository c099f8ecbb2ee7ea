"""Who may ask what: allow and deny lists by channel and agent (identities or linked persons),
admins for commands that act on others, and a per-person rate limit that replies once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from tests.interceptors.scripted import ANN, BOB, RecordingChannel, ScriptedModel, say
from threadline.agents.agent import Agent
from threadline.agents.llm import ModelResponse
from threadline.backends.parts import people_for
from threadline.backends.sql import SqlConversationStore
from threadline.config import load_settings
from threadline.errors import ConfigError
from threadline.history.model import Participant
from threadline.interceptors.rate_limit import DEFAULT_REPLY, Rate, RateLimitInterceptor
from threadline.people.access import Access, PeopleList
from threadline.people.stages import AccessStage, RateLimitStage
from threadline.runtime import access_for
from threadline.stages import Stage
from threadline.team import Team


@dataclass
class Room:
    store: SqlConversationStore
    channel: RecordingChannel
    team: Team
    model: ScriptedModel

    async def post(self, text: str, who: Participant = ANN) -> list[str]:
        """What the platform was sent in answer to this message."""
        before = len(self.channel.sent)
        await self.team.until_answered(say(text, who=who, conversation_id="local:room"),
                                       self.channel)
        return [sent for _, sent, _ in self.channel.sent[before:]]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def open_room(sqlite_url: str, access: Access, *,
                    rate: RateLimitInterceptor | None = None) -> AsyncIterator[Room]:
    async with SqlConversationStore(sqlite_url) as store:
        model = ScriptedModel(lambda request: ModelResponse(text="Happy to help."))
        stages: dict[str, Stage] = {"access": AccessStage(access)}
        if rate is not None:
            stages["rate_limit"] = RateLimitStage(rate)
        agent = Agent(name="support", conversation_history=store, provider=model)
        team = Team([agent], stages=stages)
        channel = RecordingChannel(name="room")
        team.attach(channel, respond_to_all=True)
        await team.start()
        yield Room(store, channel, team, model)
        await team.stop()


@pytest.fixture
async def allow_ann(sqlite_url: str) -> AsyncIterator[Room]:
    access = Access(channels={"room": PeopleList.of(allow=["local:U_ANN"])})
    async for room in open_room(sqlite_url, access):
        yield room


async def test_a_person_outside_the_allow_list_is_stored_not_answered(allow_ann: Room) -> None:
    with capture_logs() as logs:
        assert await allow_ann.post("hello, anyone?", who=BOB) == []
    assert await allow_ann.post("hello") == ["Happy to help."]

    stored = await allow_ann.store.get("local:room")
    assert [(m.participant.id, m.content) for m in stored] == [
        ("U_BOB", "hello, anyone?"), ("U_ANN", "hello"), ("support", "Happy to help.")]
    assert len(allow_ann.model.requests) == 1  # Bob's turn cost no model call
    refused = [e for e in logs if e["event"] == "turn.not_allowed"]
    assert refused and refused[0]["refused_by"] == "channel room"
    assert refused[0]["participant"] == "U_BOB"


async def test_a_linked_person_is_allowed_by_any_of_their_identities(allow_ann: Room) -> None:
    await people_for(allow_ann.store).link(["local:U_BOB", "telegram:777"], linked_by="test")
    person = await people_for(allow_ann.store).person_of("telegram:777")
    assert person is not None
    access = Access(channels={"room": PeopleList.of(allow=["telegram:777"])})
    names = await access.names_of(allow_ann.store, say("hi", who=BOB,
                                                      conversation_id="local:room"))
    assert {"local:U_BOB", "telegram:777", person.person_id} <= names
    by_person = Access(agents={"support": PeopleList.of(allow=[person.person_id])})
    assert await by_person.refusal(allow_ann.store, say("hi", who=BOB,
                                   conversation_id="local:room"), channel="room",
                                   agent="support") is None
    denied = Access(agents={"support": PeopleList.of(deny=[person.person_id])})
    assert await denied.refusal(allow_ann.store, say("hi", who=BOB,
                                conversation_id="local:room"), channel="room",
                                agent="support") == "agent support"


async def test_a_command_that_acts_on_others_is_for_admins_only(sqlite_url: str) -> None:
    access = Access(admins=frozenset({"local:U_ANN"}))
    async for room in open_room(sqlite_url, access):
        refused = await room.post("/forget", who=BOB)
        assert refused == ["Only an admin may use /forget here: it changes the conversation "
                           "for everyone. Ask one of them."]
        asked = await room.post("/forget")
        assert asked and "Only an admin" not in asked[0]
        stored = await room.store.get("local:room")
        assert stored[1].content == refused[0]  # the refusal is recorded like any answer
        others = await room.post("/agents", who=BOB)  # commands for oneself stay open
        assert others and "Only an admin" not in others[0]


async def test_over_the_rate_limit_one_polite_reply_then_silence_until_the_window_passes(
        sqlite_url: str) -> None:
    clock = Clock()
    rate = RateLimitInterceptor(per_conversation=None, per_user=None,
                                per_person=Rate(2, 60.0), clock=clock)
    async for room in open_room(sqlite_url, Access(), rate=rate):
        assert await room.post("one") == ["Happy to help."]
        assert await room.post("two") == ["Happy to help."]
        assert await room.post("three") == [DEFAULT_REPLY]
        assert await room.post("four") == []
        assert await room.post("five") == []
        assert await room.post("someone else", who=BOB) == ["Happy to help."]
        clock.now += 30.0  # one turn's worth of the window has passed
        assert await room.post("six") == ["Happy to help."]
        assert await room.post("seven") == []  # told less than a window ago: not again
        clock.now += 60.0  # a window since she was told
        assert await room.post("eight") == ["Happy to help."]
        assert await room.post("nine") == ["Happy to help."]
        assert await room.post("ten") == [DEFAULT_REPLY]  # told once again, then quiet
        assert await room.post("eleven") == []
        stored = [m.content for m in await room.store.get("local:room", limit=100)
                  if m.participant.id == "U_ANN"]
        assert stored == ["one", "two", "three", "four", "five", "six", "seven", "eight",
                          "nine", "ten", "eleven"]
        assert len(room.model.requests) == 6  # Bob's turn too


def test_the_yaml_lists_become_the_lists_turns_are_held_to(tmp_path: Path) -> None:
    config = tmp_path / "threadline.yaml"
    config.write_text(f"""\
store:
  url: sqlite+aiosqlite:///{tmp_path / 'threadline.db'}
model:
  provider: offline
access:
  channels:
    local: {{allow: ["local:U_ANN"]}}
  admins: ["local:U_ANN"]
  rate_limit: {{turns: 3, per_seconds: 60}}
agents:
  support:
    channels: [local]
    access: {{deny: ["person-abc"]}}
""", encoding="utf-8")
    access = access_for(load_settings(config))
    assert access.channels["local"] == PeopleList.of(allow=["local:U_ANN"])
    assert access.agents["support"] == PeopleList.of(deny=["person-abc"])
    assert access.admins == {"local:U_ANN"}

    config.write_text(config.read_text().replace("    local: {", "    nowhere: {"))
    with pytest.raises(ConfigError, match=r"access.channels.nowhere.*unknown channel 'nowhere'"):
        load_settings(config)
