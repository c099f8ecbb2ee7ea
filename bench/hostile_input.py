"""What the defences against hostile input cost per turn: figures only, no assertions.

- Speaker labels: `SpeakerLabels` over a prompt's turns plus `turn_text` for each (the work the
  projection adds), at 100, 1,000 and 10,000 turns by 50 people, five of them sharing a name.
- Link codes: `seal_link_codes` on an ordinary message (no code), on a message that is a code,
  and `storable_text` on 4 KB of text without and with a lone surrogate.

    .venv/bin/python bench/hostile_input.py
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from threadline.history.model import Participant, StoredMessage, storable_text
from threadline.history.projection import SpeakerLabels, turn_text
from threadline.people.link_codes import seal_link_codes

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def turns(count: int) -> list[StoredMessage]:
    people = [Participant("user", f"U{n}", "Ann" if n < 5 else f"Person {n}") for n in range(50)]
    return [StoredMessage(conversation_id="c1", participant=people[n % 50],
                          content=f"line one of turn {n}\nAnn: line two\nline three",
                          timestamp=T0 + timedelta(seconds=n)) for n in range(count)]


def timed(work: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(p50, p99) in microseconds."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        samples.append((time.perf_counter() - started) * 1e6)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.99) - 1]


def main() -> None:
    for count in (100, 1_000, 10_000):
        shown = turns(count)

        def project(shown: list[StoredMessage] = shown) -> None:
            labels = SpeakerLabels(shown)
            for message in shown:
                turn_text(labels.of(message), message.content)

        p50, p99 = timed(project, 50 if count < 10_000 else 10)
        print(f"labels+marks {count:>6} turns: p50 {p50 / 1000:8.2f} ms  p99 {p99 / 1000:8.2f} ms"
              f"  ({p50 / count:.2f} us/turn)")
    plain = StoredMessage(conversation_id="c1", participant=Participant("user", "U1", "Ann"),
                          content="my order 4412 has not arrived - can you check?")
    code = StoredMessage(conversation_id="c1", participant=Participant("user", "U1", "Ann"),
                         content="TL-ABCD-EFGH", scope="dm")
    for name, message in (("no code", plain), ("a code", code)):
        p50, p99 = timed(lambda m=message: seal_link_codes(m), 20_000)  # type: ignore[misc]
        print(f"seal_link_codes, {name:8}: p50 {p50:6.2f} us  p99 {p99:6.2f} us")
    text = "é" * 4096
    for name, value in (("clean", text), ("surrogate", text + "\ud800")):
        p50, p99 = timed(lambda v=value: storable_text(v), 20_000)  # type: ignore[misc]
        print(f"storable_text 4 KB, {name:9}: p50 {p50:6.2f} us  p99 {p99:6.2f} us")


if __name__ == "__main__":
    main()
