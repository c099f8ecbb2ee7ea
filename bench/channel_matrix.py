"""Matrix beside Slack: from a fake platform's event to its reply call, through a real team.

Each platform runs a `Team` with one agent on the instant model (it answers at once, so what is
measured is Threadline's own work and the platform's round trips) and a SQLite store. One event
at a time: a Matrix message appended to the fake homeserver's log (the bot's `/sync` long poll
wakes on it) or a Slack message event signed and POSTed to the app (HTTP mode); the time is
taken from handing the event over to the fake receiving the reply call (`send` of an
`m.room.message`, `chat.postMessage`). The two platforms alternate, `--rounds` times, in one
run on one machine, and the ratio Matrix / Slack is printed.

    .venv/bin/python bench/channel_matrix.py [--events 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from figures import percentile  # noqa: E402
from versus import InstantModel  # noqa: E402

from tests.channels.matrix.rig import matrix_channel  # noqa: E402
from tests.fakes.matrix import FakeMatrix  # noqa: E402
from tests.fakes.slack import FakeSlack  # noqa: E402
from threadline.agents import Agent  # noqa: E402
from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.channels.base import Channel  # noqa: E402
from threadline.channels.slack import SlackChannel  # noqa: E402
from threadline.team import Team  # noqa: E402

ROOMS = 20


async def _timed(count: int, send: Callable[[int], Awaitable[None]],
                 replies: Callable[[], list[float]]) -> list[float]:
    """Seconds from each event handed over to its reply call, one event at a time."""
    latencies = []
    for n in range(count):
        before = len(replies())
        started = time.monotonic()
        await send(n)
        for _ in range(20_000):
            if len(replies()) > before:
                break
            await asyncio.sleep(0.0005)
        else:
            raise TimeoutError(f"no reply to event {n}")
        latencies.append(replies()[before] - started)
    return latencies


async def _with_team(url: str, channel_of: Callable[[SqlConversationStore], Channel],
                     run: Callable[[Channel], Awaitable[list[float]]]) -> list[float]:
    async with SqlConversationStore(url) as store:
        team = Team([Agent(name="support", conversation_history=store,
                           provider=InstantModel())])
        channel = channel_of(store)
        team.attach(channel)
        await team.start()
        try:
            return await run(channel)
        finally:
            await team.stop()


async def matrix_round(count: int, folder: Path, tag: str) -> list[float]:
    people = {f"@person{n}:fake.test": f"Person {n}" for n in range(ROOMS)}
    async with FakeMatrix(display_names=people) as fake:
        rooms = [fake.add_room(f"Person{n}", members=[f"@person{n}:fake.test"])
                 for n in range(ROOMS)]

        async def send(n: int) -> None:
            fake.message(rooms[n % ROOMS], f"@person{n % ROOMS}:fake.test", f"question {n}")

        def replies() -> list[float]:
            return [c.at for c in fake.calls_of("send") if "/m.room.message/" in c.path]

        async def run(channel: Channel) -> list[float]:
            await _timed(10, send, replies)  # warm-up: member lists, connections, pages
            return await _timed(count, send, replies)

        return await _with_team(f"sqlite+aiosqlite:///{folder / f'matrix-{tag}.db'}",
                                lambda store: matrix_channel(fake, store), run)


async def slack_round(count: int, folder: Path, tag: str) -> list[float]:
    async with FakeSlack() as fake:
        for n in range(ROOMS):
            fake.add_user(f"U{n:04d}", display_name=f"user{n}")
            fake.add_channel(f"C{n:04d}", name=f"room{n}")
        channel = SlackChannel(name="slack", **fake.channel_settings(mode="http"))

        async def send(n: int) -> None:
            event = fake.message_event(f"<@U0BOT> question {n}", user=f"U{n % ROOMS:04d}",
                                       channel=f"C{n % ROOMS:04d}")
            await fake.deliver_event(channel.events_url, event)

        def replies() -> list[float]:
            return [c.at for c in fake.calls_to("chat.postMessage")]

        async def run(_: Channel) -> list[float]:
            await _timed(10, send, replies)
            return await _timed(count, send, replies)

        return await _with_team(f"sqlite+aiosqlite:///{folder / f'slack-{tag}.db'}",
                                lambda store: channel, run)


def _ms(values: list[float], share: float) -> float:
    return percentile(values, share) * 1000


async def main(*, events: int, rounds: int) -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    found: dict[str, list[float]] = {"slack": [], "matrix": []}
    with tempfile.TemporaryDirectory() as folder:
        for r in range(rounds):  # alternated, so both see the same machine
            found["slack"] += await slack_round(events, Path(folder), str(r))
            found["matrix"] += await matrix_round(events, Path(folder), str(r))
    print(f"event -> reply call, instant model, SQLite, {events} events x {rounds} rounds, "
          "one at a time")
    for name, values in found.items():
        print(f"{name:>7}: p50 {_ms(values, 0.5):6.1f} ms  p99 {_ms(values, 0.99):6.1f} ms")
    print(f"  ratio matrix/slack: p50 {_ms(found['matrix'], 0.5) / _ms(found['slack'], 0.5):.2f}x"
          f"  p99 {_ms(found['matrix'], 0.99) / _ms(found['slack'], 0.99):.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    asyncio.run(main(events=arguments.events, rounds=arguments.rounds))
