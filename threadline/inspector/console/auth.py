"""Who may see the console: anyone on this machine, or holders of the token.

Without a token the console refuses to listen beyond loopback (`require_safe_bind`) and answers
only requests addressed to a loopback name (`foreign_request`). With a token every page and API
answers 401 unless the request carries `Authorization: Bearer TOKEN` or the HttpOnly cookie the
login form sets (a keyed hash of the token, never the token).
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections import OrderedDict
from urllib.parse import urlsplit

from aiohttp import web

from threadline.config import addressed_to_loopback, console_token_problem
from threadline.errors import ConfigError

COOKIE = "threadline_console"
LOGIN_ATTEMPTS = 5  # failed logins per client address ...
LOGIN_WINDOW = 60.0  # ... within this many seconds; then 429 until the window passes
_CLIENTS_KEPT = 10_000


def require_safe_bind(host: str, token: str | None) -> None:
    """Refuse to serve records beyond this machine without a token long enough to hold."""
    problem = console_token_problem(host, token)
    if problem is not None:
        raise ConfigError(problem)


class LoginThrottle:
    """Failed console logins per client address: at most `LOGIN_ATTEMPTS` per `LOGIN_WINDOW`
    seconds, so a token cannot be guessed at network speed."""

    def __init__(self, *, attempts: int = LOGIN_ATTEMPTS, window: float = LOGIN_WINDOW) -> None:
        self.attempts = attempts
        self.window = window
        self._failures: OrderedDict[str, list[float]] = OrderedDict()

    def _recent(self, client: str, now: float) -> list[float]:
        kept = [t for t in self._failures.get(client, ()) if now - t < self.window]
        self._failures[client] = kept
        self._failures.move_to_end(client)
        while len(self._failures) > _CLIENTS_KEPT:
            self._failures.popitem(last=False)
        return kept

    def retry_after(self, client: str) -> float | None:
        """Seconds until `client` may try again, or None when it may try now."""
        now = time.monotonic()
        recent = self._recent(client, now)
        if len(recent) < self.attempts:
            return None
        return max(1.0, self.window - (now - recent[0]))

    def failed(self, client: str) -> None:
        self._recent(client, time.monotonic()).append(time.monotonic())


def cookie_value(token: str) -> str:
    return hmac.new(token.encode(), b"threadline-console-session", hashlib.sha256).hexdigest()


def authorized(request: web.Request, token: str | None) -> bool:
    """Whether a request may see the console (always, when there is no token)."""
    if token is None:
        return True
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer ") and hmac.compare_digest(
            header.removeprefix("Bearer ").strip().encode(), token.encode()):
        return True
    cookie = request.cookies.get(COOKIE, "")
    return bool(cookie) and hmac.compare_digest(cookie.encode(), cookie_value(token).encode())


def foreign_request(request: web.Request, token: str | None) -> str | None:
    """Why a request from another site must be refused, or None.

    Without a token the console trusts this machine, so a page elsewhere must not reach it
    through a DNS name that points here (the Host must be a loopback address), nor make a
    browser post to it (a form's Origin must be the console's own).
    """
    if token is None and not addressed_to_loopback(request.host):
        return (f"this console answers only as http://127.0.0.1 (or localhost) without a token;"
                f" {request.host!r} is another name")
    origin = request.headers.get("Origin")
    if request.method == "POST" and origin and urlsplit(origin).netloc != request.host:
        return f"a form from {origin} may not post to this console"
    return None


def token_matches(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())
