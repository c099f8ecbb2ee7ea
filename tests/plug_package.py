"""A third-party package as far as entry points go: a `.dist-info` folder that registers one plug,
for a test to put on the path of the process it starts."""

from __future__ import annotations

from pathlib import Path


def registered_in(site: Path, *, distribution: str, group: str, name: str,
                  reference: str) -> Path:
    """`site` (a folder to put on the path) with a distribution registering `name` in `group`."""
    info = site / f"{distribution.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\n"
                                   "Version: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[{group}]\n{name} = {reference}\n",
                                           encoding="utf-8")
    return site
