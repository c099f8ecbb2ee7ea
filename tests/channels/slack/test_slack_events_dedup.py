"""Slack's retries and its double notification of mentions give one turn and one reply."""

from __future__ import annotations

from tests.channels.recording import RecordingEvents
from tests.fakes.slack import slack_rig
from threadline.channels.base import Channel
from threadline.history.model import StoredMessage
from threadline.history.store import ConversationStore


class CountingEvents(RecordingEvents):
    """Counts `on_message` calls, so the store's own dedup cannot hide a second delivery."""

    def __init__(self, store: ConversationStore) -> None:
        super().__init__(store)
        self.calls: list[str] = []

    async def on_message(self, message: StoredMessage, channel: Channel) -> None:
        self.calls.append(message.id)
        await super().on_message(message, channel)


async def test_a_retried_delivery_with_the_same_event_id_is_one_turn_and_one_reply(
    sqlite_url: str,
) -> None:
    async with slack_rig(sqlite_url, events_factory=CountingEvents) as (fake, channel, events):
        event = fake.message_event("<@U0BOT> deploy please")
        first = await fake.deliver_event(channel.events_url, event, event_id="Ev0RETRY")
        retry = await fake.deliver_event(channel.events_url, event, event_id="Ev0RETRY",
                                         retry_num=1)
        await fake.deliver_event(channel.events_url, fake.message_event("barrier"))

        answered = await events.next_inbound()
        barrier = await events.next_inbound()
        await fake.wait_for_calls("chat.postMessage", 2)

        assert (first.status, retry.status) == (200, 200)
        assert answered.content == "@threadline deploy please"
        assert barrier.content == "barrier"
        assert events.inbound.empty()
        assert [c.params["text"] for c in fake.calls_to("chat.postMessage")] == [
            "echo: @threadline deploy please", "echo: barrier"]
        assert await events.store.count("slack:T0FAKE:C0GENERAL") == 2
        assert isinstance(events, CountingEvents)
        # The channel acks a retry of a post it recorded without taking it in again (its
        # files are not downloaded twice); across a restart the inbox drops it by turn id.
        assert events.calls == [answered.id, barrier.id]


async def test_the_same_post_under_a_new_event_id_is_still_stored_once(sqlite_url: str) -> None:
    async with slack_rig(sqlite_url) as (fake, channel, events):
        event = fake.message_event("twice over")
        await fake.deliver_event(channel.events_url, event, event_id="Ev0FIRST")
        await events.next_inbound()
        await fake.deliver_event(channel.events_url, event, event_id="Ev0SECOND")
        await fake.deliver_event(channel.events_url, fake.message_event("barrier"))
        assert (await events.next_inbound()).content == "barrier"

        await channel.stop()
        assert len(fake.calls_to("chat.postMessage")) == 2
        assert await events.store.count("slack:T0FAKE:C0GENERAL") == 2


async def test_app_mention_is_acknowledged_but_not_answered_a_second_time(
    sqlite_url: str,
) -> None:
    async with slack_rig(sqlite_url, events_factory=CountingEvents) as (fake, channel, events):
        message = fake.message_event("<@U0BOT> hi")
        mention = {**message, "type": "app_mention"}
        mention.pop("channel_type")
        delivered = [await fake.deliver_event(channel.events_url, message),
                     await fake.deliver_event(channel.events_url, mention)]
        await fake.deliver_event(channel.events_url, fake.message_event("barrier"))

        assert (await events.next_inbound()).content == "@threadline hi"
        assert (await events.next_inbound()).content == "barrier"
        assert [d.status for d in delivered] == [200, 200]
        await fake.wait_for_calls("chat.postMessage", 2)
        await channel.stop()
        assert len(fake.calls_to("chat.postMessage")) == 2
        assert isinstance(events, CountingEvents)
        assert len(events.calls) == 2
