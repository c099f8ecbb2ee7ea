"""What to tell a person whose bot cannot reach its platform, the same way on every platform.

An SDK's connection error is a chain (aiohttp's `ClientConnectorError` around a
`ConnectionRefusedError`, httpx's `ConnectError` around a `gaierror`); its `repr` is no help to
someone setting up a bot. `unreachable` names the host that was tried, says in words what went
wrong, and gives the one thing to do: look at the setting when the address came from one the
person set, at this machine's network when it is the platform's own address.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from urllib.parse import urlsplit


def _chain(error: BaseException) -> Iterator[BaseException]:
    """`error` and everything it was raised from (aiohttp keeps the OS error in `os_error`)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        wrapped = getattr(current, "os_error", None)
        current = (wrapped if isinstance(wrapped, BaseException) and id(wrapped) not in seen
                   else current.__cause__ or current.__context__)


def why(error: BaseException) -> str:
    """The cause of a failed connection, in words."""
    for cause in _chain(error):
        if isinstance(cause, socket.gaierror):
            return "the host name does not resolve (no DNS answer)"
        if isinstance(cause, ConnectionRefusedError):
            return "the connection was refused (nothing listens at that address)"
        if isinstance(cause, ssl.SSLCertVerificationError):
            return "its TLS certificate was not accepted"
        if isinstance(cause, ssl.SSLError):
            return "the TLS handshake failed"
        if isinstance(cause, TimeoutError):
            return "it did not answer in time"
        if isinstance(cause, ConnectionResetError):
            return "the connection was closed by the other side"
    innermost = list(_chain(error))[-1]
    return str(innermost) or type(innermost).__name__


def host_of(url: str) -> str:
    """`host:port` of a URL (or the URL itself when it has no host)."""
    parts = urlsplit(url)
    if not parts.hostname:
        return url
    return f"{parts.hostname}:{parts.port}" if parts.port else parts.hostname


def unreachable(*, where: str, service: str, action: str, url: str, setting: str | None,
                error: BaseException) -> str:
    """`where: could not reach SERVICE at HOST to ACTION: WHY. WHAT TO DO.`

    `setting` names the setting `url` came from, or is None when it is the platform's
    default address (then the network is what to check, not a setting never touched).
    """
    host = host_of(url)
    if setting is not None:
        fix = f"Check the {setting} setting ({url}) and that the server there is running"
    else:
        fix = (f"Check that this machine can reach {host} (network, DNS, firewall or an HTTPS "
               "proxy)")
    return f"{where}: could not reach {service} at {host} to {action}: {why(error)}. {fix}."
