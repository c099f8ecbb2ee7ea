"""Conversation history: the message model, the stores, token counting and the prompt assembler."""

from __future__ import annotations

from typing import TYPE_CHECKING

from threadline.plugs import lazy_exports

if TYPE_CHECKING:
    from threadline.history.memory import InMemoryConversationStore
    from threadline.history.model import (
        MessageMetadata,
        Participant,
        StoredMessage,
        ToolCall,
        ToolExchange,
        ToolResult,
    )
    from threadline.history.search import SearchQuery, format_windows
    from threadline.history.store import ConversationInfo, ConversationStore, SearchWindow
    from threadline.history.tokens import TiktokenCounter, TokenCounter, default_counter

__all__ = [
    "ConversationInfo",
    "ConversationStore",
    "InMemoryConversationStore",
    "MessageMetadata",
    "Participant",
    "SearchQuery",
    "SearchWindow",
    "StoredMessage",
    "TiktokenCounter",
    "TokenCounter",
    "ToolCall",
    "ToolExchange",
    "ToolResult",
    "default_counter",
    "format_windows",
]

__getattr__ = lazy_exports(__name__, {
    "InMemoryConversationStore": "threadline.history.memory",
    "MessageMetadata": "threadline.history.model",
    "Participant": "threadline.history.model",
    "StoredMessage": "threadline.history.model",
    "ToolCall": "threadline.history.model",
    "ToolExchange": "threadline.history.model",
    "ToolResult": "threadline.history.model",
    "SearchQuery": "threadline.history.search",
    "format_windows": "threadline.history.search",
    "ConversationInfo": "threadline.history.store",
    "ConversationStore": "threadline.history.store",
    "SearchWindow": "threadline.history.store",
    "TiktokenCounter": "threadline.history.tokens",
    "TokenCounter": "threadline.history.tokens",
    "default_counter": "threadline.history.tokens",
})
