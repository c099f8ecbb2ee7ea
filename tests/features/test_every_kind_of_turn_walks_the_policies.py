"""Every kind of turn walks the same stages: a person an agent's deny list keeps out gets no
command of that agent, a burst of commands is rate limited like messages, and a schedule's
prompt in a conversation handed to people is not answered by the agent.

The first two run the real runtime in this process (`Runtime.build` from a YAML file, its
local channel, a fake Anthropic server): the stages come from the features the registry
lists, not from wiring in the test.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text
from tests.schedules.rig import FakeClock, rig
from tests.schedules.test_prompts_and_missed_slots import prompt_schedule
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.channels.local import LocalChannel
from threadline.config import load_settings
from threadline.runtime import Runtime
from threadline.schedules import Timing

fake = fake_anthropic_fixture()


@asynccontextmanager
async def running(tmp_path: Path, model: FakeAnthropic, extra: str) -> AsyncIterator[Runtime]:
    config = tmp_path / "threadline.yaml"
    config.write_text(f"""\
store:
  url: sqlite+aiosqlite:///{tmp_path / 'threadline.db'}
ops:
  enabled: false
channels:
  local:
    type: local
    stdin: false
agents:
  support:
    system_prompt: You help.
    channels: [local]
    access:
      deny: [local:mallory]
handoff:
  notify: {{channel: local, chat: desk}}
{extra}""", encoding="utf-8")
    runtime = Runtime.build(load_settings(config), provider=AnthropicProvider(model.client()),
                            interactive=False)
    await runtime.start()
    try:
        yield runtime
    finally:
        await runtime.stop()


async def said(room: LocalChannel, text: str, user: str) -> list[str]:
    before = len(room.sent)
    await room.say(text, user=user)
    return [r.text for r in room.sent[before:]]


async def test_a_person_on_an_agents_deny_list_gets_none_of_its_commands(
        tmp_path: Path, fake: FakeAnthropic) -> None:
    async with running(tmp_path, fake, "") as runtime:
        [room] = runtime.channels
        assert isinstance(room, LocalChannel)
        assert await said(room, "/remind in 1 hour to call the bank", "mallory") == []
        assert await said(room, "/human it is urgent", "mallory") == []
        assert await said(room, "/agents", "mallory") == []
        assert await said(room, "@support hello", "mallory") == []
        assert fake.requests == []
        assert await runtime.backend.schedules.listed(conversation_id="local:main") == []
        # Stored, not answered; and the conversation was not handed to people.
        stored = await runtime.store.get("local:main")
        assert [m.participant.id for m in stored] == ["mallory"] * 4
        fake.script(text("Hello Ann."))
        assert await said(room, "@support hello", "ann") == ["Hello Ann."]
        [reminded] = await said(room, "/remind in 1 hour to call the bank", "ann")
        assert reminded.startswith("OK, I'll post it")


async def test_a_burst_of_commands_is_rate_limited_like_messages(
        tmp_path: Path, fake: FakeAnthropic) -> None:
    limited = """\
access:
  rate_limit: {turns: 3, per_seconds: 3600}
"""
    async with running(tmp_path, fake, limited) as runtime:
        [room] = runtime.channels
        assert isinstance(room, LocalChannel)
        answers = [await said(room, f"/remind in {n + 1} hours to stretch", "ann")
                   for n in range(6)]
        assert all(len(a) == 1 and a[0].startswith("OK, I'll post it") for a in answers[:3])
        assert answers[3] == ["You are sending messages faster than I can answer. "
                              "Please wait a moment."]
        assert answers[4:] == [[], []]
        assert len(await runtime.backend.schedules.listed(conversation_id="local:main")) == 3
        assert await said(room, "@support are you there?", "ann") == []  # same budget
        assert fake.requests == []


async def test_a_scheduled_prompt_in_a_conversation_handed_to_people_is_not_answered(
        sqlite_url: str, fake: FakeAnthropic) -> None:
    clock = FakeClock(datetime(2026, 11, 25, 8, 0, tzinfo=UTC))
    fake.script(text("Following up on order 55."))
    async with rig(sqlite_url, fake, clock) as room:
        await room.scheduler.book.add(prompt_schedule(
            "Follow up on open orders", Timing(clock.now(), cron="0 * * * *")))
        [handed] = await room.say("/human I need a person")
        assert "A person will answer here" in handed
        clock.advance(hours=1)
        assert len(await room.scheduler.fire_due()) == 1
        await room.team.pipeline.scan()
        async with asyncio.timeout(30):
            while await room.team.pipeline.inbox.conversations_waiting(limit=10):  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        assert fake.requests == []  # the agent was not asked
        posted = [r.text for r in room.channel.sent]
        assert posted == [handed]
        [prompt] = [m for m in await room.store.get("local:main")
                    if m.participant.id == "schedule"]
        assert prompt.metadata.extra["handoff"] == "system"  # kept, marked, not answered

        assert await room.say("/bot on") == ["The bot answers here again."]
        clock.advance(hours=1)
        assert len(await room.scheduler.fire_due()) == 1
        async with asyncio.timeout(30):
            await fake.wait_for_requests(1)
