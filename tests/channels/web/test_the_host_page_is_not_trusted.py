"""What the widget's server holds against pages and people it does not trust: another site's
page is refused (and CORS names no one for it), the session cookie cannot be read by a script
or sent by another site, a forged cookie is nobody, every API answer forbids running anything,
a message too long is refused in words, a visitor sending too fast is slowed, and a second
visitor sees none of the first one's conversation."""

from __future__ import annotations

import uuid
from pathlib import Path

import aiohttp

from tests.channels.web.rig import SHOP, Visitor, next_event, web_runtime
from tests.fakes.anthropic import FakeAnthropic, text
from threadline.channels.web.visitors import SESSION_COOKIE

EVIL = "http://127.0.0.1:2"


async def test_other_sites_forged_cookies_and_floods_are_refused(tmp_path: Path) -> None:
    async with FakeAnthropic() as model:
        model.responder = lambda body: text("Noted.")
        async with web_runtime(tmp_path, model.url, more_channel_yaml=(
                "    messages_per_minute: 3\n    max_text_chars: 50\n")) as (_, base):
            alice, mallory = Visitor(base), Visitor(base, origin=EVIL)
            try:
                async with alice.session.post(f"{base}/api/session", json={},
                                              headers={"Origin": SHOP}) as response:
                    assert response.status == 200
                    cookie = response.headers["Set-Cookie"]
                    assert response.headers["Access-Control-Allow-Origin"] == SHOP
                    assert response.headers["Access-Control-Allow-Credentials"] == "true"
                    assert response.headers["Content-Security-Policy"].startswith(
                        "default-src 'none'")
                    assert response.headers["X-Content-Type-Options"] == "nosniff"
                    alice.visitor_id = (await response.json())["visitor"]
                assert "HttpOnly" in cookie and "SameSite=Strict" in cookie

                # Another site's page: refused in words, and CORS lets it read nothing.
                async with mallory.session.post(f"{base}/api/session", json={},
                                                headers={"Origin": EVIL}) as response:
                    assert response.status == 403
                    assert "Access-Control-Allow-Origin" not in response.headers
                    assert f"pages of {EVIL} may not use this chat" in (
                        await response.json())["error"]

                # A forged session cookie is nobody: no message is taken under it.
                async with aiohttp.ClientSession() as forger:
                    forged = {SESSION_COOKIE: cookie.split("=", 1)[1].split(";")[0][:-4] + "AAAA"}
                    async with forger.post(f"{base}/api/messages", data={
                            "id": uuid.uuid4().hex, "text": "hi"}, cookies=forged,
                            headers={"Origin": SHOP}) as response:
                        assert response.status == 401
                        assert "no chat session" in (await response.json())["error"]

                status, answer = await alice.send("x" * 51)
                assert status == 400 and "longer than 50 characters" in answer["error"]
                status, answer = await alice.send("<script>alert(1)</script>",
                                                  message_id="not ok!")
                assert status == 400 and "no usable id" in answer["error"]

                statuses = [(await alice.send(f"message {n}"))[0] for n in range(4)]
                assert statuses == [202, 202, 202, 429]
                status, answer = await alice.send("one more")
                assert status == 429 and "wait" in answer["error"]

                # A second visitor's stream: nothing of Alice's conversation.
                bob = Visitor(base)
                try:
                    await bob.open()
                    assert bob.visitor_id != alice.visitor_id
                    async with bob.events() as events:
                        first = await next_event(events, "")
                        assert first.kind == "ready"
                        await bob.send("hello, I am Bob")
                        turn = await next_event(events, "turn")
                        assert turn.data["text"] == "hello, I am Bob"
                        reply = await next_event(events, "turn")
                        assert reply.data["from"] == "agent"
                finally:
                    await bob.close()
                [bob_prompt] = [str(r.body) for r in model.requests
                                if "hello, I am Bob" in str(r.body)]
                assert "message 0" not in bob_prompt
            finally:
                await alice.close()
                await mallory.close()
