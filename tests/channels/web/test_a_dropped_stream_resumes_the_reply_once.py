"""A visitor's stream dropped while the reply is being written, and opened again with the id of
the last event it read (as `EventSource` does): the reply arrives complete, once; a page that
opens afresh shows the question and the answer once each; a message sent again with the same id
(the browser heard no answer) is one turn, answered once."""

from __future__ import annotations

from pathlib import Path

from tests.channels.web.rig import Visitor, next_event, web_runtime
from tests.fakes.anthropic import FakeAnthropic, text

ANSWER = "Your parcel 4417-B left the depot this morning and arrives tomorrow before noon."


async def test_a_stream_dropped_mid_reply_resumes_it_complete_and_once(tmp_path: Path) -> None:
    async with FakeAnthropic() as model:
        model.responder = lambda body: text(ANSWER, tokens_per_second=8)
        async with web_runtime(tmp_path, model.url) as (_, base):
            visitor = Visitor(base)
            try:
                assert (await visitor.open())[0] == 200
                async with visitor.events() as events:
                    await next_event(events, "ready")
                    status, sent = await visitor.send("where is my parcel?",
                                                      message_id="question-0001")
                    assert status == 202
                    question = await next_event(events, "turn")
                    assert question.data["id"] == sent["id"]
                    assert question.data["text"] == "where is my parcel?"
                    draft = await next_event(events, "draft")
                    assert draft.data["text"] and draft.data["text"] != ANSWER
                # The connection drops mid-reply; the browser comes back with the last id read.
                assert question.event_id is not None
                seen = []
                async with visitor.events(last_event_id=question.event_id) as events:
                    while not seen or seen[-1].kind != "turn":
                        seen.append(await next_event(events, "", within=20))
                reply_id = draft.data["id"]
                turns = [e for e in seen if e.kind == "turn"]
                assert [(t.data["id"], t.data["text"]) for t in turns] == [(reply_id, ANSWER)]
                assert all(ANSWER.startswith(e.data["text"]) for e in seen
                           if e.kind in ("draft", "posted"))

                # Sent again with the same id (no answer heard): the same turn, not a new one.
                status, again = await visitor.send("where is my parcel?",
                                                   message_id="question-0001")
                assert status == 202 and again["id"] == sent["id"]

                # A page opening afresh: the conversation, each turn once.
                async with visitor.events() as events:
                    ready_or_turns = []
                    while not ready_or_turns or ready_or_turns[-1].kind != "ready":
                        ready_or_turns.append(await events.get())
                shown = [(e.data["from"], e.data["text"]) for e in ready_or_turns
                         if e.kind == "turn"]
                assert shown == [("visitor", "where is my parcel?"), ("agent", ANSWER)]
                assert len(model.requests) == 1
            finally:
                await visitor.close()
