"""Conversation history: the message model, the stores, token counting and the prompt assembler."""

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
