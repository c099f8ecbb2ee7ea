"""The gate in front of slack-bolt in HTTP mode: only signed, fresh, well-formed requests pass.

bolt parses a request body before it checks the signature, so a malformed body, signed or
not, used to end in a 500 with a traceback. Here the order is the safe one:

1. The signature (`X-Slack-Signature`) and timestamp (`X-Slack-Request-Timestamp`, numeric and
   within 5 minutes) are verified with slack_sdk's `SignatureVerifier` over the raw bytes:
   anything unsigned, forged, stale or with a non-numeric timestamp is a 401, before any
   parsing.
2. Only then is the body parsed, the way bolt will parse it (JSON, or a form with a JSON
   `payload`); a body bolt could not read is a 400 saying why.

Neither answer logs a traceback: both are the sender's mistake, not ours.
"""

from __future__ import annotations

from collections.abc import Mapping

import structlog
from aiohttp import web
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier

log = structlog.get_logger("threadline.channels.slack")


def unverified(
    verifier: SignatureVerifier, body: bytes, headers: Mapping[str, str], *, channel: str
) -> web.Response | None:
    """A 401 for a request Slack did not sign (or signed too long ago); None when it did."""
    timestamp = headers.get("X-Slack-Request-Timestamp", "")
    signature = headers.get("X-Slack-Signature", "")
    verified = False
    if timestamp.isascii() and timestamp.isdigit() and signature:
        try:
            verified = verifier.is_valid(body=body, timestamp=timestamp, signature=signature)
        except UnicodeDecodeError:  # the verifier reads the body as UTF-8; Slack's always is
            verified = False
    if verified:
        return None
    log.warning("slack_request_refused", channel=channel, status=401,
                reason="missing, wrong or stale signature")
    return web.Response(status=401, text="invalid or missing Slack request signature; "
                                         "check the app's signing_secret")


def bolt_request(
    body: bytes, request: web.Request, *, channel: str
) -> AsyncBoltRequest | web.Response:
    """The request as bolt will see it, or a 400 when its (signed) body cannot be read."""
    try:
        text = body.decode("utf-8")
        parsed = AsyncBoltRequest(body=text, query=request.query_string,
                                  headers=dict(request.headers))
        readable = isinstance(parsed.body, dict)
    except Exception as error:  # bolt's parsing raises whatever json/parse_qsl/dict access do
        reason = f"{type(error).__name__}: {error}"
    else:
        if readable:
            return parsed
        reason = "the body is not a JSON object"
    log.warning("slack_request_refused", channel=channel, status=400, reason=reason)
    return web.Response(status=400, text=f"unreadable Slack request body ({reason})")
