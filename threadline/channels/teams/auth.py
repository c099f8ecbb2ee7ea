"""The bot's own token for the Bot Framework connector, and where the SDK validates inbound ones.

The Teams SDK's own `TokenManager` builds MSAL clients that always run MSAL's instance
discovery for a login host Microsoft does not list (a call to login.microsoftonline.com), so a
proxy or a local login server could never be used. The SDK's `token=` option takes a token
provider instead: `BotTokens` is one, on MSAL all the same (client credentials with the app
password, the token cached by MSAL until it nears expiry), with instance discovery off, since
the operator chose the login host. MSAL accepts only `https://` login URLs; a private CA (a
TLS-inspecting proxy) is trusted through `REQUESTS_CA_BUNDLE`, as for any `requests` client.

Inbound tokens are validated by the SDK (`InboundActivityTokenValidator`): signature against
the key set published beside `openid_metadata_url` (its `/keys`), issuer
`https://api.botframework.com`, audience the app id, expiry, and the `serviceurl` claim equal
to the activity's `serviceUrl`; `OffLoopValidator` runs that off the event loop and adds the
check the SDK leaves out, that the signing key is endorsed for Teams. `cloud_for` points both
at the configured hosts.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from typing import Any

import jwt
import msal
import requests
from microsoft_teams.api.auth.cloud_environment import PUBLIC, CloudEnvironment, with_overrides
from microsoft_teams.apps.auth import InboundActivityTokenValidator

from threadline.errors import ChannelAuthError, ChannelError

BOT_SCOPE = PUBLIC.bot_scope
TEAMS = "msteams"  # the Bot Framework channel id a key must be endorsed for
_KEYS_LIFETIME = 300.0  # seconds the key endorsements are kept, as the SDK keeps the keys
_RENEW_BEFORE = 300.0  # seconds before a token expires that a new one is asked for


def keys_url(cloud: CloudEnvironment) -> str:
    """Where the key set beside the OpenID metadata is published (as the SDK derives it)."""
    return re.sub(r"/openidconfiguration$", "/keys", cloud.openid_metadata_url)


def cloud_for(*, login_url: str, openid_metadata_url: str) -> CloudEnvironment:
    """Microsoft's public cloud with the login host and the key set's address replaced."""
    return with_overrides(PUBLIC, login_endpoint=login_url.rstrip("/"),
                          openid_metadata_url=openid_metadata_url)


class BotTokens:
    """App-only tokens for the bot (the SDK's `TokenProviderProtocol`), through MSAL."""

    def __init__(self, *, app_id: str, password: str, tenant_id: str, login_url: str,
                 channel: str) -> None:
        self._app_id, self._password = app_id, password
        self._tenant_id, self._login_url = tenant_id, login_url.rstrip("/")
        self._channel = channel
        self._clients: dict[str, msal.ConfidentialClientApplication] = {}
        self._lock = asyncio.Lock()
        self._kept: dict[tuple[str, str], tuple[str, float]] = {}  # -> (token, renew at)

    async def get_app_token(self, scope: str, tenant_id: str | None) -> str:
        """A token for `scope`, kept until `_RENEW_BEFORE` seconds before it expires (every
        reply asks for one: a worker-thread hop into MSAL's own cache each time cost more than
        the post); a `ChannelAuthError` when the login server refuses the app id or password,
        a `ChannelError` when it cannot be reached."""
        tenant = tenant_id or self._tenant_id
        kept = self._kept.get((tenant, scope))
        if kept is not None and time.monotonic() < kept[1]:
            return kept[0]
        async with self._lock:  # one MSAL client per tenant, built once (it asks the server)
            if tenant not in self._clients:
                self._clients[tenant] = await asyncio.to_thread(self._new_client, tenant)
        client = self._clients[tenant]
        result: dict[str, Any] = await asyncio.to_thread(
            client.acquire_token_for_client, [scope])
        token = result.get("access_token")
        if isinstance(token, str) and token:
            lifetime = float(result.get("expires_in") or 0)
            self._kept[(tenant, scope)] = (token, time.monotonic() + lifetime - _RENEW_BEFORE)
            return token
        code = result.get("error") or "no access_token"
        detail = str(result.get("error_description") or "").splitlines()[0:1]
        message = (f"Teams channel {self._channel!r}: {self._login_url} refused a token for "
                   f"app {self._app_id} in tenant {tenant} ({code}"
                   f"{': ' + detail[0] if detail else ''})")
        if code in ("invalid_client", "unauthorized_client", "invalid_request",
                    "invalid_tenant", "tenant_not_found"):
            raise ChannelAuthError(f"{message}; check app_id, app_password and tenant_id "
                                   "against the bot's Azure app registration")
        raise ChannelError(message)

    def _new_client(self, tenant: str) -> msal.ConfidentialClientApplication:
        try:
            return msal.ConfidentialClientApplication(
                self._app_id, client_credential=self._password,
                authority=f"{self._login_url}/{tenant}", instance_discovery=False,
                http_client=requests.Session())
        except ValueError as error:  # the tenant's OpenID configuration was not found
            raise ChannelAuthError(
                f"Teams channel {self._channel!r}: {self._login_url} knows no tenant "
                f"{tenant!r} ({error}); set tenant_id to the Directory (tenant) ID of the bot's "
                "app registration") from error


class OffLoopValidator:
    """The SDK's inbound token validator, run in a worker thread, plus the endorsement check.

    The SDK's `validate_token` is async but fetches the key set with PyJWT's blocking `urllib`
    client (on first use, every five minutes, and for any token naming a key id it does not
    know): on the event loop that would stall every conversation for the length of a fetch,
    and a fake channel served by the same loop could never answer it. Its checks run
    unchanged; then a Bot Framework token must also be signed by a key endorsed for Teams
    (`msteams` in the key's `endorsements`), which the SDK does not check and the Bot
    Framework's authentication rules require: a key the Bot Framework uses for another channel
    cannot speak for Teams.
    """

    def __init__(self, inner: InboundActivityTokenValidator, *, keys_url: str,
                 issuer: str) -> None:
        self._inner = inner
        self._keys_url, self._issuer = keys_url, issuer
        self._endorsed: dict[str, frozenset[str]] = {}  # key id -> channels it may sign for
        self._fetched_at = -_KEYS_LIFETIME
        self._lock = threading.Lock()

    async def validate_token(self, raw_token: str, service_url: str | None = None
                             ) -> dict[str, Any]:
        return await asyncio.to_thread(self._validate, raw_token, service_url)

    def _validate(self, raw_token: str, service_url: str | None) -> dict[str, Any]:
        claims: dict[str, Any] = asyncio.run(self._inner.validate_token(raw_token, service_url))
        if claims.get("iss") == self._issuer:
            key_id = str(jwt.get_unverified_header(raw_token).get("kid") or "")
            if TEAMS not in self._endorsements(key_id):
                raise jwt.InvalidTokenError(f"signing key {key_id!r} is not endorsed for "
                                            f"{TEAMS!r}")
        return claims

    def _endorsements(self, key_id: str) -> frozenset[str]:
        """The channels `key_id` is endorsed for (the key set read again when it is older than
        the SDK's own cache, or does not know the key the SDK just verified with)."""
        with self._lock:
            stale = time.monotonic() - self._fetched_at > _KEYS_LIFETIME
            if stale or key_id not in self._endorsed:
                keys = jwt.PyJWKClient(self._keys_url).fetch_data().get("keys") or []
                self._endorsed = {str(k.get("kid")): frozenset(k.get("endorsements") or ())
                                  for k in keys if isinstance(k, dict)}
                self._fetched_at = time.monotonic()
            return self._endorsed.get(key_id, frozenset())
