"""Who may see the console: anyone on this machine, or holders of the token.

Without a token the console refuses to listen beyond loopback (`require_safe_bind`) and answers
only requests addressed to a loopback name (`foreign_request`). With a token every page and API
answers 401 unless the request carries `Authorization: Bearer TOKEN` or the HttpOnly cookie the
login form sets (a keyed hash of the token, never the token).
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import urlsplit

from aiohttp import web

from threadline.config import is_loopback
from threadline.errors import ConfigError

COOKIE = "threadline_console"


def require_safe_bind(host: str, token: str | None) -> None:
    """Refuse to serve records beyond this machine without a token."""
    if token is None and not is_loopback(host):
        raise ConfigError(
            f"the console would listen on {host!r}, beyond this machine, without a token: set "
            "inspector.token: ${THREADLINE_CONSOLE_TOKEN} in the config, or bind to 127.0.0.1")


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
    if token is None and not is_loopback(urlsplit(f"//{request.host}").hostname or ""):
        return (f"this console answers only as http://127.0.0.1 (or localhost) without a token;"
                f" {request.host!r} is another name")
    origin = request.headers.get("Origin")
    if request.method == "POST" and origin and urlsplit(origin).netloc != request.host:
        return f"a form from {origin} may not post to this console"
    return None


def token_matches(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())
