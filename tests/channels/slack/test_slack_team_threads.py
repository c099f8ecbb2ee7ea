"""Two agents on a Slack channel: a post is answered in a thread, and the thread goes on.

The Slack channel answers a channel post in a new thread under it. The thread is its own
conversation, so the post is also recorded as the thread's first turn: the reply, and every
follow-up in that thread, see what started it, and a follow-up without a mention still
reaches the agent that answered there.
"""

from __future__ import annotations

from pathlib import Path

from tests.fakes.slack import FakeSlack
from threadline.agents import Agent, OfflineModel
from threadline.backends.sql import SqlConversationStore
from threadline.channels.slack import SlackChannel
from threadline.team import Team


async def test_a_thread_opened_by_a_reply_keeps_its_context(tmp_path: Path) -> None:
    async with FakeSlack() as fake, SqlConversationStore(
            f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        fake.add_user("U0ALICE", display_name="Alice")
        fake.add_channel("C0GENERAL", name="general")
        support = Agent(name="support", conversation_history=store, provider=OfflineModel())
        billing = Agent(name="billing", conversation_history=store, provider=OfflineModel())
        team = Team([support, billing])
        channel = SlackChannel(**fake.channel_settings())
        team.attach(channel)
        await team.start()
        stopped = False
        try:
            post = fake.message_event("@support my order 4412 never arrived")
            await fake.deliver_event(channel.events_url, post)
            [first] = await fake.wait_for_calls("chat.postMessage", 1)
            assert first.params["thread_ts"] == post["ts"]

            follow_up = fake.message_event("any news on it?", thread_ts=post["ts"],
                                           parent_user_id="U0ALICE")
            await fake.deliver_event(channel.events_url, follow_up)
            [_, second] = await fake.wait_for_calls("chat.postMessage", 2)
            assert second.params["thread_ts"] == post["ts"]
            await team.stop()  # waits for the turns in flight to be recorded
            stopped = True

            thread = f"slack:T0FAKE:C0GENERAL:{post['ts']}"
            stored = await store.get(thread)
            assert [(m.participant.id, m.content[:24]) for m in stored] == [
                ("U0ALICE", "@support my order 4412 n"),
                ("support", first.params["text"][:24]),
                ("U0ALICE", "any news on it?"),
                ("support", second.params["text"][:24]),
            ]
            assert not any(m.participant.id == "billing" for m in stored)
            channel_history = await store.get("slack:T0FAKE:C0GENERAL")
            assert [m.content for m in channel_history] == ["@support my order 4412 never arrived"]
            assert stored[1].metadata.message_id is not None  # the reply's platform id
        finally:
            if not stopped:
                await team.stop()
