"""Time to the first visible text of a reply, streamed and not, on each platform's fake.

One agent answers through the real Anthropic SDK on the fake Anthropic server, which streams
replies of about `--words` tokens at `--rate` tokens/s (a word a token), and through each
channel against its platform's fake (real SDKs over loopback, SQLite store). The runs' reply
lengths are spread over one second of the model's writing, so where the model's end falls in
the chat's pace (one change a second) varies as it does in life. Per platform and mode, `--runs`
messages are answered one at a time; for each the figures are measured from the inbound event
(handed to the platform fake) to:

- first text: the first platform call carrying reply text (Slack `chat.startStream` or
  `chat.postMessage`; Telegram `sendMessageDraft`, `sendMessage`; Discord a message post);
- whole reply: the call after which the platform shows the whole reply.

`streaming: false` is today's behaviour before this change (the reply posted once, whole);
streaming is the default now, at the default `stream_interval` of 1 s per chat. Runs are
`--pause` seconds apart (a person reads the reply before asking again; asked sooner, the
chat's pace would also hold the next reply's first change). Medians of the runs, in seconds.

    .venv/bin/python bench/first_text.py [--runs 5] [--words 100] [--rate 50]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.channels.live_rig import live_team, replies_in, words  # noqa: E402
from tests.fakes.anthropic import FakeAnthropic, text  # noqa: E402
from tests.fakes.discord_gateway import DiscordWorld, FakeDiscord  # noqa: E402
from tests.fakes.slack import FakeSlack  # noqa: E402
from tests.fakes.telegram import ALICE, CHAT_CHANGES, GROUP, FakeTelegram, private_chat  # noqa: E402
from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.channels.base import Channel  # noqa: E402

# A text-bearing platform call: when it arrived (monotonic) and what the reply showed after it.
Shown = tuple[float, str]


@dataclass
class Platform:
    """One platform fake with a channel on it: how to speak, and what the bot showed since."""

    channel: Channel
    conversation: Callable[[int], str]  # the conversation of run N's reply
    speak: Callable[[int], Awaitable[None]]
    shown_since: Callable[[int], list[Shown]]  # text-bearing calls after call index N
    calls: Callable[[], int]


@asynccontextmanager
async def slack(streaming: bool) -> AsyncIterator[Platform]:
    async with FakeSlack() as fake:
        fake.add_user("U0ALICE", display_name="Alice")
        fake.add_channel("C0GENERAL", name="general")
        from threadline.channels.slack import SlackChannel

        channel = SlackChannel(**fake.channel_settings(), streaming=streaming)
        posts: list[str] = []

        async def speak(run: int) -> None:
            post = fake.message_event(f"question {run}")
            posts.append(post["ts"])
            await fake.deliver_event(channel.events_url, post)

        def shown_since(index: int) -> list[Shown]:
            shown, streamed = [], ""
            for call in fake.calls[index:]:
                if call.method in ("chat.postMessage", "chat.update"):
                    streamed = call.params["text"]
                elif call.method in ("chat.startStream", "chat.appendStream",
                                     "chat.stopStream"):
                    streamed += call.params.get("markdown_text") or ""
                else:
                    continue
                shown.append((call.at, streamed))
            return shown

        yield Platform(channel, lambda run: f"slack:T0FAKE:C0GENERAL:{posts[run]}", speak,
                       shown_since, lambda: len(fake.calls))


@asynccontextmanager
async def telegram(streaming: bool, *, private: bool) -> AsyncIterator[Platform]:
    async with FakeTelegram() as fake:
        from threadline.channels.telegram import TelegramChannel

        channel = TelegramChannel(name="tg", **fake.channel_settings(), streaming=streaming)
        chat = private_chat(ALICE) if private else GROUP

        async def speak(run: int) -> None:
            await fake.deliver(fake.message(chat, ALICE, f"question {run}"))

        def shown_since(index: int) -> list[Shown]:
            return [(c.at, c.params.get("text", "")) for c in fake.calls[index:]
                    if c.method in CHAT_CHANGES and c.status == 200]

        yield Platform(channel, lambda run: f"telegram:{chat.id}", speak, shown_since,
                       lambda: len(fake.calls))


@asynccontextmanager
async def discord(streaming: bool) -> AsyncIterator[Platform]:
    async with FakeDiscord() as fake:
        from threadline.channels.discord.channel import DiscordChannel

        world = DiscordWorld.build(fake)
        channel = DiscordChannel(token=fake.token, api_base_url=fake.api_base_url,
                                 gateway_url=fake.gateway_url, guild_ready_timeout=0.02,
                                 streaming=streaming)

        async def speak(run: int) -> None:
            await fake.deliver_message(world.general, author=world.ada, content=f"q {run}")

        def shown_since(index: int) -> list[Shown]:
            posts = f"/channels/{world.general}/messages"
            created = iter(fake.posted[sum(c.method == "POST" and c.path == posts
                                           and c.status == 200 for c in fake.calls[:index]):])
            parts: dict[str, str] = {}  # message id -> what it shows
            shown = []
            for call in fake.calls[index:]:
                if call.status != 200 or not call.path.startswith(posts):
                    continue
                if call.method == "POST":
                    parts[next(created)["id"]] = call.json["content"]
                elif call.method == "PATCH":
                    parts[call.path.rsplit("/", 1)[1]] = call.json["content"]
                else:
                    continue
                shown.append((call.at, " ".join(parts.values())))
            return shown

        yield Platform(channel, lambda run: f"discord:{world.guild.id}:{world.general}", speak,
                       shown_since, lambda: len(fake.calls))


async def measure(platform: Platform, anthropic: FakeAnthropic, store: SqlConversationStore,
                  *, runs: int, tokens: int, rate: float, pause: float
                  ) -> tuple[list[float], list[float]]:
    firsts, wholes = [], []
    async with live_team(store, platform.channel, anthropic):
        for run in range(runs):
            await asyncio.sleep(pause)
            reply = words(tokens + round(rate * run / runs))
            anthropic.script(text(reply, tokens_per_second=rate))
            index = platform.calls()
            asked = time.monotonic()
            await platform.speak(run)
            where = platform.conversation(run)
            replies = sum(platform.conversation(r) == where for r in range(run + 1))
            async with asyncio.timeout(60):
                while len(await replies_in(store, where)) < replies:  # noqa: ASYNC110 - a database
                    await asyncio.sleep(0.02)
            shown = platform.shown_since(index)
            whole = next((at for at, seen in shown if seen.split() == reply.split()), None)
            if whole is None:
                raise AssertionError(f"the whole reply was never shown: {shown[-1:]}")
            firsts.append(shown[0][0] - asked)
            wholes.append(whole - asked)
    return firsts, wholes


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--words", type=int, default=100)
    parser.add_argument("--rate", type=float, default=50.0, help="model tokens per second")
    parser.add_argument("--pause", type=float, default=1.5, help="seconds between runs")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    platforms: dict[str, Callable[[bool], Any]] = {
        "slack (thread)": slack,
        "telegram (private)": lambda on: telegram(on, private=True),
        "telegram (group)": lambda on: telegram(on, private=False),
        "discord": discord,
    }
    longest = args.words + round(args.rate * (args.runs - 1) / args.runs)
    print(f"replies of {args.words}-{longest} tokens at {args.rate:g} tokens/s (the model "
          f"writes for {args.words / args.rate:.1f}-{longest / args.rate:.1f} s); "
          f"median of {args.runs} runs, s")
    print(f"{'platform':<20} {'mode':<16} {'first text':>10} {'whole reply':>12}")
    for name, open_platform in platforms.items():
        for streaming in (False, True):
            with tempfile.TemporaryDirectory() as folder:
                async with FakeAnthropic() as anthropic, SqlConversationStore(
                        f"sqlite+aiosqlite:///{folder}/bench.db") as store, open_platform(
                            streaming) as platform:
                    firsts, wholes = await measure(platform, anthropic, store, runs=args.runs,
                                                   tokens=args.words, rate=args.rate,
                                                   pause=args.pause)
            mode = "streaming" if streaming else "streaming: false"
            print(f"{name:<20} {mode:<16} {statistics.median(firsts):>10.2f} "
                  f"{statistics.median(wholes):>12.2f}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
