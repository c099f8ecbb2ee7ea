"""The reverse link trick: Mallory talks Alice into sending Mallory's own code.

Mallory (Telegram, python-telegram-bot against the fake Bot API) asks for a code and gets Alice
(Slack, slack-bolt against the fake Slack) to send it in her Slack DM. As the code's owner,
Mallory would gladly confirm, but she is not asked: Alice is, in her own DM, told whose account
it is; until she presses Link nothing is linked and Mallory's `/link accept` of the request
does nothing. Alice refuses. Then Alice links her own Telegram account (both press Link, each
in their own DM), and each account can undo it with `/unlink`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.fakes.anthropic import FakeAnthropic, text
from tests.fakes.slack import FakeSlack
from tests.fakes.telegram import ALICE, FakeTelegram, TgUser, private_chat
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.parts import people_for
from threadline.backends.sql import SqlConversationStore
from threadline.channels.slack import SlackChannel
from threadline.channels.telegram import TelegramChannel
from threadline.people.link_codes import link_command
from threadline.team import Team, default_commands

MALLORY = TgUser(1666, "Mallory")
ALICE_ON_SLACK = "slack:T0FAKE:U0ALICE"
CODE = re.compile(r"TL-[A-Z0-9]{4}-[A-Z0-9]{4}")
REQUEST = re.compile(r"/link (?:accept|refuse) ([0-9a-f]+)")


async def test_the_redeemer_must_confirm_and_either_side_can_undo(tmp_path: Any) -> None:
    async with (FakeSlack() as slack, FakeTelegram() as telegram, FakeAnthropic() as model,
                SqlConversationStore(f"sqlite:///{tmp_path / 'people.db'}") as store):
        model.responder = lambda body: text("Noted.")
        slack.add_user("U0ALICE", display_name="Alice")
        agent = Agent(name="support", conversation_history=store,
                      provider=AnthropicProvider(model.client(), stream=False))
        commands = default_commands()
        commands.register(link_command(minutes=10))
        team = Team([agent], commands=commands)
        slack_channel = SlackChannel(**slack.channel_settings())
        team.attach(slack_channel)
        team.attach(TelegramChannel(name="tg", **telegram.channel_settings()))
        await team.start()
        people = people_for(store)
        try:
            async def on_slack(words: str) -> dict[str, Any]:
                posts = len(slack.calls_to("chat.postMessage")) + 1
                await slack.deliver_event(slack_channel.events_url, slack.message_event(
                    words, channel="D0ALICE", channel_type="im"))
                return (await slack.wait_for_calls("chat.postMessage", posts))[-1].params

            async def on_telegram(who: TgUser, words: str) -> str:
                sent = len(telegram.calls_to("sendMessage")) + 1
                await telegram.deliver(telegram.message(private_chat(who), who, words))
                return str((await telegram.wait_for_calls("sendMessage", sent))[-1]
                           .params["text"])

            async def press_on_slack(question: dict[str, Any], label: str) -> str:
                blocks = question["blocks"]
                blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
                await slack.deliver_action(slack_channel.events_url, slack.block_action(
                    blocks, label, user="U0ALICE", channel="D0ALICE"))
                [(_, answer)] = (await slack.wait_for_responses(len(slack.responses) + 1))[-1:]
                return str(answer.get("text"))

            async def press_on_telegram(who: TgUser, label: str) -> str:
                [question] = [m for m in telegram.sent if "reply_markup" in m
                              and m["chat"]["id"] == who.id][-1:]
                sent = len(telegram.calls_to("sendMessage")) + 1
                await telegram.deliver(telegram.press(question, label, user=who))
                return str((await telegram.wait_for_calls("sendMessage", sent))[-1]
                           .params["text"])

            # Mallory's code, sent by Alice: Alice is asked, in her own DM; Mallory is not.
            code = CODE.search(await on_telegram(MALLORY, "/link"))
            assert code is not None
            telegram_before = len(telegram.calls_to("sendMessage"))
            asked = await on_slack(code.group())
            assert "telegram:1666" in str(asked["text"]) and "Refuse" in json.dumps(
                asked["blocks"])
            assert len(telegram.calls_to("sendMessage")) == telegram_before
            assert await people.person_of(ALICE_ON_SLACK) is None
            # The owner's yes is not the redeemer's: Mallory cannot answer Alice's question.
            request = REQUEST.search(json.dumps(asked["blocks"]))
            assert request is not None
            refused = await on_telegram(MALLORY, f"/link accept {request.group(1)}")
            assert "Nothing to confirm" in refused
            assert await people.person_of(ALICE_ON_SLACK) is None
            assert "Refused" in await press_on_slack(asked, "Refuse")
            # Mallory heard only her own "Nothing to confirm"; she is never asked.
            assert len(telegram.calls_to("sendMessage")) == telegram_before + 1
            assert await people.person_of("telegram:1666") is None

            # Alice's own accounts: she says yes on Slack, then on Telegram; then undoes it,
            # once from each side.
            for undo_on in ("telegram", "slack"):
                code = CODE.search(await on_telegram(ALICE, "/link"))
                assert code is not None
                asked = await on_slack(code.group())
                assert "asked the account" in await press_on_slack(asked, "Link")
                assert await people.person_of(ALICE_ON_SLACK) is None
                assert "Linked" in await press_on_telegram(ALICE, "Link")
                linked = await people.person_of("telegram:1001")
                assert linked is not None and ALICE_ON_SLACK in linked.identities
                undone = (await on_telegram(ALICE, "/unlink") if undo_on == "telegram"
                          else str((await on_slack("/unlink"))["text"]))
                assert "Unlinked" in undone, undo_on
                assert await people.person_of(ALICE_ON_SLACK) is None, undo_on
        finally:
            await team.stop()
