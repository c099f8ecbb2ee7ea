"""A site vouches for its logged-in customer with a signed identity; anything else is refused in
words: a token signed with another secret, an expired one, one made for another site, an
unsigned one (`alg: none`), one whose id is unusable. A customer the operator linked to their
Telegram account is one person: what they told the bot on Telegram is in the memory the web
reply is written with, and a customer nobody linked gets none of it."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

from tests.channels.web.rig import IDENTITY_SECRET, SHOP, Visitor, next_event, web_runtime
from tests.fakes.anthropic import FakeAnthropic, text
from tests.fakes.telegram import ALICE, FakeTelegram, private_chat
from threadline.channels.web.visitors import sign_identity

FACT = "5531"


def unsigned(claims: dict[str, object]) -> str:
    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."


async def test_forged_expired_and_other_site_identities_are_refused(tmp_path: Path) -> None:
    async with FakeAnthropic() as model, web_runtime(tmp_path, model.url) as (_, base):
        visitor = Visitor(base)
        try:
            refusals = {
                "forged": sign_identity(subject="cust-42", origin=SHOP,
                                        secret="someone-elses-identity-secret-0123456789"),
                "expired": sign_identity(subject="cust-42", origin=SHOP,
                                         secret=IDENTITY_SECRET, now=time.time() - 3600),
                "other site": sign_identity(subject="cust-42", origin="https://other.example",
                                            secret=IDENTITY_SECRET),
                "unsigned": unsigned({"sub": "cust-42", "aud": SHOP,
                                      "exp": int(time.time()) + 600}),
                "bad id": sign_identity(subject="slack:T1:U1", origin=SHOP,
                                        secret=IDENTITY_SECRET),
                "garbage": "not-a-token",
            }
            said = {}
            for name, token in refusals.items():
                status, answer = await visitor.open(token)
                assert status == 401, (name, answer)
                said[name] = answer["error"]
            assert "signature does not match" in said["forged"]
            assert "has expired" in said["expired"]
            assert "made for another site" in said["other site"]
            assert "not signed with HS256" in said["unsigned"]
            assert "sub 'slack:T1:U1' is not usable" in said["bad id"]
            assert "not a JWT" in said["garbage"]
            assert all("the chat was not opened as this customer" in s
                       for s in said.values())
            assert visitor.visitor_id == ""  # no session was given

            status, answer = await visitor.open(sign_identity(
                subject="cust-42", origin=SHOP, secret=IDENTITY_SECRET, name="Alice"))
            assert status == 200 and answer == {"visitor": "cust-42", "name": "Alice",
                                                "signed": True, "title": "Chat with us"}
        finally:
            await visitor.close()


async def test_a_customer_linked_to_telegram_shares_that_persons_memory(tmp_path: Path) -> None:
    async with FakeAnthropic() as model, FakeTelegram() as telegram:
        model.responder = lambda body: text("Noted.")
        async with web_runtime(
                tmp_path, model.url, agent_channels="web, telegram",
                more_channel_yaml=(f"  telegram:\n    type: telegram\n"
                                   f"    token: ${{TELEGRAM_BOT_TOKEN}}\n"
                                   f"    base_url: {telegram.api_url}\n"
                                   f"    base_file_url: {telegram.file_url}\n"),
                more_yaml="people:\n  memory: true\n",
                more_env=f"TELEGRAM_BOT_TOKEN={telegram.token}\n") as (runtime, base):
            await telegram.deliver(telegram.message(
                private_chat(ALICE), ALICE, f"for the record, my locker code is {FACT}"))
            await telegram.wait_for_calls("sendMessage", 1)
            people = runtime.backend.people
            assert people is not None
            await people.link(["telegram:1001", "web:cust-42"], linked_by="operator")

            async def ask_as(customer: str) -> str:
                visitor = Visitor(base)
                try:
                    status, _ = await visitor.open(sign_identity(
                        subject=customer, origin=SHOP, secret=IDENTITY_SECRET))
                    assert status == 200
                    async with visitor.events() as events:
                        await next_event(events, "ready")
                        await visitor.send("what is my locker code?")
                        await next_event(events, "turn")
                        answer = await next_event(events, "turn")
                        assert answer.data["from"] == "agent"
                finally:
                    await visitor.close()
                return json.dumps(model.requests[-1].body)  # the request just answered

            assert FACT not in await ask_as("cust-43")  # a customer nobody linked
            assert FACT in await ask_as("cust-42")
