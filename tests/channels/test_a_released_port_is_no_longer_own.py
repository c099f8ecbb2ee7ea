"""The fetcher's "this process's own ports" are the ports served now, not every port ever served.

A stopped ops server releases its port, and the system may hand that port to anyone else (here
a file server a channel is allowed to fetch from): counting it as our own forever refused that
server's files for the rest of the process (seen as a flaky Telegram file test under xdist).
"""

from __future__ import annotations

from aiohttp import web

from threadline.listening import Listener, own_ports, serve


async def test_a_served_port_is_own_until_its_server_stops() -> None:
    runner = web.AppRunner(web.Application())
    await runner.setup()
    port = await serve(runner, Listener("127.0.0.1", 0, "ops.port", "ops.host"))
    try:
        assert port in own_ports()
    finally:
        await runner.cleanup()
    assert port not in own_ports()
