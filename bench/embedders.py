"""The shipped embedding models side by side: load time, one question's latency, backlog speed.

Each model of `threadline.history.embedding_model.MODELS` whose packages are installed is
loaded from site-packages (hash-checked), then times: embedding one short question (as recall
does for each turn it answers; p50 and p99 of 200), and a backlog of real-length turns in the
indexer's batches (turns per second on one thread). Quality is measured by bench/recall.py
with THREADLINE_EMBEDDING_MODEL set to the model's name.

    .venv/bin/python bench/embedders.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import percentile  # noqa: E402
from locomo import locomo_conversations  # noqa: E402

from threadline.history.embedding_model import MODELS, load_embedder  # noqa: E402
from threadline.history.indexer import BATCH  # noqa: E402
from threadline.log import configure_logging  # noqa: E402

QUESTIONS = ["Which sport does she coach?", "When did Melanie paint a sunrise?",
             "What did Caroline research?", "Where did they go camping last summer?"]


def main() -> None:
    configure_logging("warning")
    turns = [m.content for c in locomo_conversations() for m in c.turns][:2048]
    if not turns:
        turns = [f"turn {n}: we talked about the garden, the team and the trip" for n in
                 range(2048)]
    print(f"{'model':34} {'load s':>7} {'question p50 ms':>16} {'p99 ms':>7} "
          f"{'turns/s':>9} {'dims':>5}")
    for key in MODELS:
        started = time.perf_counter()
        embedder = load_embedder(key)
        if embedder is None:
            print(f"{key:34} not installed")
            continue
        loaded = time.perf_counter() - started
        timings = []
        for n in range(200):
            started = time.perf_counter()
            embedder.embed([QUESTIONS[n % len(QUESTIONS)]])
            timings.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        for first in range(0, len(turns), BATCH):
            embedder.embed(turns[first:first + BATCH])
        per_second = len(turns) / (time.perf_counter() - started)
        print(f"{embedder.name:34} {loaded:7.2f} {statistics.median(timings):16.2f} "
              f"{percentile(timings, 0.99):7.2f} {per_second:9,.0f} {embedder.dimensions:5}")


if __name__ == "__main__":
    main()
