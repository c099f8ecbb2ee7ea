"""Feedback in the web widget (headless Chromium): with `features: feedback: {buttons: true}`
👍 and 👎 show under the agent's reply; a visitor presses 👎 by keyboard (Tab to it, Enter),
and the vote is kept once for that visitor, as the backend's feedback book reads; pressing 👍
changes it, and the pressed button shows (a reloaded page too). The press is not shown as a
message of its own.
Another visitor who sends the same press for that reply, from their own conversation,
changes nothing. Replies written live and replies posted whole (`streaming: false`) alike."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.channels.web.browser import Browser, host_site, needs_chromium
from tests.channels.web.rig import Visitor, next_event, web_runtime
from tests.fakes.anthropic import FakeAnthropic, text
from tests.ports import free_port
from threadline.feedback.votes import FeedbackBook, Vote

pytestmark = needs_chromium
FEATURE = "features:\n  feedback:\n    buttons: true\n"
PRESSED = ("const r = document.querySelector('[data-threadline-widget]').shadowRoot;"
           "return Array.from(r.querySelectorAll('ol > li .rate button')).map("
           "b => [b.dataset.vote, b.textContent, b.getAttribute('aria-pressed')]);")
FOCUSED = ("const r = document.querySelector('[data-threadline-widget]').shadowRoot;"
           "const f = r.activeElement; return f ? f.dataset.vote || f.className : null;")


def chat_until_buttons(browser: Browser, page: str) -> None:
    browser.open(page)
    browser.type_and_send("where is my parcel?")
    browser.until(lambda: len(browser.driver.execute_script(PRESSED)) == 2)


def press_down_by_keyboard(browser: Browser) -> str | None:
    """From the message box, Shift+Tab back to 👎 (the reply's last button), then Enter."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    browser.shadow("textarea").click()
    for _ in range(6):
        if browser.driver.execute_script(FOCUSED) == "down":
            break
        ActionChains(browser.driver).key_down(Keys.SHIFT).send_keys(Keys.TAB).key_up(
            Keys.SHIFT).perform()
    focused = browser.driver.execute_script(FOCUSED)
    ActionChains(browser.driver).send_keys(Keys.ENTER).perform()
    return str(focused)


async def votes_until(book: FeedbackBook, conversation_id: str | None, wanted: str
                      ) -> list[Vote]:
    """The votes on the conversation's replies once one says `wanted` (20 s at most)."""
    async with asyncio.timeout(20):
        while True:
            votes = [v for v in await book.recent(limit=100)
                     if conversation_id is None or v.conversation_id == conversation_id]
            if votes and votes[0].vote == wanted:
                return votes
            await asyncio.sleep(0.05)


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "posted-whole"])
async def test_a_visitor_votes_under_a_reply_and_changes_the_vote(tmp_path: Path,
                                                                 streaming: bool) -> None:
    async with FakeAnthropic() as model:
        model.responder = lambda body: text("It left the depot this morning.")
        widget_port = free_port()
        async with (host_site(f"http://127.0.0.1:{widget_port}") as shop,
                    web_runtime(tmp_path, model.url, origins=[shop], port=widget_port,
                                more_yaml=FEATURE,
                                more_channel_yaml=f"    streaming: {str(streaming).lower()}\n"
                                ) as (runtime, base)):
            book = runtime.backend.feedback
            assert book is not None
            browser = await asyncio.to_thread(Browser)
            try:
                await asyncio.to_thread(chat_until_buttons, browser, f"{shop}/")
                focused = await asyncio.to_thread(press_down_by_keyboard, browser)
                down = await votes_until(book, None, "down")
                pressed_down = await asyncio.to_thread(browser.driver.execute_script, PRESSED)
                await asyncio.to_thread(
                    lambda: browser.shadow(".rate button[data-vote=up]").click())
                up = await votes_until(book, down[0].conversation_id, "up")
                pressed_up = await asyncio.to_thread(browser.driver.execute_script, PRESSED)
                shown = await asyncio.to_thread(browser.messages)
                await asyncio.to_thread(browser.reload)
                after_reload = await asyncio.to_thread(browser.driver.execute_script, PRESSED)
                shown_after_reload = await asyncio.to_thread(browser.messages)
            finally:
                await asyncio.to_thread(browser.quit)

            conversation = down[0].conversation_id
            [reply] = [t for t in await runtime.store.get(conversation)
                       if t.participant.kind == "agent" and t.id == down[0].reply_id]
            mallory = Visitor(base, origin=shop)
            try:
                assert (await mallory.open())[0] == 200
                async with mallory.events() as events:
                    await next_event(events, "ready")
                    status, _ = await mallory.send(f"/feedback down {reply.metadata.message_id}")
                    assert status == 202
                    while "no agent reply with that id" not in (
                            await next_event(events, "turn")).data["text"]:
                        pass
            finally:
                await mallory.close()
            after_forgery = await book.on_reply(reply.id)

    assert focused == "down"
    [kept_down] = down
    assert kept_down.vote == "down" and kept_down.agent == "support"
    assert kept_down.voter.startswith("web:")
    assert [row[2] for row in pressed_down] == ["false", "true"]
    [kept_up] = up
    assert (kept_up.voter, kept_up.reply_id, kept_up.vote) == (
        kept_down.voter, kept_down.reply_id, "up")
    assert [row[:2] for row in pressed_up] == [["up", "👍"], ["down", "👎"]]
    assert [row[2] for row in pressed_up] == ["true", "false"]
    assert after_reload == pressed_up  # read back from the stored presses
    for messages in (shown, shown_after_reload):  # the press shows as the button's state
        assert not any(m[2].startswith("/feedback") for m in messages)
    assert [m[2] for m in shown][:2] == ["where is my parcel?",
                                         "It left the depot this morning."]
    assert after_forgery == [kept_up]
