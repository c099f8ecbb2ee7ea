"""The parts of a conversation id or an identity, read in one place for every platform.

Ids are `PLATFORM:PART[:PART...]`: `slack:T1:C2:1700.1`, `telegram:-1001:5`, `discord:123`. Some
platforms name things by ids that hold colons themselves: Matrix's `@alice:example.org`,
`!room:example.org:8448` and (in old rooms) `$event:example.org` carry their server after a
colon. A part that opens with one of Matrix's sigils (`@ ! # $ +`) is such an id and keeps its
server (a host, an `[IPv6]` literal, and a port of digits) whole, so

    matrix:!room:example.org:8448:$event  ->  ("matrix", "!room:example.org:8448", "$event")

A server never starts with a sigil, so an id without one (a room id of room version 12,
`!Hash`) is followed directly by the next part. Nothing else in Threadline splits an id on ':'.
"""

from __future__ import annotations

SIGILS = frozenset("@!#$+")


def _server_length(tokens: list[str], start: int) -> int:
    """How many tokens from `start` are a sigil id's server: a host (or a bracketed IPv6
    literal, which holds colons) and an optional port; 0 when the next part is another id."""
    if start >= len(tokens) or not tokens[start] or tokens[start][0] in SIGILS:
        return 0
    end = start + 1
    if tokens[start].startswith("["):
        while end < len(tokens) and "]" not in tokens[end - 1]:
            end += 1
    if end < len(tokens) and tokens[end].isdigit():
        end += 1  # the port
    return end - start


def id_parts(text: str) -> tuple[str, ...]:
    """The parts of `text`, the platform first, each sigil id with its server kept whole."""
    tokens = text.split(":")
    parts: list[str] = [tokens[0]]
    index = 1
    while index < len(tokens):
        token = tokens[index]
        taken = 1 + (_server_length(tokens, index + 1) if token[:1] in SIGILS else 0)
        parts.append(":".join(tokens[index:index + taken]))
        index += taken
    return tuple(parts)


def platform_of(text: str) -> str:
    """The platform a conversation id or identity belongs to (`slack`, `matrix`)."""
    return text.partition(":")[0]

