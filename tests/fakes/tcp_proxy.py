"""A local TCP proxy a test can stop, restart, make go silent or freeze: a database that goes
away."""

from __future__ import annotations

import asyncio

from tests.ports import free_port


class TcpProxy:
    """A local TCP proxy to PostgreSQL that a test can stop, restart or make go silent; its open
    connections can be frozen: kept open, carrying nothing either way (a network cut that
    neither end is told of)."""

    def __init__(self, target_port: int) -> None:
        self.port = free_port()
        self.target_port = target_port
        self.silent = False
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._frozen: set[asyncio.StreamWriter] = set()

    def freeze(self) -> None:
        """Swallow whatever the connections open now send, in both directions."""
        self._frozen |= self._writers

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        if self.silent:
            await reader.read()  # accept, then never answer
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self._writers.add(up_writer)

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    if sink not in self._frozen:
                        sink.write(data)
                        await sink.drain()
            except ConnectionError:
                pass
            finally:
                sink.transport.abort()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
