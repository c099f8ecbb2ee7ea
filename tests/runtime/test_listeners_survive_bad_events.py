"""No channel goes deaf on a bad event, and readiness says when one is not receiving.

The real runtime (`Runtime.build` from a YAML config, the offline model) listens to the fake
Telegram Bot API and the fake Discord gateway over real sockets. Updates and events the
libraries cannot parse, or that lack the fields a message needs, are logged and skipped (and
counted in `/metrics`); the good message after them is answered. A listener task killed from
inside turns `/readyz` red until its supervisor has started it again. Waits poll; nothing here
asserts a duration.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp

from tests.fakes.telegram import ALICE, FakeTelegram, private_chat
from tests.ports import free_port
from tests.runtime.platforms import Platform, platform
from threadline.cli.check import run_checks
from threadline.config import load_settings
from threadline.runtime import Runtime

WAIT = 30.0


@asynccontextmanager
async def running(tmp_path: Path, name: str, where: Platform, *,
                  port: int = 0) -> AsyncIterator[Runtime]:
    config = tmp_path / "threadline.yaml"
    config.write_text(f"""\
store:
  url: sqlite:///{tmp_path / 'threadline.db'}
model:
  provider: offline
ops:
  port: {port}
channels:
  {name}:
{where.channel_yaml}agents:
  support:
    channels: [{name}]
