"""The web widget's first visible text, in a real browser and under many visitors at once.

One `support` agent answers through the real Anthropic SDK on the fake Anthropic server, which
streams replies of `--words` tokens at `--rate` tokens/s (a word a token: the pace
bench/first_text.py gives every platform), on a web channel served by the runtime in this
`threadline run` process (SQLite store in a temporary folder); the fake model, the browser
and the visitors are outside it.

1. Browser: headless Chromium on a page holding only the widget's `<script>` tag. A message is
   typed and sent `--runs` times, one at a time; the browser's own clock (`performance.mark`,
   set by the widget when it sends and when a reply's first text is on screen) gives the time
   from send to first visible text. Beside it, the model's own floor: the time its first word
   takes at that pace when nothing else is in the way (one token's interval).
2. Visitors: `--visitors` visitors (aiohttp, a cookie jar each) hold an SSE stream open on the
   one process, then all send one message at once; from each POST to its 202 (the turn is
   durable) and to the first text of its reply on its own stream: p50, p99, max, and how many
   replies arrived whole.

    .venv/bin/python bench/web_widget.py [--runs 5] [--visitors 200] [--words 100] [--rate 50]
                                         [--interval SECONDS]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.channels.web.browser import CHROMIUM, Browser, host_site  # noqa: E402
from tests.channels.web.rig import Event, Visitor, next_event, write_web_config  # noqa: E402
from tests.fakes.anthropic import FakeAnthropic, text  # noqa: E402
from tests.runtime.platforms import Platform, free_port  # noqa: E402
from tests.runtime.test_run_kill9_answers_everything import start  # noqa: E402

MARKS = """
const marks = performance.getEntriesByType('mark');
const sent = marks.filter(m => m.name.startsWith('threadline:sent:'));
const first = marks.filter(m => m.name.startsWith('threadline:first-text:'));
return sent.map(s => {
  const id = s.name.slice('threadline:sent:'.length);
  const shown = first.find(f => f.name === 'threadline:first-text:' + id + '>support');
  return shown ? shown.startTime - s.startTime : null;
});
"""
# The limits a bench on one address needs lifted (every visitor comes from 127.0.0.1).
BENCH_LIMITS = "    requests_per_minute: 100000\n    messages_per_minute: 1000\n"


def percentile(values: list[float], p: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1]


def in_browser(page: str, runs: int, answer: str) -> list[float]:
    """Milliseconds from send to first visible text, by the browser's clock, per run."""
    browser = Browser()
    try:
        browser.open(page)
        for run in range(runs):
            browser.type_and_send(f"question {run}")
            browser.until(lambda done=run: sum(1 for m in browser.messages()
                                               if m[2] == answer) > done, within=120)
        return [float(ms) for ms in browser.driver.execute_script(MARKS) if ms is not None]
    finally:
        browser.quit()


async def one_visitor(base: str, origin: str, ready: asyncio.Barrier, *,
                      accepted: list[float], results: list[float], whole: list[bool],
                      answer: str) -> None:
    visitor = Visitor(base, origin=origin)
    try:
        await visitor.open()
        async with visitor.events() as events:
            await next_event(events, "ready", within=120)
            await ready.wait()
            started = time.perf_counter()
            status, sent = await visitor.send("where is my parcel?")
            if status != 202:
                raise RuntimeError(f"message refused: {status} {sent}")
            accepted.append((time.perf_counter() - started) * 1000)
            reply_id = f"{sent['id']}>support"
            first: Event | None = None
            while True:
                event = await next_event(events, "", within=300)
                if event.data.get("id") != reply_id:
                    continue
                if first is None and event.kind in ("draft", "posted") and event.data["text"]:
                    first = event
                    results.append((time.perf_counter() - started) * 1000)
                if event.kind == "turn":
                    whole.append(event.data["text"] == answer)
                    return
    finally:
        await visitor.close()


async def many_visitors(*, base: str, origin: str, visitors: int, answer: str) -> None:
    accepted: list[float] = []
    results: list[float] = []
    whole: list[bool] = []
    ready = asyncio.Barrier(visitors)
    began = time.perf_counter()
    await asyncio.gather(*(one_visitor(base, origin, ready, accepted=accepted, results=results,
                                       whole=whole, answer=answer)
                           for _ in range(visitors)))
    took = time.perf_counter() - began
    print(f"{visitors} visitors at once over SSE: message stored (202) p50 "
          f"{percentile(accepted, 50):.0f} ms, p99 {percentile(accepted, 99):.0f} ms; first "
          f"text p50 {percentile(results, 50):.0f} ms, p99 {percentile(results, 99):.0f} ms, "
          f"max {max(results):.0f} ms; {sum(whole)}/{visitors} replies whole; all done in "
          f"{took:.1f} s", flush=True)


async def main(*, runs: int, visitors: int, words: int, rate: float,
               interval: float | None) -> None:
    answer = " ".join(f"w{n}" for n in range(words))
    async with FakeAnthropic() as model:
        model.responder = lambda body: text(answer, tokens_per_second=rate)
        with tempfile.TemporaryDirectory() as folder:
            widget_port = free_port()
            base = f"http://127.0.0.1:{widget_port}"
            async with host_site(base) as shop:
                config = write_web_config(Path(folder), model.url, port=widget_port,
                                          origins=[shop], more_channel_yaml=BENCH_LIMITS + (
                                              f"    stream_interval: {interval}\n"
                                              if interval else ""))
                served = await start(config, Platform("", {}, None), Path(folder) / "run.log")
                try:
                    print(f"model: {words} words at {rate:g} tokens/s (its first word: "
                          f"{1000 / rate:.0f} ms); store: SQLite; `threadline run`; "
                          f"stream_interval {interval or 'default'}",
                          flush=True)
                    if CHROMIUM.exists():
                        # The first run warms the process up (not counted).
                        shown = (await asyncio.to_thread(in_browser, f"{shop}/", runs + 1,
                                                         answer))[1:]
                        print(f"browser first visible text over {len(shown)} runs (ms, the "
                              f"browser's clock): p50 {statistics.median(shown):.0f}, min "
                              f"{min(shown):.0f}, max {max(shown):.0f}; "
                              f"{statistics.median(shown) / (1000 / rate):.1f}x the model's "
                              "first word", flush=True)
                    else:
                        print("browser: skipped (no /usr/bin/chromium)")
                    await many_visitors(base=base, origin=shop, visitors=visitors,
                                        answer=answer)
                finally:
                    served.terminate()
                    await served.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--visitors", type=int, default=200)
    parser.add_argument("--words", type=int, default=100)
    parser.add_argument("--rate", type=float, default=50.0, help="model tokens per second")
    parser.add_argument("--interval", type=float, default=None,
                        help="the channel's stream_interval (default: its own)")
    arguments = parser.parse_args()
    logging.disable(logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    asyncio.run(main(runs=arguments.runs, visitors=arguments.visitors, words=arguments.words,
                     rate=arguments.rate, interval=arguments.interval))
