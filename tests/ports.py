"""A TCP port for a server a test starts later on a fixed port (a webhook, a channel's listener).

A port the kernel hands out for port 0 lies in the ephemeral range, which every outgoing
connection of every test draws from too: between picking it and binding it, another test's
client could take it ("address already in use", seen in a full run). Ports are picked at random
below that range instead, and checked free when picked.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOWEST = 10_000


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default; macOS starts at 49,152


def free_port() -> int:
    """A port free on 127.0.0.1 now, outside the range outgoing connections take theirs from."""
    top = _ephemeral_start()
    for _ in range(200):
        port = random.randrange(LOWEST, top) if top > LOWEST else random.randrange(top)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port found on 127.0.0.1 between {LOWEST} and {top}")
