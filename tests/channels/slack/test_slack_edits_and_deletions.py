"""Edits and deletions in Slack are reflected in the store; link unfurls are not edits."""

from __future__ import annotations

import asyncio

from tests.channels.recording import RecordingEvents
from tests.fakes.slack import slack_rig
from threadline.history.store import ConversationStore


class WatchingEvents(RecordingEvents):
    """Signals each edit or deletion once the store has applied it."""

    def __init__(self, store: ConversationStore) -> None:
        super().__init__(store)
        self.changes: asyncio.Queue[str] = asyncio.Queue()

    async def on_edit(self, conversation_id: str, message_id: str, content: str) -> None:
        await super().on_edit(conversation_id, message_id, content)
        await self.changes.put("edit")

    async def on_delete(self, conversation_id: str, message_id: str) -> None:
        await super().on_delete(conversation_id, message_id)
        await self.changes.put("delete")

    async def next_change(self) -> str:
        async with asyncio.timeout(5.0):
            return await self.changes.get()


async def test_a_text_edit_replaces_the_stored_turn(sqlite_url: str) -> None:
    async with slack_rig(sqlite_url, events_factory=WatchingEvents) as (fake, channel, events):
        assert isinstance(events, WatchingEvents)
        original = fake.message_event("deploy at 5", thread_ts="1600000000.000001")
        await fake.deliver_event(channel.events_url, original)
        inbound = await events.next_inbound()

        await fake.deliver_event(channel.events_url,
                                 fake.edit_event(original, "deploy at 6, <@U0ALICE>"))
        assert await events.next_change() == "edit"

        [stored] = await events.store.get(inbound.conversation_id)
        assert stored.id == inbound.id
        assert stored.content == "deploy at 6, @Alice"
        assert events.edits == [(inbound.conversation_id, inbound.id, "deploy at 6, @Alice")]


async def test_a_link_unfurl_is_not_an_edit_and_not_a_new_turn(sqlite_url: str) -> None:
    async with slack_rig(sqlite_url, events_factory=WatchingEvents) as (fake, channel, events):
        assert isinstance(events, WatchingEvents)
        original = fake.message_event("see http://127.0.0.1/status")
        await fake.deliver_event(channel.events_url, original)
        await events.next_inbound()
        await fake.deliver_event(channel.events_url, fake.edit_event(original, original["text"]))
        await fake.deliver_event(channel.events_url, fake.message_event("barrier"))
        await events.next_inbound()
        await channel.stop()

        assert events.edits == []
        assert events.changes.empty()
        assert len(fake.calls_to("chat.postMessage")) == 2


async def test_a_deletion_removes_the_stored_turn(sqlite_url: str) -> None:
    async with slack_rig(sqlite_url, events_factory=WatchingEvents) as (fake, channel, events):
        assert isinstance(events, WatchingEvents)
        kept, gone = fake.message_event("keep me"), fake.message_event("oops, a password")
        for event in (kept, gone):
            await fake.deliver_event(channel.events_url, event)
            await events.next_inbound()

        await fake.deliver_event(channel.events_url, fake.delete_event(gone))
        assert await events.next_change() == "delete"

        remaining = await events.store.get("slack:T0FAKE:C0GENERAL")
        assert [m.content for m in remaining] == ["keep me"]
        conversation = "slack:T0FAKE:C0GENERAL"
        assert events.deletes == [(conversation, f"{conversation}:{gone['ts']}")]
