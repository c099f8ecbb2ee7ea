"""A real browser on a page that embeds the widget: headless Chromium from the system packages,
driven by selenium (as the console's browser test does), and a small site on 127.0.0.1 whose
page holds nothing but the widget's `<script>` tag.

Selenium is synchronous: call these from `asyncio.to_thread` so the server under test, on the
test's event loop, keeps serving.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
from aiohttp import web

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
needs_chromium = pytest.mark.skipif(
    not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
    reason="needs Debian's chromium and chromium-driver (/usr/bin/chromium, /usr/bin/chromedriver)"
           ": apt-get install chromium chromium-driver (.ci/run does it)")
T = TypeVar("T")

# The widget's messages as the page shows them: [class, id, the text of the message's body,
# the pictures it shows].
_MESSAGES = """
const root = document.querySelector('[data-threadline-widget]')?.shadowRoot;
if (!root) { return null; }
return Array.from(root.querySelectorAll('ol[role=log] > li')).map(
    li => [li.className, li.dataset.id, li.querySelector('.body').textContent,
           li.querySelectorAll('.body img').length]);
"""


@asynccontextmanager
async def host_site(widget_base: str, *, attributes: str = 'data-open="true"'
                    ) -> AsyncIterator[str]:
    """A site whose one page embeds the widget from `widget_base` (its tag carrying
    `attributes`); yields its origin."""
    tag = f'<script src="{widget_base}/widget.js" async {attributes}></script>'

    page = ('<!doctype html><meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>Shop</title><h1>Our shop</h1>{tag}")

    async def serve(request: web.Request) -> web.Response:
        return web.Response(text=page, content_type="text/html")

    app = web.Application()
    app.router.add_get("/", serve)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


class Browser:
    """One visitor's Chromium (its own profile: its own cookies)."""

    def __init__(self, *, phone: bool = False) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--disable-gpu", "--window-size=1200,900"):
            options.add_argument(flag)
        if phone:  # a phone's screen, 390 CSS pixels wide, as Chromium's device mode has it
            options.add_experimental_option("mobileEmulation", {"deviceMetrics": {
                "width": 390, "height": 800, "pixelRatio": 3.0}})
        self.driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)),
                                       options=options)

    def quit(self) -> None:
        self.driver.quit()

    def open(self, url: str) -> None:
        self.driver.get(url)
        self.until(lambda: self.driver.execute_script(
            "const r = document.querySelector('[data-threadline-widget]')?.shadowRoot;"
            "return r && r.querySelector('.tl').dataset.ready === 'true';"))

    def reload(self) -> None:
        self.driver.refresh()
        self.until(lambda: self.driver.execute_script(
            "const r = document.querySelector('[data-threadline-widget]')?.shadowRoot;"
            "return r && r.querySelector('.tl').dataset.ready === 'true';"))

    def shadow(self, css: str) -> Any:
        from selenium.webdriver.common.by import By

        host = self.driver.find_element(By.CSS_SELECTOR, "[data-threadline-widget]")
        return host.shadow_root.find_element(By.CSS_SELECTOR, css)

    def type_and_send(self, words: str) -> None:
        """Types into the message box and presses Enter, as a person does."""
        from selenium.webdriver.common.keys import Keys

        box = self.shadow("textarea")
        box.send_keys(words)
        box.send_keys(Keys.ENTER)

    def attach(self, path: Path) -> None:
        chooser = self.shadow("input[type=file]")
        self.driver.execute_script("arguments[0].hidden = false;", chooser)
        chooser.send_keys(str(path))

    def messages(self) -> list[list[str]]:
        return list(self.driver.execute_script(_MESSAGES) or [])

    def until(self, condition: Callable[[], T], *, within: float = 30.0) -> T:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            time.sleep(0.02)
        raise AssertionError(f"the page never showed what was awaited; it shows "
                             f"{self.messages()}")
