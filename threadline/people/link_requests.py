"""Links waiting for consent, and wrong link codes counted per identity.

Saying someone's code does not link anything: it opens a `LinkRequest` that the person who
said it (the redeemer) and then the code's owner (the issuer) each accept or refuse, in their
own direct message, before the code would have expired (`threadline.people.link_codes` asks
them). Silence leaves the two apart. A request awaits one person's answer at a time and is
taken once, by that person only, so a second press or another person's press does nothing.

Guessing is bounded: an identity that said `MAX_WRONG_CODES` unknown or expired codes within
`WRONG_CODES_WINDOW` is refused until the window passes (a code has 31^8 values; at five
guesses an hour nobody finds one by trying).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from threadline.commands.registry import Origin
from threadline.errors import ConfigError
from threadline.history.beside import parts_beside
from threadline.history.model import utc_now
from threadline.history.store import ConversationStore

MAX_WRONG_CODES = 5
WRONG_CODES_WINDOW = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class LinkRequest:
    """`redeemer` said `issuer`'s code; they become one person only if both accept.
    `awaiting` is the one of them whose answer the request waits for."""

    request_id: str
    issuer: str
    redeemer: str
    issuer_origin: Origin | None
    redeemer_origin: Origin | None
    expires: datetime
    awaiting: str


class LinkRequests(Protocol):
    """Pending link requests and wrong-code counts; see the module docstring."""

    async def open(self, *, issuer: str, redeemer: str, issuer_origin: Origin | None,
                   redeemer_origin: Origin | None, expires: datetime,
                   awaiting: str) -> LinkRequest:
        """A new request waiting for `awaiting`'s answer (it replaces the redeemer's earlier
        ones)."""
        ...

    async def take(self, request_id: str, identity: str) -> LinkRequest | None:
        """The live request with this id if it waits for `identity`'s answer, removed as it
        is taken."""
        ...

    async def wrong_codes(self, identity: str) -> int:
        """Wrong codes `identity` said in the current window."""
        ...

    async def said_wrong_code(self, identity: str) -> None:
        ...


def new_request_id() -> str:
    return secrets.token_hex(6)


# -- in memory ------------------------------------------------------------------------------


class MemoryLinkRequests:
    """Link requests in process memory, beside an in-memory store."""

    def __init__(self) -> None:
        self._requests: dict[str, LinkRequest] = {}
        self._wrong: dict[str, tuple[datetime, int]] = {}

    async def open(self, *, issuer: str, redeemer: str, issuer_origin: Origin | None,
                   redeemer_origin: Origin | None, expires: datetime,
                   awaiting: str) -> LinkRequest:
        request = LinkRequest(new_request_id(), issuer, redeemer, issuer_origin,
                              redeemer_origin, expires, awaiting)
        now = utc_now()
        self._requests = {k: r for k, r in self._requests.items()
                          if r.redeemer != redeemer and r.expires >= now}
        self._requests[request.request_id] = request
        return request

    async def take(self, request_id: str, identity: str) -> LinkRequest | None:
        request = self._requests.get(request_id)
        if request is None or request.awaiting != identity:
            return None
        del self._requests[request_id]
        return request if request.expires >= utc_now() else None

    async def wrong_codes(self, identity: str) -> int:
        started, wrong = self._wrong.get(identity, (utc_now(), 0))
        return wrong if started >= utc_now() - WRONG_CODES_WINDOW else 0

    async def said_wrong_code(self, identity: str) -> None:
        now = utc_now()
        started, wrong = self._wrong.get(identity, (now, 0))
        self._wrong[identity] = ((started, wrong + 1) if started >= now - WRONG_CODES_WINDOW
                                 else (now, 1))


def link_requests_for(store: ConversationStore) -> LinkRequests:
    """The link requests kept beside a history (its backend's `link_requests` part); a
    `ConfigError` says when its backend keeps none."""
    parts = parts_beside(store)
    found: LinkRequests | None = parts.link_requests
    if found is None:
        raise ConfigError(f"backend {parts.name} keeps no link requests: linking needs a "
                          "backend that does (sqlite or postgresql)")
    return found
