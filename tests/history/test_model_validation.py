"""A wrong value in a turn is refused on construction, naming the field and the value."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from tests.history.helpers import ANN, SUPPORT, T0, turn
from threadline.errors import InvalidMessageError
from threadline.history import (
    MessageMetadata,
    Participant,
    StoredMessage,
    ToolCall,
    ToolExchange,
    ToolResult,
)
from threadline.history.model import MAX_CONTENT_CHARS

CALL = ToolCall(id="toolu_1", name="lookup", input={"q": 1})


@pytest.mark.parametrize(("build", "field", "value"), [
    (lambda: Participant(kind="robot", id="U1"), "Participant.kind", "'robot'"),  # type: ignore[arg-type]
    (lambda: Participant(kind="user", id=""), "Participant.id", "''"),
    (lambda: Participant(kind="user", id=7), "Participant.id", "7"),  # type: ignore[arg-type]
    (lambda: turn("hi", conversation_id=""), "StoredMessage.conversation_id", "''"),
    (lambda: turn(42), "StoredMessage.content", "42"),  # type: ignore[arg-type]
    (lambda: turn("hi", scope="group"), "StoredMessage.scope", "'group'"),
    (lambda: StoredMessage(conversation_id="c1", participant="U1", content="hi"),  # type: ignore[arg-type]
     "StoredMessage.participant", "'U1'"),
    (lambda: StoredMessage(conversation_id="c1", participant=ANN, content="hi",
                           timestamp=datetime(2024, 3, 1)),
     "StoredMessage.timestamp", "datetime.datetime(2024, 3, 1, 0, 0)"),
    (lambda: turn("hi", metadata={"mentions": "U1"}), "MessageMetadata.mentions", "'U1'"),
    (lambda: turn("hi", metadata={"thread_id": 1700}), "MessageMetadata.thread_id", "1700"),
    (lambda: turn("hi", metadata=["channel_type"]), "StoredMessage.metadata",
     "['channel_type']"),
    (lambda: MessageMetadata(channel_type=""), "MessageMetadata.channel_type", "''"),
    (lambda: ToolCall(id="t1", name="lookup", input=["q"]), "ToolCall.input", "['q']"),  # type: ignore[arg-type]
    (lambda: ToolExchange(call=CALL, result=ToolResult(tool_call_id="toolu_2", content="x")),
     "ToolExchange.result.tool_call_id", "'toolu_2'"),
    (lambda: turn("hi", tool_exchanges=("not an exchange",)), "StoredMessage.tool_exchanges",
     "'not an exchange'"),
])
def test_the_error_names_the_field_and_the_value(build: Any, field: str, value: str) -> None:
    with pytest.raises(InvalidMessageError) as raised:
        build()
    assert field in str(raised.value)
    assert value in str(raised.value)


def test_tool_exchanges_belong_to_agents_only() -> None:
    exchange = ToolExchange(call=CALL, result=ToolResult(tool_call_id="toolu_1", content="ok"))
    assert turn("done", who=SUPPORT, tool_exchanges=(exchange,)).tool_exchanges == (exchange,)
    with pytest.raises(InvalidMessageError, match=r"StoredMessage.tool_exchanges.*agent"):
        turn("done", who=ANN, tool_exchanges=(exchange,))


def test_too_long_content_says_the_size_the_limit_and_what_to_do() -> None:
    with pytest.raises(InvalidMessageError) as raised:
        turn("x" * (MAX_CONTENT_CHARS + 1))
    text = str(raised.value)
    assert f"{MAX_CONTENT_CHARS + 1:,}" in text and f"{MAX_CONTENT_CHARS:,}" in text
    assert "Split" in text


def test_long_values_are_shortened_in_the_message() -> None:
    with pytest.raises(InvalidMessageError) as raised:
        turn("hi", scope="s" * 500)  # type: ignore[arg-type]
    assert len(str(raised.value)) < 200 and "..." in str(raised.value)


def test_nul_in_content_is_replaced_not_refused() -> None:
    assert turn("a\x00b").content == "a\ufffdb"


def test_an_invalid_message_error_is_also_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"StoredMessage.scope"):
        StoredMessage(conversation_id="c1", participant=ANN, content="x", timestamp=T0,
                      scope="nowhere")  # type: ignore[arg-type]
