"""A customer's order number, told in one Slack thread, reaches the model in their next post.

Through the real slack-bolt/slack_sdk against the fake Slack, and the real Anthropic SDK against
the fake Anthropic API: Alice says her order number inside a thread; after a restart (a new
store object, team and channel on the same SQLite file) she asks in a new channel post, and
the request the model receives holds the number. Bob asks the same in the same channel: his
request holds no trace of it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fakes.anthropic import FakeAnthropic, Reply, text
from tests.fakes.slack import FakeSlack
from threadline.agents import Agent
from threadline.agents.agent import Memory
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.channels.slack import SlackChannel
from threadline.history.assembler import AssemblerOptions
from threadline.team import Team

ORDER = "88213"


def _answer(body: dict[str, Any]) -> Reply:
    return text("Let me check that for you.")


async def _ask(fake: FakeSlack, model: FakeAnthropic, db: str, events: list[dict[str, Any]],
               replies_before: int) -> list[str]:
    """Run a fresh team on the store for these events; the model request bodies they caused."""
    async with SqlConversationStore(db) as store:
        support = Agent(name="support", conversation_history=store,
                        provider=AnthropicProvider(model.client(), stream=False),
                        memory=Memory(options=AssemblerOptions(person_memory=True)))
        team = Team([support])
        channel = SlackChannel(**fake.channel_settings())
        team.attach(channel)
        await team.start()
        seen = len(model.requests)
        try:
            for number, event in enumerate(events, start=1):
                await fake.deliver_event(channel.events_url, event)
                await fake.wait_for_calls("chat.postMessage", replies_before + number)
        finally:
            await team.stop()
        return [json.dumps(r.body) for r in model.requests[seen:]]


async def test_the_same_person_finds_it_and_another_does_not(tmp_path: Path) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path / 'support.db'}"
    async with FakeSlack() as fake, FakeAnthropic() as model:
        model.responder = _answer
        fake.add_user("U0ALICE", display_name="Alice")
        fake.add_user("U0BOB", display_name="Bob")
        fake.add_channel("C0GENERAL", name="general")

        post = fake.message_event("@support my parcel never arrived")
        told = fake.message_event(f"the order number is {ORDER}, placed on Monday",
                                  thread_ts=post["ts"], parent_user_id="U0ALICE")
        await _ask(fake, model, db, [post, told], replies_before=0)

        alice = fake.message_event("@support what was my order number again?")
        [alice_request] = await _ask(fake, model, db, [alice], replies_before=2)
        assert ORDER in alice_request
        # The request is shown when this fails (it failed once in a loaded full run, the
        # number present without this header: a display name looked up as another?).
        assert "Alice said earlier, in other conversations" in alice_request, alice_request

        bob = fake.message_event("@support what was my order number again?", user="U0BOB")
        [bob_request] = await _ask(fake, model, db, [bob], replies_before=3)
        assert ORDER not in bob_request
        assert "said earlier, in other conversations" not in bob_request
