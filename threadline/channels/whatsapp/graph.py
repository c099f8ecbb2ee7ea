"""The Graph API as the WhatsApp channel calls it: pywa's async client, pointed where we say,
with rate limits waited out and failures said in our words.

pywa (4.5) sets the base URL of the `httpx.AsyncClient` it is given to Meta's Graph host and
has no setting to change it, so a proxy or a local fake is reached through the client's
transport: `GraphTransport` sends each request to `graph_url`'s scheme, host and port, path
and query kept (`/v23.0/PHONE_ID/messages`). It carries them on aiohttp, the HTTP client the
rest of Threadline uses: measured here against a local server, httpx's own transport took
4.6 ms a request one at a time and 3.7 s for 320 at once, aiohttp 1.6 ms and 0.9 s, and
pywa's calls on this transport 2.8 ms and 0.9 s.

Rate limits: WhatsApp answers a number that sends too fast with HTTP 429 or a throttling
error (`4` app calls, `80007` account, `130429` throughput, `131056` too many messages to one
customer). `call_with_retries` waits (the `Retry-After` header when given, else 1, 2, 4, 8,
16 s) and tries again, up to `RATE_LIMIT_RETRIES` times, then gives up with a `ChannelError`
saying so; the pipeline logs it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aiohttp
import httpx
import structlog
from pywa_async.client import WhatsApp
from pywa_async.errors import (
    AuthorizationError,
    ReEngagementMessage,
    SendMessageError,
    ThrottlingError,
    WhatsAppError,
)
from yarl import URL

from threadline.channels.unreachable import unreachable
from threadline.errors import ChannelAuthError, ChannelError, ChannelPermanentError

log = structlog.get_logger("threadline.channels.whatsapp")

GRAPH_URL = "https://graph.facebook.com"
GRAPH_API_VERSION = "23.0"
RATE_LIMIT_RETRIES = 5
FIRST_WAIT_SECONDS = 1.0
MAX_WAIT_SECONDS = 60.0
TIMEOUT_SECONDS = 30.0
T = TypeVar("T")


class GraphTransport(httpx.AsyncBaseTransport):
    """Carries pywa's requests to `graph_url` on aiohttp (see the module docstring)."""

    def __init__(self, graph_url: str) -> None:
        self._target = URL(graph_url)
        self._session: aiohttp.ClientSession | None = None  # made in the running loop

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=TIMEOUT_SECONDS))
        url = URL(str(request.url), encoded=True).with_scheme(self._target.scheme).with_host(
            self._target.host or "").with_port(self._target.port)
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw
                   if k.lower() not in (b"host", b"content-length")]
        try:
            async with self._session.request(request.method, url, headers=headers,
                                             data=await request.aread() or None) as response:
                content = await response.read()
        except TimeoutError as error:
            raise httpx.ReadTimeout(f"no answer in {TIMEOUT_SECONDS:.0f} s",
                                    request=request) from error
        except aiohttp.ClientError as error:
            raise httpx.ConnectError(str(error), request=request) from error
        # aiohttp has already undone the transfer and content encodings.
        kept = [(k, v) for k, v in response.headers.items()
                if k.lower() not in ("content-encoding", "transfer-encoding", "content-length")]
        return httpx.Response(response.status, headers=kept, content=content, request=request)

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


def graph_client(*, phone_number_id: str, token: str, graph_url: str) -> WhatsApp:
    """pywa's async client for one business phone number, talking to `graph_url`."""
    session = httpx.AsyncClient(transport=GraphTransport(graph_url))
    return WhatsApp(phone_id=phone_number_id, token=token, session=session,
                    api_version=GRAPH_API_VERSION)


async def close_client(client: WhatsApp) -> None:
    """Close the HTTP connections the client holds."""
    await client.api._session.aclose()


def _retry_after(error: WhatsAppError, waited: float) -> float | None:
    """Seconds to wait before trying again, or None when the error is not a rate limit."""
    response = error.raw_response
    status = error.status_code
    if not isinstance(error, ThrottlingError) and status != 429:
        return None
    header = response.headers.get("Retry-After") if response is not None else None
    try:
        if header is not None:
            return min(MAX_WAIT_SECONDS, max(0.0, float(header)))
    except ValueError:
        pass
    return min(MAX_WAIT_SECONDS, waited * 2 if waited else FIRST_WAIT_SECONDS)


async def call_with_retries(call: Callable[[], Awaitable[T]], *, what: str, where: str,
                            bound: Any, graph_url: str) -> T:
    """`call()`, rate limits waited out (see the module docstring); other failures become
    our errors naming `where` and `what` was being done."""
    waited = 0.0
    for attempt in range(RATE_LIMIT_RETRIES + 1):
        try:
            return await call()
        except WhatsAppError as error:
            pause = _retry_after(error, waited)
            if pause is None or attempt == RATE_LIMIT_RETRIES:
                raise failure(error, where=where, action=what) from error
            bound.warning("whatsapp.rate_limited", action=what, code=error.code,
                          wait_seconds=pause, attempt=attempt + 1,
                          outcome="waiting, then trying again")
            await asyncio.sleep(pause)
            waited = pause
        except httpx.HTTPError as error:
            raise ChannelError(unreachable(
                where=where, service="the WhatsApp Graph API", action=what, url=graph_url,
                setting=None if graph_url == GRAPH_URL else "graph_url", error=error)) from error
    raise AssertionError("unreachable: the loop returns or raises")


def failure(error: WhatsAppError, *, where: str, action: str) -> ChannelError:
    """Our error for a Graph API refusal: what failed, where, and what to do."""
    what = f"{where}: could not {action}: WhatsApp error {error.code} ({error.message}"
    what += f": {error.details})" if error.details else ")"
    if isinstance(error, AuthorizationError):
        return ChannelAuthError(f"{what}. The access token was refused or lacks the "
                                "whatsapp_business_messaging permission; make a new system "
                                "user token (setting access_token).")
    if isinstance(error, ReEngagementMessage):
        return ChannelPermanentError(f"{what}. More than 24 hours passed since the customer's "
                                     "last message: only an approved template may be sent "
                                     "(setting window_template); not retrying.")
    if isinstance(error, ThrottlingError):
        return ChannelError(f"{what}. Still rate limited after {RATE_LIMIT_RETRIES} waits; "
                            "try again later.")
    if isinstance(error, SendMessageError) or 400 <= (error.status_code or 0) < 500:
        return ChannelPermanentError(f"{what}. WhatsApp refused the request; not retrying.")
    return ChannelError(f"{what}. Check that the Graph API is reachable and try again.")
