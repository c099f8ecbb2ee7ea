"""Opening a listening port, in one place, so a port that cannot be had is one clear line.

Every server Threadline opens (the ops server with the console, `threadline console`, Slack's
HTTP mode, Telegram's webhook) binds through `serve`; a port already taken, a privileged port
or an address this machine does not have becomes a `PortUnavailableError` naming the port and
the setting that chose it, instead of an `OSError` traceback. `threadline check` asks
`port_problem` about the same `Listener`s before anything runs.

`serve` also remembers every server it started (`own_ports`: the ports they serve now, so a port
released when its server stops, and later handed to someone else, is not counted): the file
fetcher (`threadline.channels.fetch_policy`) never connects to them on a local address, so a file
URL cannot make the bot read its own ops server or console, which trust loopback callers.
"""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass

from aiohttp import web

from threadline.errors import PortUnavailableError

_served: list[web.AppRunner] = []  # those stopped since are dropped by `own_ports`


@dataclass(frozen=True, slots=True)
class Listener:
    """Where a server listens, and the settings (config keys or options) that say so."""

    host: str
    port: int
    port_setting: str
    host_setting: str

    def problem(self, error: OSError) -> str:
        """What `error` (from binding) means for this listener, and the one thing to do."""
        where = f"port {self.port} on {self.host}"
        if error.errno == errno.EADDRINUSE:
            return (f"{where} is already in use ({self.port_setting}): another program, or "
                    "another threadline, listens there; stop it or set "
                    f"{self.port_setting} to a free port (0 picks one)")
        if error.errno == errno.EACCES:
            return (f"{where} needs root ({self.port_setting}): ports below 1024 are "
                    f"privileged; set {self.port_setting} to 1024 or above")
        if error.errno == errno.EADDRNOTAVAIL or isinstance(error, socket.gaierror):
            return (f"cannot listen on {self.host} ({self.host_setting}): this machine has no "
                    f"such address; set {self.host_setting} to 127.0.0.1 (this machine only) "
                    "or 0.0.0.0 (every interface)")
        return (f"cannot listen on {where} ({self.port_setting}, {self.host_setting}): "
                f"{error.strerror or error}")


async def serve(runner: web.AppRunner, listener: Listener) -> int:
    """Serve the set-up `runner` on `listener`; returns the port bound (port 0 picks one)."""
    try:
        await web.TCPSite(runner, listener.host, listener.port).start()
    except OSError as error:
        raise PortUnavailableError(listener.problem(error)) from error
    addresses = runner.addresses
    bound = int(addresses[0][1]) if addresses else listener.port
    _served.append(runner)
    return bound


def own_ports() -> frozenset[int]:
    """The ports this process serves now (never fetched from on a local address); a stopped
    server's runner lists no addresses."""
    _served[:] = [runner for runner in _served if runner.addresses]
    return frozenset(int(address[1]) for runner in _served for address in runner.addresses)


def port_problem(listener: Listener) -> str | None:
    """Whether `listener` could be bound now (bound and released at once, the way aiohttp
    binds); None when it could, or when its port is 0 (any free port)."""
    if listener.port == 0:
        return None
    try:
        infos = socket.getaddrinfo(listener.host or None, listener.port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
        for family, kind, proto, _, address in infos:
            with socket.socket(family, kind, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(address)
    except OSError as error:
        return listener.problem(error)
    return None
