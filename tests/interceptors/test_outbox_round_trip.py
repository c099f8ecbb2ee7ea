"""The outbox serializes turns losslessly: what goes in comes back equal."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from threadline.history.codec import message_from_dict, message_to_dict
from threadline.history.model import (
    MessageMetadata,
    Participant,
    StoredMessage,
    ToolCall,
    ToolExchange,
    ToolResult,
)
from threadline.interceptors.outbox import Outbox

text = st.text(max_size=40)
ids = st.text(min_size=1, max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                  max_size=3),
    max_leaves=6,
)


@st.composite
def messages(draw: st.DrawFn) -> StoredMessage:
    kind = draw(st.sampled_from(["user", "agent", "system"]))
    exchanges = ()
    if kind == "agent":
        call_ids = draw(st.lists(ids, max_size=2, unique=True))
        exchanges = tuple(
            ToolExchange(call=ToolCall(id=c, name="lookup", input=draw(
                st.dictionaries(st.text(max_size=5), json_values, max_size=3))),
                result=ToolResult(tool_call_id=c, content=draw(text), is_error=draw(st.booleans())))
            for c in call_ids
        )
    offset = draw(st.integers(min_value=-12 * 60, max_value=14 * 60))
    moment = datetime(2024, 1, 1, tzinfo=UTC) + timedelta(microseconds=draw(
        st.integers(min_value=0, max_value=10**13)))
    summary_of = draw(st.none() | st.tuples(st.integers(0, 99), st.integers(100, 999)))
    return StoredMessage(
        id=draw(ids), conversation_id=draw(ids),
        participant=Participant(kind=kind, id=draw(ids), display_name=draw(text)),
        content=draw(st.text(max_size=200)),
        timestamp=moment.astimezone(timezone(timedelta(minutes=offset))),
        scope=draw(st.sampled_from(["channel", "dm", "thread"])),
        metadata=MessageMetadata(
            channel_type=draw(ids), channel_name=draw(st.none() | text),
            thread_id=draw(st.none() | ids), message_id=draw(st.none() | ids),
            mentions=tuple(draw(st.lists(ids, max_size=3))),
            is_summary=summary_of is not None, summary_of=summary_of,
            reply_to_message_id=draw(st.none() | ids),
            reply_to_participant_id=draw(st.none() | ids),
            extra=draw(st.dictionaries(st.text(min_size=1, max_size=5), json_values,
                                       max_size=3)),
        ),
        tool_exchanges=exchanges,
        sequence=draw(st.none() | st.integers(1, 10**9)),
        token_count=draw(st.none() | st.integers(0, 10**6)),
    )


@given(messages())
def test_a_turn_survives_json_unchanged(message: StoredMessage) -> None:
    again = message_from_dict(json.loads(json.dumps(message_to_dict(message))))
    assert again == message
    assert again.timestamp.utcoffset() == message.timestamp.utcoffset()


def test_the_file_keeps_order_and_removes_only_what_was_stored(tmp_path: Path) -> None:
    outbox = Outbox(tmp_path / "outbox.jsonl")
    turns = [StoredMessage(conversation_id="c1", content=f"t{i}",
                           participant=Participant(kind="user", id="U1")) for i in range(4)]
    assert outbox.add_now(turns[:3]) == 3
    assert outbox.add_now(turns[3:]) == 4
    assert [m.content for m in outbox.pending_now()] == ["t0", "t1", "t2", "t3"]
    assert outbox.remove_now([turns[0].id, turns[2].id]) == 2
    assert [m.content for m in outbox.pending_now()] == ["t1", "t3"]
    assert Outbox(outbox.path).has_pending()  # another instance (a restart) sees the same
