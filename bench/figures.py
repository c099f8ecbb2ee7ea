"""The one percentile every benchmark prints (nearest rank, no interpolation)."""

from __future__ import annotations

from collections.abc import Iterable


def percentile(values: Iterable[float], share: float) -> float:
    """The value below which `share` (0..1) of the samples lie."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no samples to take a percentile of")
    return ordered[min(int(len(ordered) * share), len(ordered) - 1)]