""", encoding="utf-8")
    for key, value in where.env.items():
        (tmp_path / ".env").open("a", encoding="utf-8").write(f"{key}={value}\n")
    runtime = Runtime.build(load_settings(config), interactive=False)
    await runtime.start()
    try:
        yield runtime
    finally:
        await runtime.stop()


async def ops(runtime: Runtime, path: str) -> tuple[int, str]:
    assert runtime.ops is not None
    async with aiohttp.ClientSession() as session, session.get(
            f"http://127.0.0.1:{runtime.ops.port}{path}") as response:
        return response.status, await response.text()


async def until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(WAIT):
        while not condition():  # noqa: ASYNC110 - polls state another task changes
            await asyncio.sleep(0.05)


async def until_ready(runtime: Runtime, ready: bool) -> dict[str, str]:
    async with asyncio.timeout(WAIT):
        while True:
            status, body = await ops(runtime, "/readyz")
            if (status == 200) == ready:
                return dict(json.loads(body)["checks"])
            await asyncio.sleep(0.05)


async def test_telegram_skips_updates_it_cannot_read_and_answers_the_next(
        tmp_path: Path) -> None:
    async with platform("telegram") as where, running(tmp_path, "telegram", where) as runtime:
        telegram: FakeTelegram = where.fake
        no_chat = telegram.raw_update(message={"message_id": 7, "date": 1700000000,
                                               "from": ALICE.as_dict(), "text": "no chat"})
        unparseable = telegram.raw_update(message="not a message at all")
        wrong_types = telegram.raw_update(callback_query={"id": None, "from": 5})
        for update in (no_chat, unparseable, wrong_types):
            await telegram.deliver(update)
        good = telegram.message(private_chat(ALICE), ALICE, "hello after the bad ones")
        await telegram.deliver(good)

        [answer] = await telegram.wait_for_calls("sendMessage", 1)
        assert "hello after the bad ones" in str(answer.params["text"])
        await telegram.wait_confirmed(good)  # polling moved past every bad update
        assert telegram.pending_updates == []
        _, metrics = await ops(runtime, "/metrics")
        assert 'threadline_skipped_events_total{channel="telegram"} 3.0' in metrics
        assert (await until_ready(runtime, True))["channel:telegram"] == "ok"


async def test_a_telegram_listener_killed_from_inside_is_restarted(tmp_path: Path) -> None:
    async with (platform("telegram") as where,
                running(tmp_path, "telegram", where, port=free_port()) as runtime):
        telegram: FakeTelegram = where.fake
        [channel] = runtime.channels
        listener = channel._intake.listener  # type: ignore[attr-defined]
        checked = asyncio.Event()
        listener._before_restart = checked.wait  # held down until `check` saw it
        assert (await until_ready(runtime, True))["channel:telegram"] == "ok"
        listener.task.cancel()

        red = await until_ready(runtime, False)
        assert "not receiving" in red["channel:telegram"]
        [(_, problem, report)] = [r for r in await run_checks(runtime.settings, 10)
                                  if r[0] == "running process"]
        assert problem is None and any(
            w.startswith("channel telegram is not receiving") for w in report.warnings)
        checked.set()
        await until_ready(runtime, True)
        assert listener.restarts == 1
        await telegram.deliver(telegram.message(private_chat(ALICE), ALICE, "still there"))
        [answer] = await telegram.wait_for_calls("sendMessage", 1)
        assert "still there" in str(answer.params["text"])


async def test_discord_skips_events_it_cannot_read_and_answers_the_next(
        tmp_path: Path) -> None:
    async with platform("discord") as where, running(tmp_path, "discord", where) as runtime:
        discord = where.fake
        room = where.extra["channels"][0]
        ada = discord.add_user("ada")
        discord.add_member(where.extra["guild"], ada)
        mention = f"<@{discord.bot.id}>"

        null_author = discord.message_payload(room, author=ada, content=f"{mention} a")
        null_author["author"] = None
        bad_id = discord.message_payload(room, author=ada, content=f"{mention} b",
                                         message_id="not-a-number")
        await discord.deliver("MESSAGE_CREATE", null_author)
        await discord.deliver("MESSAGE_CREATE", bad_id)
        depth = 50_000
        await discord.deliver_raw("MESSAGE_CREATE",
                                  '{"id": "1", "nested": ' + "[" * depth + "]" * depth + "}")
        # An event nobody can decode, replayed by the resume it causes: the channel identifies
        # anew (channels/discord/resume.py).
        await until(lambda: sum(discord.identifies.values()) == 2
                    and discord.identified_sessions == 1
                    and runtime.channels[0].receiving() is None)
        await until_ready(runtime, True)
        await discord.deliver_message(room, author=ada, content=f"{mention} the good one")

        posts = await discord.wait_for_posts(1)
        assert "the good one" in posts[-1]["content"]
        _, metrics = await ops(runtime, "/metrics")
        skipped = next(line for line in metrics.splitlines()
                       if line.startswith('threadline_skipped_events_total{channel="discord"}'))
        assert float(skipped.rsplit(" ", 1)[1]) >= 2.0


async def test_a_discord_gateway_killed_from_inside_is_restarted(tmp_path: Path) -> None:
    async with platform("discord") as where, running(tmp_path, "discord", where) as runtime:
        discord = where.fake
        [channel] = runtime.channels
        assert (await until_ready(runtime, True))["channel:discord"] == "ok"
        channel._listener.task.cancel()  # type: ignore[attr-defined]

        red = await until_ready(runtime, False)
        assert "not receiving" in red["channel:discord"]
        await until_ready(runtime, True)
        ada = discord.add_user("ada")
        discord.add_member(where.extra["guild"], ada)
        await until(lambda: discord.identified_sessions >= 1)
        await discord.deliver_message(where.extra["channels"][0], author=ada,
                                      content=f"<@{discord.bot.id}> back")
        posts = await discord.wait_for_posts(1)
        assert "back" in posts[-1]["content"]


async def test_slack_acknowledges_and_skips_events_it_cannot_read(tmp_path: Path) -> None:
    async with platform("slack") as where, running(tmp_path, "slack", where) as runtime:
        slack = where.fake
        broken = slack.message_event("unused", channel="D0ALICE", channel_type="im")
        broken.update(text=["not", "text"], ts={"not": "a ts"}, blocks="nonsense")
        delivery = await slack.deliver_event(where.extra["events_url"], broken)
        assert delivery.status == 200  # acknowledged: Slack must not retry it forever
        good = slack.message_event("hello after the broken one", channel="D0ALICE",
                                   channel_type="im")
        assert (await slack.deliver_event(where.extra["events_url"], good)).status == 200
        [answer] = await slack.wait_for_calls("chat.postMessage", 1)
        assert "hello after the broken one" in str(answer.params["text"])
        _, metrics = await ops(runtime, "/metrics")
        assert 'threadline_skipped_events_total{channel="slack"} 1.0' in metrics
