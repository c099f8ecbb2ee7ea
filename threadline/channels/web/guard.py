"""What the web channel's server holds against the page that embeds it: the host page is not
trusted, and neither is anyone who can reach the port.

- Origins: the API answers only pages of the sites in `origins` (the browser's `Origin`
  header, which a page's script cannot set); CORS names that one origin, with credentials, so
  no other site's page can read an answer or use the visitor's session.
- Headers: every answer forbids sniffing, framing and referrers; the API's answers carry a CSP
  that runs nothing (`default-src 'none'`), the chat page's one that runs only our own script.
- Rates: requests per address (`requests_per_minute`, every route) and messages per visitor
  (`messages_per_minute`), as token buckets (`threadline.interceptors.rate_limit`); over them
  the answer is 429 with `Retry-After`, in words.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable

from aiohttp import web

from threadline.interceptors.rate_limit import Rate, TokenBucket

_MAX_KEYS = 50_000  # buckets remembered before the least recently used are dropped

SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "cross-origin",
}
API_CSP = "default-src 'none'; frame-ancestors 'none'"
# The chat page this server serves itself (the demo, a chat on its own domain).
PAGE_CSP = ("default-src 'none'; script-src 'self'; connect-src 'self'; img-src 'self' blob: "
            "data:; style-src 'self' 'unsafe-inline'; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'none'")


def origin_of(url: str) -> str:
    """`scheme://host[:port]` of a URL, as browsers send it in `Origin`."""
    return url.rstrip("/")


class OriginPolicy:
    """The sites whose pages may use the widget, and the CORS headers that say so."""

    def __init__(self, origins: Iterable[str]) -> None:
        self.origins = frozenset(origin_of(o) for o in origins)

    def allowed(self, origin: str | None) -> bool:
        return origin is not None and origin in self.origins

    def refusal(self, request: web.Request) -> str | None:
        """Why this request's page may not use the API (None: it may)."""
        origin = request.headers.get("Origin")
        if origin is None:
            # Same-origin GETs (EventSource on our own page) carry no Origin; the page's own.
            fetch_site = request.headers.get("Sec-Fetch-Site")
            if request.method == "GET" and fetch_site in (None, "same-origin"):
                return None
            return "the request names no Origin: only pages of the allowed sites may chat here"
        if origin == self.own_origin(request) or self.allowed(origin):
            return None
        return (f"pages of {origin} may not use this chat: add it to the channel's origins "
                "if it is your site")

    @staticmethod
    def own_origin(request: web.Request) -> str:
        return f"{request.scheme}://{request.host}"

    def cors_headers(self, request: web.Request) -> dict[str, str]:
        origin = request.headers.get("Origin")
        if origin is None or not (self.allowed(origin) or origin == self.own_origin(request)):
            return {"Vary": "Origin"}
        return {"Access-Control-Allow-Origin": origin,
                "Access-Control-Allow-Credentials": "true",
                "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
                "Access-Control-Allow-Headers": "Content-Type, Last-Event-ID",
                "Access-Control-Max-Age": "600", "Vary": "Origin"}


class RateLimits:
    """Token buckets by key (an address, a visitor), the least recently used forgotten."""

    def __init__(self, rate: Rate, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self._clock = clock
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()

    def retry_after(self, key: str) -> int | None:
        """None when `key` may go on; else the whole seconds until it may."""
        now = self._clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = TokenBucket(self.rate, now)
            if len(self._buckets) > _MAX_KEYS:
                self._buckets.popitem(last=False)
        self._buckets.move_to_end(key)
        if bucket.take(now):
            return None
        return max(1, math.ceil((1.0 - bucket.tokens) / bucket.refill_per_second))


def client_address(request: web.Request, *, trust_proxy: bool) -> str:
    """The address a request came from: the proxy's word for it when the proxy is trusted
    (the last `X-Forwarded-For` hop, the one the proxy itself added)."""
    if trust_proxy:
        forwarded = request.headers.get("X-Forwarded-For", "")
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if hops:
            return hops[-1]
    return request.remote or "unknown"


def served_over_https(request: web.Request, *, trust_proxy: bool) -> bool:
    """Whether the visitor's browser reached us over HTTPS (a cookie is then `Secure`)."""
    if trust_proxy and request.headers.get("X-Forwarded-Proto", "").lower() == "https":
        return True
    return request.secure
