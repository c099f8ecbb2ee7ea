"""Charts for the console as data for inline SVG: tokens, latency and cache hits over time.

No JavaScript and nothing fetched: the server turns records into polyline points that the
template draws, one chart per figure and agent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from threadline.inspector.record import ReplyRecord

WIDTH = 600
HEIGHT = 160
PAD = 30


@dataclass(frozen=True, slots=True)
class Chart:
    """One figure over time for one agent: SVG polyline points and the axis labels."""

    title: str
    agent: str
    unit: str
    points: str
    dots: tuple[tuple[float, float], ...]
    y_max: float
    first: str
    last: str
    count: int


FIGURES: tuple[tuple[str, str, Callable[[ReplyRecord], float | None]], ...] = (
    ("tokens per reply", "tokens", lambda r: float(r.input_tokens + r.output_tokens
                                                   + r.cache_read_tokens
                                                   + r.cache_write_tokens)),
    ("latency", "ms", lambda r: r.latency_ms),
    ("cache hit rate", "%", lambda r: None if r.cache_hit_rate is None
     else r.cache_hit_rate * 100),
)


def chart(title: str, agent: str, unit: str, records: Sequence[ReplyRecord],
          figure: Callable[[ReplyRecord], float | None]) -> Chart:
    """A chart of `figure` for records given oldest first (records without it are skipped)."""
    return plot(title, agent, unit, [(f"{r.created_at:%Y-%m-%d %H:%M}", v) for r in records
                                     if (v := figure(r)) is not None])


def plot(title: str, agent: str, unit: str, points: Sequence[tuple[str, float]]) -> Chart:
    """A chart of (label, value) points, oldest first (the first and last label the axis)."""
    y_max = max((v for _, v in points), default=0.0) or 1.0
    if unit == "%":
        y_max = 100.0
    span = max(len(points) - 1, 1)
    dots = tuple((round(PAD + (WIDTH - 2 * PAD) * i / span, 1),
                  round(HEIGHT - PAD - (HEIGHT - 2 * PAD) * v / y_max, 1))
                 for i, (_, v) in enumerate(points))
    return Chart(
        title=title, agent=agent, unit=unit, points=" ".join(f"{x},{y}" for x, y in dots),
        dots=dots, y_max=round(y_max, 1),
        first=points[0][0] if points else "", last=points[-1][0] if points else "",
        count=len(points),
    )


def charts_by_agent(records: Sequence[ReplyRecord]) -> dict[str, list[Chart]]:
    """Every figure's chart for each agent, from records given newest first."""
    oldest_first = list(reversed(records))
    agents = sorted({r.agent for r in records})
    return {agent: [chart(title, agent, unit, [r for r in oldest_first if r.agent == agent],
                          figure) for title, unit, figure in FIGURES]
            for agent in agents}
