"""Status callbacks are kept on the record of the reply they concern (issue 40): sent,
delivered and read arriving out of order leave the furthest along ("read"); a failure is kept
with its error and shown on the console's page for that reply; a status about a message no
record knows changes nothing. On every backend: memory, SQLite, PostgreSQL; and through
`threadline run`, on the records its recorder writes."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from structlog.testing import capture_logs

from tests.channels.recording import RecordingEvents
from tests.channels.whatsapp.conftest import ANA, BO, url_of
from tests.channels.whatsapp.run_rig import log_events, whatsapp_platform
from tests.conftest import drop_pg_schema, fresh_pg_schema, pg_url_or_skip
from tests.fakes.anthropic import FakeAnthropic, text
from tests.fakes.whatsapp import Customer, FakeWhatsApp, Sent
from tests.runtime.platforms import write_config
from tests.runtime.test_run_kill9_answers_everything import start, until
from threadline.backends.parts import records_for
from threadline.backends.sql import SqlConversationStore
from threadline.channels.whatsapp import WhatsAppChannel
from threadline.history import InMemoryConversationStore
from threadline.history.store import ConversationStore
from threadline.inspector.console import console_app, standalone_app
from threadline.inspector.record import ReplyRecord
from threadline.inspector.records import ReplyRecords
from threadline.inspector.redaction import Redactor

RE_ENGAGEMENT = {"code": 131047, "title": "Re-engagement message", "error_data": {
    "details": "Message failed to send because more than 24 hours have passed since the "
               "customer last replied to this number."}}


@pytest.fixture(params=["memory", "sqlite",
                        pytest.param("postgresql", marks=pytest.mark.postgres)])
async def backing(request: pytest.FixtureRequest, tmp_path: Path
                  ) -> AsyncIterator[ConversationStore]:
    if request.param == "memory":
        memory = InMemoryConversationStore()
        yield memory
        await memory.close()
        return
    if request.param == "sqlite":
        async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as opened:
            yield opened
        return
    url = await fresh_pg_schema(pg_url_or_skip())
    try:
        async with SqlConversationStore(url) as opened:
            yield opened
    finally:
        await drop_pg_schema(url)


@pytest.fixture
def records(backing: ConversationStore) -> ReplyRecords:
    kept = records_for(backing)
    assert kept is not None
    return kept


@pytest.fixture
async def wired(fake: FakeWhatsApp, backing: ConversationStore, records: ReplyRecords
                ) -> AsyncIterator[tuple[WhatsAppChannel, RecordingEvents]]:
    events = RecordingEvents(backing)
    channel = WhatsAppChannel(name="wa", **fake.channel_settings(), webhook_port=0,
                              history=backing,
                              delivery_statuses=records)
    await channel.start(events)
    yield channel, events
    await channel.stop()


@dataclass(frozen=True)
class Finished:
    """A finished turn as the recorder hands it over: its record, delivered ids and all."""

    record: ReplyRecord

    def to_record(self) -> ReplyRecord:
        return self.record


async def answered(fake: FakeWhatsApp, channel: WhatsAppChannel, events: RecordingEvents,
                   records: ReplyRecords, *, customer: Customer = ANA) -> tuple[Sent, ReplyRecord]:
    """A customer's message answered through the channel, and the reply's record as the
    recorder keeps it (its `delivered_ids` the ids the channel got back from the API)."""
    await fake.deliver(url_of(channel), fake.text_message(customer, "hi"))
    turn = await events.next_inbound()
    await events.drain()
    reply = fake.sent[-1]
    assert events.sent[-1] == [reply.wamid]
    record = ReplyRecord(
        id=f"r-{reply.wamid}", conversation_id=turn.conversation_id, agent="shop",
        inbound_id=turn.id, outbound_id=f"out-{turn.id}", created_at=datetime.now(UTC),
        addressed_because="direct message", model="m", stop_reason="end_turn", latency_ms=1.0,
        model_calls=1, input_tokens=1, output_tokens=1, cache_read_tokens=0,
        cache_write_tokens=0, prompt_tokens=1, token_budget=100, reply=reply.text,
        detail={"inbound": {"id": turn.id, "participant": {"kind": "user", "id": customer.wa_id,
                                                           "name": customer.name},
                            "content": turn.content, "scope": None, "channel_type": "whatsapp",
                            "channel_name": "wa", "platform_message_id": turn.id,
                            "thread_id": None},
                "addressed_because": "direct message",
                "prompt": {"token_budget": 100, "token_count": 1, "parts": [],
                           "included_ids": [], "dropped_for_budget_ids": [],
                           "filtered_ids": [], "recalled_ids": [], "recall_hit_ids": [],
                           "summary_used": False, "summary_created": False, "notes": []},
                "system_prompt": "", "tools": [], "model_calls": [], "passed_over": [],
                "tool_exchanges": [], "delivered_ids": list(events.sent[-1])})
    assert await records.add([Finished(record)]) == 1
    return reply, record


async def test_statuses_out_of_order_leave_the_furthest_along(
        fake: FakeWhatsApp, wired: tuple[WhatsAppChannel, RecordingEvents],
        records: ReplyRecords) -> None:
    channel, events = wired
    reply, record = await answered(fake, channel, events, records)
    with capture_logs() as logs:
        for status in ("read", "sent", "delivered", "read"):  # as Meta may send them
            assert await fake.deliver(url_of(channel), fake.status(reply, status)) == (200, "ok")
    assert [e["kept"] for e in logs if e["event"] == "whatsapp.status"] == [
        True, False, False, False]
    kept = await records.get(record.id)
    assert kept is not None and kept.delivery_status is not None
    assert set(kept.delivery_status) == {reply.wamid}
    assert kept.delivery_status[reply.wamid]["status"] == "read"
    assert "error_code" not in kept.delivery_status[reply.wamid]
    [listed] = await records.recent(record.conversation_id)  # listings carry it too
    assert listed.delivery_status == kept.delivery_status


async def test_a_failure_is_kept_with_its_error_and_shown_on_the_console(
        fake: FakeWhatsApp, wired: tuple[WhatsAppChannel, RecordingEvents],
        records: ReplyRecords, backing: ConversationStore) -> None:
    channel, events = wired
    reply, record = await answered(fake, channel, events, records)
    assert await fake.deliver(url_of(channel), fake.status(reply, "sent")) == (200, "ok")
    failed = fake.status(reply, "failed", errors=[RE_ENGAGEMENT])
    assert await fake.deliver(url_of(channel), failed) == (200, "ok")
    assert await fake.deliver(url_of(channel), fake.status(reply, "read")) == (200, "ok")
    kept = await records.get(record.id)
    assert kept is not None and kept.delivery_status is not None
    status = kept.delivery_status[reply.wamid]
    assert (status["status"], status["error_code"], status["error_title"]) == (
        "failed", 131047, "Re-engagement message")
    assert datetime.fromisoformat(status["at"]).tzinfo is not None

    runner = web.AppRunner(standalone_app(console_app(records=records, store=backing,
                                                      redactor=Redactor())))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        base = f"http://127.0.0.1:{runner.addresses[0][1]}/console"
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{base}/records/{record.id}") as response:
                assert response.status == 200
                page = await response.text()
            async with session.get(f"{base}/api/records/{record.id}") as response:
                shown = await response.json()
    finally:
        await runner.cleanup()
    table = page[page.index('<table id="delivery">'):]
    table = table[:table.index("</table>")]
    assert reply.wamid in table and 'class="failed"' in table
    assert "131047 Re-engagement message" in table
    assert shown["delivery_status"][reply.wamid]["error_code"] == 131047


async def test_a_status_about_an_unknown_message_changes_nothing(
        fake: FakeWhatsApp, wired: tuple[WhatsAppChannel, RecordingEvents],
        records: ReplyRecords) -> None:
    channel, events = wired
    reply, record = await answered(fake, channel, events, records)
    stranger = Sent(wamid="wamid.NOT-OURS", to=ANA.wa_id, type="text", body={})
    elsewhere = Sent(wamid=reply.wamid, to=BO.wa_id, type="text", body={})  # other chat
    with capture_logs() as logs:
        for sent in (stranger, elsewhere):
            for status in ("delivered", "failed"):
                body = fake.status(sent, status, errors=[RE_ENGAGEMENT] if status == "failed"
                                   else [])
                assert await fake.deliver(url_of(channel), body) == (200, "ok")
    assert [e["kept"] for e in logs if "kept" in e] == [False] * 4
    kept = await records.get(record.id)
    assert kept is not None and kept.delivery_status is None


async def test_threadline_run_keeps_statuses_on_the_record_its_recorder_wrote(
        tmp_path: Path) -> None:
    """The runtime hands the backend's records to the channel, and the records the recorder
    writes name the wamids the statuses come back with."""
    async with FakeWhatsApp() as fake, FakeAnthropic() as model:
        model.responder = lambda body: text("On its way.")
        where = whatsapp_platform(fake)
        config = write_config(tmp_path, "whatsapp", where, model.url)
        url = where.extra["webhook_url"]
        where_ana = f"whatsapp:{fake.phone_number_id}:{ANA.wa_id}"
        process = await start(config, where, tmp_path / "run.log")
        try:
            assert await fake.deliver(url, fake.text_message(ANA, "where is my order?")) == (
                200, "ok")
            [reply] = await fake.wait_for_sent(1, within=30)
            async with SqlConversationStore(
                    f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}") as reader:
                records = records_for(reader)
                assert records is not None

                for _ in range(600):  # the recorder writes just after the turn
                    if await records.recent(where_ana):
                        break
                    await asyncio.sleep(0.05)
                else:
                    raise AssertionError("no reply record was written in 30 s")
            for status in ("read", "delivered"):
                assert await fake.deliver(url, fake.status(reply, status)) == (200, "ok")
            await until(lambda: len(log_events(tmp_path / "run.log", "whatsapp.status")) == 2)
        finally:
            process.send_signal(signal.SIGTERM)
            await process.wait()
        async with SqlConversationStore(
                f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}") as reader:
            records = records_for(reader)
            assert records is not None
            [listed] = await records.recent(where_ana)
            record = await records.get(listed.id)
        assert record is not None and record.detail is not None
        assert record.detail["delivered_ids"] == [reply.wamid]
        assert record.delivery_status is not None
        assert record.delivery_status[reply.wamid]["status"] == "read"
        assert [e["kept"] for e in log_events(tmp_path / "run.log", "whatsapp.status")] == [
            True, False]
