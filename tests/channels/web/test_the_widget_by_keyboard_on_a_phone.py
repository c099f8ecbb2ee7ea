"""The widget with the keyboard alone, dark, on a phone-sized screen (headless Chromium, 390
pixels wide): Tab reaches the chat button, Enter opens the panel with the cursor in the message
box, Enter sends, Escape closes it and gives the focus back to the button; the open panel takes
the whole width, in the dark colours the page asked for."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.channels.web.browser import Browser, host_site, needs_chromium
from tests.channels.web.rig import web_runtime
from tests.fakes.anthropic import FakeAnthropic, text
from tests.ports import free_port

pytestmark = needs_chromium
FOCUSED = ("const r = document.querySelector('[data-threadline-widget]').shadowRoot;"
           "const f = r.activeElement; return f ? f.tagName + '.' + f.className : null;")
PANEL = ("const r = document.querySelector('[data-threadline-widget]').shadowRoot;"
         "const p = r.querySelector('.panel'); const box = p.getBoundingClientRect();"
         "return [p.hidden, box.width, window.innerWidth, getComputedStyle(p).backgroundColor];")


def by_keyboard(page: str) -> dict[str, object]:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    browser = Browser(phone=True)
    seen: dict[str, object] = {}
    try:
        browser.open(page)
        keys = ActionChains(browser.driver)
        seen["closed"] = browser.driver.execute_script(PANEL)[0]
        keys.send_keys(Keys.TAB).perform()
        seen["tabbed_to"] = browser.driver.execute_script(FOCUSED)
        keys.send_keys(Keys.ENTER).perform()
        seen["typing_in"] = browser.driver.execute_script(FOCUSED)
        seen["open"] = browser.driver.execute_script(PANEL)
        keys.send_keys("hello from the keyboard").send_keys(Keys.ENTER).perform()
        browser.until(lambda: [m[2] for m in browser.messages()] == [
            "hello from the keyboard", "Hi!"])
        keys.send_keys(Keys.ESCAPE).perform()
        seen["after_escape"] = browser.driver.execute_script(PANEL)[0]
        seen["focus_back_on"] = browser.driver.execute_script(FOCUSED)
    finally:
        browser.quit()
    return seen


async def test_the_widget_works_by_keyboard_dark_on_a_phone(tmp_path: Path) -> None:
    async with FakeAnthropic() as model:
        model.responder = lambda body: text("Hi!")
        widget_port = free_port()
        async with (host_site(f"http://127.0.0.1:{widget_port}",
                              attributes='data-theme="dark"') as shop,
                    web_runtime(tmp_path, model.url, origins=[shop], port=widget_port)):
            seen = await asyncio.to_thread(by_keyboard, f"{shop}/")

    assert seen["closed"] is True
    assert seen["tabbed_to"] == "BUTTON.launcher"
    assert seen["typing_in"] == "TEXTAREA."
    hidden, width, viewport, background = seen["open"]  # type: ignore[misc]
    assert hidden is False and width == viewport == 390
    assert background == "rgb(22, 25, 29)"  # the dark theme's panel
    assert seen["after_escape"] is True and seen["focus_back_on"] == "BUTTON.launcher"
