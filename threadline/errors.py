"""Everything Threadline raises on purpose, as one tree so callers know what to catch.

    ThreadlineError
    ├── ConfigError                 a setting or option is missing or wrong (names it and the fix)
    │   └── PortUnavailableError    a port to listen on is taken or not allowed (names the setting)
    ├── InvalidMessageError         a message field has a wrong value (names the field and value)
    ├── StoreError                  the conversation store could not do what was asked
    │   ├── StoreUnavailableError   the database is down, locked past the timeout or read-only
    │   ├── SearchQueryError        a search query was rejected (says why)
    │   └── TurnNotRecordedError    an inbound turn could not be recorded: do not acknowledge it
    ├── TokenizerUnavailableError   the offline tokenizer files are missing
    ├── EmbeddingModelError         the embedding model's shipped weights are missing or altered
    ├── ModelError                  the LLM could not produce a reply
    │   └── ModelUnavailableError   the provider stayed overloaded/rate limited past the retries
    ├── ToolServerError             an MCP tool server failed a call
    │   ├── ToolServerUnavailable   the server cannot be reached now (it is being retried)
    │   └── ToolReportedError       the server ran the tool and said it failed
    └── ChannelError                a platform call failed
        ├── ChannelAuthError        a token, signature or secret was rejected
        └── ChannelPermanentError   retrying cannot help (channel gone, bot removed, too long)
            ├── FileRefusedError    a file URL names a host or address the channel does not fetch
            └── FileTooLargeError   a download went past the channel's file size limit

Every message says which conversation, channel or setting was involved and what to do.
"""

from __future__ import annotations


class ThreadlineError(Exception):
    """Base of every error Threadline raises on purpose."""


class ConfigError(ThreadlineError, ValueError):
    """A configuration value or a constructor option is missing or invalid.

    Also a `ValueError`, what Python code passing a bad argument expects to catch."""


class PortUnavailableError(ConfigError):
    """A server cannot listen where its settings say (port taken, privileged, no such address);
    the text names the port and the setting to change."""


class InvalidMessageError(ThreadlineError, ValueError):
    """A message or participant was built with a wrong value; the text names the field."""


class StoreError(ThreadlineError):
    """The conversation store failed to carry out an operation."""


class StoreUnavailableError(StoreError):
    """The database cannot be reached, is locked past the timeout, or is read-only."""


class SearchQueryError(StoreError):
    """A search query cannot be run (for example it is longer than the allowed size)."""


class TurnNotRecordedError(StoreError):
    """An inbound turn was not durably recorded, so the platform must not be told it arrived.

    Raised by `ChannelEvents.on_message`; the channel then withholds its acknowledgement (a
    5xx, no ack, no offset) so the platform delivers the message again later.
    """


class TokenizerUnavailableError(ThreadlineError):
    """The tokenizer's bundled encoding files are missing; nothing is downloaded instead."""


class EmbeddingModelError(ThreadlineError):
    """The embedding model's weights, shipped in an installed package, are missing or differ
    from the file Threadline pinned; nothing is downloaded instead."""


class ToolServerError(ThreadlineError):
    """An MCP tool server could not give a tool's result."""


class ToolServerUnavailable(ToolServerError):
    """The server cannot be reached now; it is retried in the background."""


class ToolReportedError(ToolServerError):
    """The server ran the tool and said it failed (`isError`); the text is the server's."""


class ModelError(ThreadlineError):
    """The language model did not produce a usable reply."""


class ModelUnavailableError(ModelError):
    """The model provider stayed rate limited or overloaded after every retry."""


class ChannelError(ThreadlineError):
    """A chat platform call failed."""


class ChannelAuthError(ChannelError):
    """A platform token, request signature or webhook secret was rejected."""


class ChannelPermanentError(ChannelError):
    """A platform call failed in a way that retrying cannot fix."""


class FileRefusedError(ChannelPermanentError):
    """A platform named a file at a host or address its channel does not fetch from (another
    host, loopback, a private range, this process's own ports); nothing was sent there."""


class FileTooLargeError(ChannelPermanentError):
    """A download went past the channel's size limit and was stopped there."""
