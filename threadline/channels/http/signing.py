"""The one signature of the `http` platform, both ways: requests to us and replies from us.

    X-Threadline-Timestamp: 1764253200
    X-Threadline-Signature: v1=HEX(HMAC-SHA256(secret, TIMESTAMP + "." + SIGNED))

`SIGNED` is the raw request body (a POST) or the request target, path and query as sent (a
GET, whose body is empty: signing the target keeps one signed fetch from being replayed for
another cursor). It is Stripe's and Slack's scheme: the timestamp inside the signed bytes, a
replay window around our clock, and a constant-time comparison (`hmac.compare_digest`).
Several `v1=` values, comma separated, are accepted, so a secret can be rotated by signing with
both for a while.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

TIMESTAMP_HEADER = "X-Threadline-Timestamp"
SIGNATURE_HEADER = "X-Threadline-Signature"
SCHEME = "v1"


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request's signature was not accepted: a short code, and what to do, in words."""

    code: str
    message: str


def signature(secret: str, timestamp: str, signed: bytes) -> str:
    """The `X-Threadline-Signature` value for `signed` bytes at `timestamp`."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + signed, hashlib.sha256)
    return f"{SCHEME}={digest.hexdigest()}"


def signed_headers(secret: str, signed: bytes, *, now: float | None = None) -> dict[str, str]:
    """The two headers that sign `signed` bytes now (replies sent to a callback, tests)."""
    timestamp = str(int(time.time() if now is None else now))
    return {TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: signature(secret, timestamp, signed)}


class RequestVerifier:
    """Checks the signature and the freshness of one request; see the module docstring."""

    def __init__(self, secret: str, *, replay_window_seconds: float,
                 clock: Callable[[], float] = time.time) -> None:
        self._secret = secret
        self._window = replay_window_seconds
        self._clock = clock

    def refusal(self, headers: Mapping[str, str], signed: bytes) -> Refusal | None:
        """None when the request is signed with our secret within the window; else why not."""
        timestamp = headers.get(TIMESTAMP_HEADER, "")
        given = headers.get(SIGNATURE_HEADER, "")
        if not timestamp or not given:
            return Refusal("unsigned", f"the request has no {TIMESTAMP_HEADER} or "
                           f"{SIGNATURE_HEADER} header; sign it as docs/platforms/http.md says")
        if not (timestamp.isascii() and timestamp.isdigit()):
            return Refusal("bad_timestamp", f"{TIMESTAMP_HEADER} must be whole seconds since "
                           f"1970 (UTC), got {timestamp[:40]!r}")
        skew = self._clock() - int(timestamp)
        if abs(skew) > self._window:
            return Refusal("stale_timestamp", f"{TIMESTAMP_HEADER} is {abs(skew):.0f} s "
                           f"{'old' if skew > 0 else 'ahead'}, beyond the replay window of "
                           f"{self._window:.0f} s; sign each request when it is sent, and "
                           "check the sender's clock")
        expected = signature(self._secret, timestamp, signed)
        offered = [part.strip() for part in given.split(",")]
        # Every offered value is compared, so the time taken does not say which one matched.
        matched = [hmac.compare_digest(expected.encode(), part.encode()) for part in offered]
        if any(matched):
            return None
        return Refusal("bad_signature", f"{SIGNATURE_HEADER} does not match: compute "
                       f"{SCHEME}=hex(HMAC-SHA256(secret, timestamp + '.' + body)) over the "
                       "exact bytes sent, with the channel's secret")
