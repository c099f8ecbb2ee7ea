"""Slack is told "received" only once the turn is recorded; otherwise it delivers it again."""

from __future__ import annotations

import asyncio

from tests.channels.recording import RecordingEvents
from tests.fakes.slack import slack_rig
from threadline.channels.base import Channel
from threadline.history.model import StoredMessage
from threadline.history.store import ConversationStore


class Gated(RecordingEvents):
    """Records a turn only once `release` is set, noting when `on_message` returned."""

    def __init__(self, store: ConversationStore) -> None:
        super().__init__(store)
        self.entered, self.release = asyncio.Event(), asyncio.Event()
        self.steps: list[str] = []

    async def on_message(self, message: StoredMessage, channel: Channel) -> None:
        self.entered.set()
        await self.release.wait()
        await super().on_message(message, channel)
        self.steps.append("recorded")


async def test_the_200_is_sent_only_after_the_turn_is_recorded(sqlite_url: str) -> None:
    async with slack_rig(sqlite_url, events_factory=Gated) as (fake, channel, events):
        assert isinstance(events, Gated)
        delivery = asyncio.ensure_future(
            fake.deliver_event(channel.events_url, fake.message_event("hold on")))
        delivery.add_done_callback(lambda _: events.steps.append("acknowledged"))
        await events.entered.wait()
        # While recording is blocked the request stays open (an early ack would be back by now).
        done, _ = await asyncio.wait({delivery}, timeout=0.5)
        events.release.set()
        answered = await delivery
        assert not done
        await events.drain()

        assert answered.status == 200
        assert events.steps == ["recorded", "acknowledged"]
        assert [p.params["text"] for p in fake.calls_to("chat.postMessage")] == [
            "echo: hold on"]


async def test_a_turn_that_was_not_recorded_gets_503_and_slacks_retry_is_answered_once(
    sqlite_url: str,
) -> None:
    async with slack_rig(sqlite_url) as (fake, channel, events):
        event = fake.message_event("<@U0BOT> are you there?")

        events.refuse = lambda message: True  # the store is down
        first = await fake.deliver_event(channel.events_url, event, event_id="Ev0DOWN")
        events.refuse = lambda message: False  # and back
        retry = await fake.deliver_event(channel.events_url, event, event_id="Ev0DOWN",
                                         retry_num=1)
        stored = await events.next_inbound()
        await events.drain()

        assert (first.status, retry.status) == (503, 200)
        assert await events.store.count(stored.conversation_id) == 1
        assert [p.params["text"] for p in fake.calls_to("chat.postMessage")] == [
            "echo: @threadline are you there?"]


async def test_socket_mode_does_not_ack_a_turn_that_was_not_recorded(sqlite_url: str) -> None:
    async with slack_rig(sqlite_url, mode="socket") as (fake, _, events):
        refused = asyncio.Event()

        def store_down(message: StoredMessage) -> bool:
            refused.set()
            return True

        events.refuse = store_down
        unacked = await fake.push_socket_event(fake.message_event("lost?"), event_id="Ev0S1")
        async with asyncio.timeout(5.0):
            await refused.wait()
        events.refuse = lambda message: False
        await fake.send_socket_event(fake.message_event("lost?"), event_id="Ev0S1",
                                     retry_attempt=1)
        stored = await events.next_inbound()
        await events.drain()

        assert not unacked.done()
        assert len(fake.socket_acks) == 1
        assert stored.content == "lost?"
        assert len(fake.calls_to("chat.postMessage")) == 1


async def test_stop_lets_the_turn_being_recorded_be_acked_and_refuses_later_ones(
    sqlite_url: str,
) -> None:
    async with slack_rig(sqlite_url, events_factory=Gated) as (fake, channel, events):
        assert isinstance(events, Gated)
        events.reply = lambda message: None
        first = asyncio.ensure_future(
            fake.deliver_event(channel.events_url, fake.message_event("in flight")))
        await events.entered.wait()
        stopping = asyncio.ensure_future(channel.stop())
        await asyncio.sleep(0)  # stop() has begun: new events are no longer taken
        late = await fake.deliver_event(channel.events_url, fake.message_event("too late"))
        events.release.set()
        await stopping

        assert (await first).status == 200
        assert late.status == 503  # Slack delivers it again, to this process or another
        assert [m.content for m in await events.store.get("slack:T0FAKE:C0GENERAL")] == [
            "in flight"]


async def test_slow_name_lookups_do_not_hold_the_acknowledgement(sqlite_url: str) -> None:
    async with slack_rig(sqlite_url) as (fake, channel, events):
        release = fake.hold("users.info")
        try:
            delivery = await fake.deliver_event(
                channel.events_url, fake.message_event("<@U0BOT> quick", user="U0NEW"))
            message = await events.next_inbound()
        finally:
            release.set()

        assert delivery.status == 200
        assert message.participant.id == "U0NEW"
        assert message.participant.display_name == "U0NEW"
        assert message.content == "@U0BOT quick"
