"""The widget's connection cut while a reply is being written (every TCP connection between the
browser and the server aborted by a proxy in between), in real headless Chromium: the widget's
`EventSource` reconnects by itself, and the page ends with the reply complete, once, never
having shown it twice. A message sent while the server cannot be reached is sent again by the
widget, under the same id, once it can: one turn, answered once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from tests.channels.web.browser import Browser, host_site, needs_chromium
from tests.channels.web.rig import web_runtime
from tests.fakes.anthropic import FakeAnthropic, text
from tests.fakes.tcp_proxy import TcpProxy
from tests.ports import free_port

pytestmark = needs_chromium
ANSWER = ("Your parcel 4417-B left the depot this morning, passed the sorting centre at noon "
          "and arrives tomorrow before noon at the pickup point you chose.")


def watch(page: str, proxy: Callable[[str], None]) -> dict[str, object]:
    """Ask, cut the connection once part of the reply shows, and watch it end; then ask while
    the server is out of reach, and bring it back."""
    browser = Browser()
    most_agent_bubbles = 0
    try:
        browser.open(page)
        browser.type_and_send("where is my parcel?")

        def agent() -> list[list[str]]:
            nonlocal most_agent_bubbles
            bubbles = [m for m in browser.messages() if "agent" in m[0]]
            most_agent_bubbles = max(most_agent_bubbles, len(bubbles))
            return bubbles

        partial = browser.until(lambda: [b[2] for b in agent() if b[2]])[0]
        proxy("cut")
        browser.until(lambda: [b for b in agent()
                               if b[2] == ANSWER and "streaming" not in b[0]], within=60)
        most_during_the_cut = most_agent_bubbles

        proxy("down")
        browser.type_and_send("are you there?")
        time.sleep(2)  # the widget's first sends fail: nothing listens
        proxy("up")
        browser.until(lambda: len(agent()) == 2 and agent()[1][2] == ANSWER
                      and "streaming" not in agent()[1][0], within=60)
        return {"partial": partial, "most": most_during_the_cut,
                "final": [(m[0], m[2]) for m in browser.messages()]}
    finally:
        browser.quit()


async def test_a_connection_cut_mid_reply_ends_with_the_reply_once(tmp_path: Path) -> None:
    async with FakeAnthropic() as model:
        model.responder = lambda body: text(ANSWER, tokens_per_second=6)
        widget_port = free_port()
        proxy = TcpProxy(widget_port)
        await proxy.start()
        loop = asyncio.get_running_loop()

        async def act(what: str) -> None:
            if what in ("cut", "down"):
                await proxy.stop()  # every connection through it is aborted
            if what in ("cut", "up"):
                await proxy.start()

        def do(what: str) -> None:
            asyncio.run_coroutine_threadsafe(act(what), loop).result(timeout=10)

        try:
            async with (host_site(f"http://127.0.0.1:{proxy.port}") as shop,
                        web_runtime(tmp_path, model.url, origins=[shop], port=widget_port)):
                seen = await asyncio.to_thread(watch, f"{shop}/", do)
        finally:
            await proxy.stop()  # safe when already stopped

    assert ANSWER.startswith(str(seen["partial"])) and seen["partial"] != ANSWER
    assert seen["most"] == 1  # never two bubbles for the reply
    assert seen["final"] == [("visitor", "where is my parcel?"), ("agent", ANSWER),
                             ("visitor", "are you there?"), ("agent", ANSWER)]
    assert len(model.requests) == 2
