"""What a picture adds to a turn, and what an old picture costs in later prompts.

Inbound: a Telegram photo (a screenshot-sized PNG, 1280x800, about 300 KB of noise so it does
not compress away) is taken in through the real SDK against the fake Bot API: getFile, the
download, the type read from the bytes, the bytes kept (in the files directory, the row in
SQLite), then the prompt's image block built (bytes read back, base64, the Anthropic request
rendered). The same turn without a file is the baseline; the difference is the added latency.

Old image: the prompt tokens a picture costs when it is sent as an image (width x height / 750,
as Anthropic counts it) against the tokens of its line once the description replaced it
(counted with the store's own counter).

    .venv/bin/python bench/attachments.py [--runs 50]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import struct
import sys
import tempfile
import time
import zlib
from pathlib import Path

import structlog
from telegram import Bot, Message

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from figures import percentile  # noqa: E402

from tests.fakes.telegram import ALICE, FakeTelegram, private_chat  # noqa: E402
from threadline.agents.convert import to_anthropic  # noqa: E402
from threadline.agents.seeing import described_line, with_images  # noqa: E402
from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.backends.sql.files import SqlFileStore  # noqa: E402
from threadline.channels.files import FileIntake, take_in  # noqa: E402
from threadline.channels.telegram.inbound import incoming_files  # noqa: E402
from threadline.history.files import files_of, image_tokens  # noqa: E402
from threadline.history.model import Participant, StoredMessage  # noqa: E402
from threadline.history.prompt import PromptMessage  # noqa: E402
from threadline.history.tokens import default_counter  # noqa: E402

WIDTH, HEIGHT = 1280, 800
DESCRIPTION = ("A browser window showing a checkout page with a red banner: 'Payment failed: "
               "card declined (code 51)'; the order total reads 84.20 EUR.")


def noisy_png(width: int, height: int) -> bytes:
    """A PNG whose rows are partly random, so its size is like a real screenshot's."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))

    part = width // 4
    rows = b"".join(b"\x00" + os.urandom(part) + b"\xf0" * (width - part)
                    for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


async def one_turn(fake: FakeTelegram, bot: Bot, intake: FileIntake, picture: bytes | None,
                   number: int) -> float:
    """Seconds from the update to the rendered model request (take in + prompt)."""
    chat = private_chat(ALICE)
    update = (fake.media(chat, ALICE, picture, kind="photo", caption=f"what is this {number}?")
              if picture is not None else fake.message(chat, ALICE, f"what is this {number}?"))
    message = Message.de_json(update["message"], bot)
    turn = StoredMessage(conversation_id=f"telegram:{chat.id}", content=message.caption or
                         message.text or "", participant=Participant("user", str(ALICE.id)))
    started = time.perf_counter()
    turn = await take_in(turn, incoming_files(message, bot), intake)
    messages, _ = await with_images([PromptMessage("user", turn.content)], turn, intake.store)
    to_anthropic(messages)
    return time.perf_counter() - started


async def main(runs: int) -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    picture = noisy_png(WIDTH, HEIGHT)
    with tempfile.TemporaryDirectory() as tmp:
        async with FakeTelegram() as fake, SqlConversationStore(
                f"sqlite+aiosqlite:///{tmp}/bench.db") as store:
            settings = fake.channel_settings()
            bot = Bot(settings["token"], base_url=settings["base_url"],
                      base_file_url=settings["base_file_url"])
            await bot.initialize()
            intake = FileIntake(store=SqlFileStore(store, directory=Path(tmp) / "files"))
            plain, with_picture = [], []
            for number in range(runs):
                plain.append(await one_turn(fake, bot, intake, None, number))
                # a fresh picture each time (a new hash), as people send new screenshots
                with_picture.append(await one_turn(fake, bot, intake, noisy_png(WIDTH, HEIGHT),
                                                   number))
            await bot.shutdown()
    ms = [x * 1000 for x in with_picture]
    base = [x * 1000 for x in plain]
    print(f"inbound image {WIDTH}x{HEIGHT} PNG, {len(picture) / 1024:.0f} KB, {runs} runs "
          "(getFile + download + sniff + keep on disk + prompt block):")
    print(f"  text-only turn      p50 {statistics.median(base):6.2f} ms  "
          f"p95 {percentile(base, 95):6.2f} ms")
    print(f"  turn with the image p50 {statistics.median(ms):6.2f} ms  "
          f"p95 {percentile(ms, 95):6.2f} ms")
    print(f"  added latency       p50 {statistics.median(ms) - statistics.median(base):6.2f} ms")

    picture_file = files_of({"files": [{"name": "screenshot.png", "media_type": "image/png",
                                        "size": len(picture), "sha256": "x" * 64,
                                        "width": WIDTH, "height": HEIGHT}]})[0]
    counter = default_counter()
    before = image_tokens(WIDTH, HEIGHT)
    after = counter.count(described_line(picture_file, DESCRIPTION))
    plain_line = counter.count(picture_file.prompt_line())
    print(f"old image in a later prompt: {before:,} tokens as an image block; "
          f"{after} tokens as its described line ({plain_line} for the bare line a model "
          "that cannot see gets before a description exists)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    asyncio.run(main(parser.parse_args().runs))
