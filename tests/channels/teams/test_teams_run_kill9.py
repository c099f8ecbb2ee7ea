"""`threadline run` on Teams killed with SIGKILL mid-reply, then started again: every question
Teams was told we received (HTTP 200) is answered exactly once (a reply the dead process was
posting is reported uncertain rather than posted again), and what was not acknowledged,
delivered again as Teams would, is answered once too.

Three people each ask four questions in their own 1:1 chat, against the real Teams SDK in the
process and the fake Bot Framework (login over TLS, signing keys, connector) here.
"""

from __future__ import annotations

import asyncio
import re
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp

from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.teams import Person
from tests.ports import free_port
from tests.runtime.platforms import Platform, write_config
from tests.runtime.test_run_kill9_answers_everything import (
    answer_the_newest_question,
    start,
    uncertain_questions,
    until,
)
from threadline.backends.sql.store import SqlConversationStore

PEOPLE = [Person(f"29:1person{n}", f"Person{n}", f"0000000{n}-0000-4000-8000-000000000000")
          for n in range(3)]
QUESTIONS = 4
_TAG = re.compile(r"q\d+-\d+")


def teams_platform(teams: Any) -> tuple[Platform, str]:
    """The channel config pointing at the fake, and the messaging endpoint it will serve."""
    port = free_port()
    settings = teams.settings()
    return Platform(f"""\
    type: teams
    app_id: ${{TEAMS_APP_ID}}
    app_password: ${{TEAMS_APP_PASSWORD}}
    tenant_id: ${{TEAMS_TENANT_ID}}
    host: 127.0.0.1
    port: {port}
    login_url: {settings['login_url']}
    openid_metadata_url: {settings['openid_metadata_url']}
    service_url: {settings['service_url']}
    streaming: false
""", {"TEAMS_APP_ID": settings["app_id"], "TEAMS_APP_PASSWORD": settings["app_password"],
      "TEAMS_TENANT_ID": settings["tenant_id"], "REQUESTS_CA_BUNDLE": str(teams.ca_file)},
        teams), f"http://127.0.0.1:{port}/api/messages"


async def test_kill_9_mid_reply_then_restart_answers_every_question_once(
        tmp_path: Path, teams: Any) -> None:
    questions = [(p, f"q{p}-{n}") for n in range(QUESTIONS) for p in range(len(PEOPLE))]
    expected = {tag for _, tag in questions}
    activities: dict[str, dict[str, Any]] = {}  # tag -> the activity Teams holds
    unacknowledged: list[str] = []
    async with FakeAnthropic() as anthropic:
        anthropic.responder = answer_the_newest_question
        where, url = teams_platform(teams)
        config = write_config(tmp_path, "teams", where, anthropic.url)
        first = await start(config, where, tmp_path / "first.log")
        alive = True

        async def say(tag: str) -> bool:
            person = PEOPLE[int(tag[1])]
            activity = activities.setdefault(tag, teams.message(
                f"question {tag}", chat=teams.personal(person), sender=person))
            return (await teams.deliver(url, activity))[0] == 200

        async def stream() -> None:
            while questions and alive:
                _, tag = questions.pop(0)
                try:
                    acknowledged = await say(tag)
                except (OSError, aiohttp.ClientConnectionError):
                    acknowledged = False
                if not acknowledged:
                    unacknowledged.append(tag)
                await asyncio.sleep(0.05)

        sender = asyncio.ensure_future(stream())
        try:
            await until(lambda: len(teams.messages()) >= 2)
            first.send_signal(signal.SIGKILL)
            await first.wait()
            alive = False
            await sender
        finally:
            if first.returncode is None:
                first.kill()
                await first.wait()
        assert questions or unacknowledged or len(teams.messages()) < len(expected), (
            "the kill came too late to test anything")

        second = await start(config, where, tmp_path / "second.log")
        try:
            for tag in unacknowledged + [tag for _, tag in questions]:
                assert await say(tag)
            # A reply the dead process had claimed and was posting is not posted again (the
            # person may have it): the pipeline logs `pipeline.delivery_uncertain` for it
            # instead. Every other question is answered.
            def uncertain() -> set[str]:
                return uncertain_questions(tmp_path / "second.log", tmp_path / "threadline.db")

            try:
                await until(lambda: expected - {t.split()[-1] for t in teams.texts.values()}
                            <= uncertain())
            except TimeoutError:
                raise AssertionError(
                    f"answered {sorted(teams.texts.values())}; after the restart the process "
                    f"logged:\n{(tmp_path / 'second.log').read_text()[-6000:]}") from None
            # Teams delivers every acknowledged activity again: none is answered twice.
            for activity in activities.values():
                assert (await teams.deliver(url, activity))[0] == 200
            await asyncio.sleep(1.5)
            second.send_signal(signal.SIGTERM)
            async with asyncio.timeout(60):
                await second.wait()
        finally:
            if second.returncode is None:
                second.kill()
                await second.wait()

    answers = Counter(t.split()[-1] for t in teams.texts.values())
    assert set(answers) <= expected and expected - set(answers) <= uncertain()
    assert [tag for tag, times in answers.items() if times > 1] == []
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}") as store:
        conversations = await store.list_conversations()
        assert len(conversations) == len(PEOPLE)
        for info in conversations:
            turns = [t.content for t in await store.get(info.conversation_id)]
            person = _TAG.findall(turns[0])[0].split("-")[0]
            assert turns[1::2] == [f"answer {person}-{n}" for n in range(QUESTIONS)]
