"""The widget in a real browser (headless Chromium), on a shop's page holding only its `<script>`
tag: a visitor asks and watches the reply being written word by word, reloads the page and sees
the conversation; a message with `<img onerror>` and `<script>` shows as text and runs nothing,
and the reply's Markdown is rendered without its HTML; a PNG picked with the file button reaches
the model as an image; "Talk to a person" hands the conversation over; another visitor, in a
browser of their own, sees none of it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.channels.web.browser import Browser, host_site, needs_chromium
from tests.channels.web.rig import web_runtime
from tests.fakes.anthropic import FakeAnthropic, Reply, text
from tests.fakes.files import png
from tests.ports import free_port

pytestmark = needs_chromium
ANSWER = "Your parcel 4417-B left the depot this morning and arrives tomorrow before noon."
MARKDOWN = "That is **only** text here, see [the help](https://example.com/help) <b>plain</b>"
SHOWN = "That is only text here, see the help <b>plain</b>"
HOSTILE = "<img src=x onerror=\"document.title='pwned'\"> <script>document.title='pwned'</script>"


def answer(body: dict[str, object]) -> Reply:
    prompt = json.dumps(body["messages"])
    if '"type": "image"' in prompt:
        return text("A grey rectangle.")
    if "pwned" in prompt:
        return text(MARKDOWN)
    return text(ANSWER, tokens_per_second=12)


def visit(page: str, picture: Path) -> dict[str, object]:
    """Everything a visitor does and sees, in one browser; then a second visitor."""
    seen: dict[str, object] = {}
    browser = Browser()
    try:
        browser.open(page)
        seen["before"] = browser.messages()
        browser.type_and_send("where is my parcel?")
        drafts: list[str] = []

        def reply_finished() -> bool:
            agent = [m for m in browser.messages() if "agent" in m[0]]
            if agent and (not drafts or drafts[-1] != agent[0][2]):
                drafts.append(agent[0][2])
            return bool(agent) and "streaming" not in agent[0][0] and agent[0][2] == ANSWER

        browser.until(reply_finished)
        seen["drafts"] = drafts
        browser.reload()
        seen["after_reload"] = [(m[0], m[2]) for m in browser.messages()]

        browser.type_and_send(HOSTILE)
        browser.until(lambda: len(browser.messages()) == 4
                      and "pending" not in browser.messages()[2][0]
                      and browser.messages()[3][2] == SHOWN)
        seen["hostile"] = browser.messages()[2][2]
        seen["images_in_log"] = browser.driver.execute_script(
            "return document.querySelector('[data-threadline-widget]').shadowRoot"
            ".querySelectorAll('ol img, ol script').length;")
        seen["title"] = browser.driver.title
        seen["reply_markup"] = browser.driver.execute_script(
            "const li = document.querySelector('[data-threadline-widget]').shadowRoot"
            ".querySelectorAll('ol > li')[3];"
            "return [li.querySelectorAll('strong').length, li.querySelectorAll('b').length,"
            " Array.from(li.querySelectorAll('a')).map(a => [a.href, a.rel, a.textContent])];")

        browser.attach(picture)
        browser.type_and_send("what is in this picture?")
        browser.until(lambda: len(browser.messages()) == 6
                      and browser.messages()[5][2] == "A grey rectangle.")
        seen["picture_turn"] = browser.messages()[4]

        browser.shadow("button.human").click()  # "Talk to a person": the handoff's /human
        browser.until(lambda: len(browser.messages()) == 8
                      and "stays quiet" in browser.messages()[7][2])
        seen["handoff"] = browser.messages()[7][2]
    finally:
        browser.quit()
    stranger = Browser()
    try:
        stranger.open(page)
        seen["stranger"] = stranger.messages()
    finally:
        stranger.quit()
    return seen


async def test_a_visitor_chats_in_the_widget_and_nothing_runs(tmp_path: Path) -> None:
    picture = tmp_path / "parcel.png"
    picture.write_bytes(png())
    async with FakeAnthropic() as model:
        model.responder = answer
        widget_port = free_port()
        async with (host_site(f"http://127.0.0.1:{widget_port}") as shop,
                    web_runtime(tmp_path, model.url, origins=[shop], port=widget_port)):
            seen = await asyncio.to_thread(visit, f"{shop}/", picture)

    assert seen["before"] == []
    drafts = [str(d) for d in seen["drafts"]]  # type: ignore[attr-defined]
    assert len(drafts) >= 3 and drafts[-1] == ANSWER  # written word by word, then whole
    assert all(ANSWER.startswith(d) for d in drafts)
    assert seen["after_reload"] == [("visitor", "where is my parcel?"), ("agent", ANSWER)]
    assert seen["hostile"] == HOSTILE  # shown as typed
    assert seen["images_in_log"] == 0 and seen["title"] == "Shop"
    _, _, words, pictures = seen["picture_turn"]  # type: ignore[misc]
    assert words == "what is in this picture?" and pictures == 1
    images = [block for request in model.requests
              for message in request.body["messages"] if isinstance(message["content"], list)
              for block in message["content"] if block.get("type") == "image"]
    assert images and images[-1]["source"]["media_type"] == "image/png"
    assert seen["reply_markup"] == [1, 0, [["https://example.com/help",
                                             "noopener noreferrer nofollow", "the help"]]]
    assert "the bot stays quiet in this conversation until someone sends /bot on" in str(
        seen["handoff"])
    assert seen["stranger"] == []
