"""Who may see the console: anyone on this machine, or holders of the token.

Without a token the console refuses to listen beyond loopback (`require_safe_bind`). With a
token every page and API answers 401 unless the request carries `Authorization: Bearer TOKEN`
or the HttpOnly cookie the login form sets (a keyed hash of the token, never the token).
"""

from __future__ import annotations

import hashlib
import hmac

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


def token_matches(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())
