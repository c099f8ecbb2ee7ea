"""A picture a visitor sends is kept through the file intake, named in the stored turn with a link
the widget shows it by, and served only to that visitor: another visitor, or nobody, is told
there is no such file; it is served with a sandboxing CSP so nothing in it can run as our
page. An HTML page sent as a file (read as text, like on every platform) is only ever a
download, never a page of ours."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from tests.channels.web.rig import SHOP, Visitor, next_event, web_runtime
from tests.fakes.anthropic import FakeAnthropic, text
from tests.fakes.files import png

PAGE = b"<!doctype html><html><body><script>alert(1)</script></body></html>"


async def test_a_picture_is_served_to_its_visitor_alone(tmp_path: Path) -> None:
    picture = png()
    async with FakeAnthropic() as model:
        model.responder = lambda body: text("A grey rectangle.")
        async with web_runtime(tmp_path, model.url) as (_, base):
            alice, bob = Visitor(base), Visitor(base)
            try:
                await alice.open()
                await bob.open()
                async with alice.events() as events:
                    await next_event(events, "ready")
                    status, _ = await alice.send("what is this?", files=[
                        ("parcel.png", picture), ("page.html", PAGE)])
                    assert status == 202
                    turn = await next_event(events, "turn")
                    answer = await next_event(events, "turn")
                    assert answer.data["text"] == "A grey rectangle."
                shown, page = turn.data["files"]
                assert shown["name"] == "parcel.png" and shown["kind"] == "image"
                assert page["name"] == "page.html" and page["url"]

                async with alice.session.get(base + shown["url"]) as response:
                    assert response.status == 200
                    assert response.content_type == "image/png"
                    assert await response.read() == picture
                    assert "sandbox" in response.headers["Content-Security-Policy"]
                    assert response.headers["Content-Disposition"].startswith("inline;")
                async with alice.session.get(base + page["url"]) as response:
                    assert response.status == 200
                    assert response.content_type == "application/octet-stream"
                    assert response.headers["Content-Disposition"] == (
                        "attachment; filename*=UTF-8''page.html")
                    assert await response.read() == PAGE
                for stranger in (bob.session, aiohttp.ClientSession()):
                    async with stranger.get(base + shown["url"],
                                            headers={"Origin": SHOP}) as response:
                        assert response.status == 404
                        assert "no such file" in (await response.json())["error"]
                    if stranger is not bob.session:
                        await stranger.close()
                images = [block for block in model.requests[-1].body["messages"][-1]["content"]
                          if block.get("type") == "image"]
                assert len(images) == 1
            finally:
                await alice.close()
                await bob.close()
