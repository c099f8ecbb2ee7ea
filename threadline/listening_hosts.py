"""Which hosts are this machine's: loopback binds and Host headers, and when the console may
be served beyond it."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def is_loopback(host: str) -> bool:
    """Whether a bind address is reachable only from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def addressed_to_loopback(host_header: str) -> bool:
    """Whether an HTTP `Host` header names this machine by a loopback address or localhost.

    A server bound to loopback answers only such requests: a web page elsewhere that points
    its own DNS name here (DNS rebinding) sends its own name as the Host, and is refused."""
    return is_loopback(urlsplit(f"//{host_header}").hostname or "")


MIN_CONSOLE_TOKEN_CHARS = 24


def console_token_problem(host: str, token: str | None) -> str | None:
    """Why the console may not be served on `host` with this token, or None.

    Beyond loopback it needs a token, and one long enough not to be guessed (the login is
    rate limited, but a short token falls to patience)."""
    if is_loopback(host):
        return None
    if not token:
        return (f"the console would listen on {host!r}, beyond this machine, without a token: "
                "set inspector.token: ${THREADLINE_CONSOLE_TOKEN}, or bind to 127.0.0.1")
    if len(token) < MIN_CONSOLE_TOKEN_CHARS:
        return (f"the console token is {len(token)} characters; beyond this machine ({host!r}) "
                f"it must be at least {MIN_CONSOLE_TOKEN_CHARS} (for example the output of "
                "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`), or bind to "
                "127.0.0.1")
    return None
