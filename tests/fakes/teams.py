"""A fake Microsoft Teams (Bot Framework) on 127.0.0.1: login, signing keys, the connector.

Three servers, each speaking its part of the Bot Framework wire protocol:

- login (HTTPS, a certificate for 127.0.0.1 from a CA made here; `ca_file` is its PEM, for
  `REQUESTS_CA_BUNDLE`, since MSAL accepts only https): each tenant's OpenID configuration and
  its client-credentials token endpoint, which checks each app's password;
- the Bot Framework's OpenID metadata and key set (`openid_metadata_url`, `/keys` beside it):
  the public key the channel's tokens are signed with, endorsed for `msteams`, and another
  endorsed for `webchat` only;
- the connector (`service_url`): `/v3/conversations/{id}/activities` (post, reply with
  `replyToId`, update in place), each call needing a token the login server issued; every
  call is recorded in `calls`, every message's current text in `texts`.

The channel side: `message()` / `press()` build activities as Teams sends them (personal chat,
group chat, channel thread; `<at>` mentions with their entities), and `deliver()` posts one to a
bot's endpoint with a signed JWT (issuer, audience, `serviceurl`), or a forged, unsigned,
expired or wrongly addressed one, returning the HTTP status.

    async with FakeTeams() as teams:
        status = await teams.deliver(url, teams.message("hi", chat=teams.personal(ALICE)))
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import itertools
import ssl
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

import aiohttp
import jwt
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from jwt.algorithms import RSAAlgorithm

ISSUER = "https://api.botframework.com"
APP_ID = "00000000-0000-4000-8000-00000000b0a1"
APP_PASSWORD = "fake-app-password"
TENANT = "11111111-2222-4333-8444-555555555555"
KEY_ID = "fake-teams-key"
Forgery = Literal["signed", "unsigned", "other_key", "expired", "wrong_audience", "none",
                  "wrong_service_url", "not_endorsed"]


@dataclass(frozen=True)
class Person:
    """A Teams user as activities describe them."""

    id: str
    name: str
    aad_object_id: str

    def account(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "aadObjectId": self.aad_object_id}


ALICE = Person("29:1alice", "Alice", "aaaaaaaa-0000-4000-8000-00000000a11c")
BOB = Person("29:1bob", "Bob", "bbbbbbbb-0000-4000-8000-0000000000b0")


@dataclass(frozen=True)
class Chat:
    """Where an activity is said: its Teams conversation and what kind it is."""

    id: str
    kind: Literal["personal", "groupChat", "channel"]
    name: str | None = None


@dataclass
class Call:
    method: str
    conversation_id: str
    activity_id: str | None
    body: dict[str, Any]
    token: str


@dataclass
class _Keys:
    kid: str = KEY_ID
    endorsements: tuple[str, ...] = ("msteams",)
    private: rsa.RSAPrivateKey = field(
        default_factory=lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048))

    def jwk(self) -> dict[str, Any]:
        key: dict[str, Any] = RSAAlgorithm.to_jwk(self.private.public_key(), as_dict=True)
        return {**key, "kid": self.kid, "use": "sig", "endorsements": list(self.endorsements)}


def _tls(directory: Path) -> tuple[ssl.SSLContext, Path]:
    """A server context with a certificate for 127.0.0.1 signed by a CA made now; the CA's
    PEM file (to trust)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake teams test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    ca_file, cert_file, key_file = (directory / n for n in ("ca.pem", "cert.pem", "key.pem"))
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return context, ca_file


class FakeTeams:
    """See the module docstring."""

    def __init__(self) -> None:
        self.apps: dict[str, str] = {APP_ID: APP_PASSWORD}  # app id -> password
        self.tenants = {TENANT}
        self.calls: list[Call] = []
        self.texts: dict[str, str] = {}  # activity id -> what the message shows now
        self.token_requests = 0
        self.files: dict[str, bytes] = {}  # unique id -> bytes, served at /files/{id}
        self.file_downloads: list[str] = []
        # Bytes PUT to an upload URL a consent's accept handed out: (upload id, Content-Range,
        # bytes), in order.
        self.uploads: list[tuple[str, str, bytes]] = []
        self.upload_redirect: str | None = None  # an upload id every upload redirects to
        self._issued: set[str] = set()
        self._keys, self._other = _Keys(), _Keys()
        # Published too, but endorsed for another Bot Framework channel only.
        self._webchat = _Keys(kid="fake-webchat-key", endorsements=("webchat",))
        self._ids = itertools.count(1_700_000_000_001)
        self._changed = asyncio.Condition()
        self._tmp = tempfile.TemporaryDirectory(prefix="fake-teams-")
        self._runners: list[web.AppRunner] = []
        self._session: aiohttp.ClientSession | None = None
        self.login_url = self.openid_metadata_url = self.service_url = ""
        self.ca_file = Path()

    async def __aenter__(self) -> Self:
        context, self.ca_file = _tls(Path(self._tmp.name))
        login = web.Application()
        login.router.add_get("/{tenant}/v2.0/.well-known/openid-configuration", self._tenant)
        login.router.add_post("/{tenant}/oauth2/v2.0/token", self._token)
        self.login_url = f"https://127.0.0.1:{await self._serve(login, context)}"
        api = web.Application()
        api.router.add_get("/v1/.well-known/openidconfiguration", self._openid)
        api.router.add_get("/v1/.well-known/keys", self._jwks)
        connector = "/teams/v3/conversations/{conversation}/activities"
        api.router.add_post(connector, self._post)
        api.router.add_post(connector + "/{activity}", self._post)
        api.router.add_put(connector + "/{activity}", self._update)
        api.router.add_get("/files/{unique_id}", self._download)
        api.router.add_put("/uploads/{upload_id}", self._upload)
        base = f"http://127.0.0.1:{await self._serve(api, None)}"
        self.openid_metadata_url = f"{base}/v1/.well-known/openidconfiguration"
        self.service_url = f"{base}/teams"
        self._session = aiohttp.ClientSession()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        if self._session is not None:
            await self._session.close()
        for runner in self._runners:
            await runner.cleanup()
        self._tmp.cleanup()

    async def _serve(self, app: web.Application, context: ssl.SSLContext | None) -> int:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context).start()
        self._runners.append(runner)
        return int(runner.addresses[0][1])

    def settings(self, *, app_id: str = APP_ID) -> dict[str, Any]:
        """`TeamsChannel` keyword arguments pointing at this fake."""
        return {"app_id": app_id, "app_password": self.apps[app_id], "tenant_id": TENANT,
                "login_url": self.login_url, "openid_metadata_url": self.openid_metadata_url,
                "service_url": self.service_url}

    # Login ------------------------------------------------------------------------------

    async def _tenant(self, request: web.Request) -> web.Response:
        tenant = request.match_info["tenant"]
        if tenant not in self.tenants:
            return web.json_response({"error": "invalid_tenant"}, status=400)
        root = f"{self.login_url}/{tenant}"
        return web.json_response({
            "issuer": f"{root}/v2.0", "authorization_endpoint": f"{root}/oauth2/v2.0/authorize",
            "token_endpoint": f"{root}/oauth2/v2.0/token"})

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        self.token_requests += 1
        app_id, secret = str(form.get("client_id")), str(form.get("client_secret"))
        if request.match_info["tenant"] not in self.tenants:
            return web.json_response({"error": "invalid_tenant",
                                      "error_description": "AADSTS90002: Tenant not found."},
                                     status=400)
        if self.apps.get(app_id) != secret or form.get("grant_type") != "client_credentials":
            return web.json_response({"error": "invalid_client", "error_description":
                                      "AADSTS7000215: Invalid client secret provided."},
                                     status=401)
        now = int(time.time())
        token = jwt.encode({"aud": "https://api.botframework.com", "appid": app_id,
                            "iat": now, "exp": now + 3599, "n": self.token_requests},
                           f"fake-login-secret-{app_id}-0123456789abcdef", algorithm="HS256")
        self._issued.add(token)
        return web.json_response({"token_type": "Bearer", "expires_in": 3599,
                                  "access_token": token})

    # Files ------------------------------------------------------------------------------

    def add_file(self, data: bytes, *, name: str, host: str | None = None) -> dict[str, Any]:
        """A file sent in a 1:1 chat: the download-info attachment Teams puts on the message,
        its URL pre-authenticated (no token), served here unless `host` says elsewhere."""
        unique_id = f"file-{len(self.files) + 1:04d}"
        self.files[unique_id] = data
        base = host or self.service_url.removesuffix("/teams")
        return {"contentType": "application/vnd.microsoft.teams.file.download.info",
                "name": name, "contentUrl": f"https://contoso.sharepoint.com/{name}",
                "content": {"downloadUrl": f"{base}/files/{unique_id}", "uniqueId": unique_id,
                            "fileType": name.rsplit(".", 1)[-1]}}

    async def _download(self, request: web.Request) -> web.Response:
        unique_id = request.match_info["unique_id"]
        if unique_id not in self.files:
            return web.Response(status=404)
        self.file_downloads.append(unique_id)
        return web.Response(body=self.files[unique_id])

    async def _upload(self, request: web.Request) -> web.Response:
        """An upload session's URL (OneDrive's, pre-authenticated): the whole file in one
        PUT, as the Bot Framework's file consent flow sends it."""
        data = await request.read()
        if self.upload_redirect and request.match_info["upload_id"] != self.upload_redirect:
            raise web.HTTPTemporaryRedirect(f"/uploads/{self.upload_redirect}")
        async with self._changed:
            self.uploads.append((request.match_info["upload_id"],
                                 request.headers.get("Content-Range", ""), data))
            self._changed.notify_all()
        return web.json_response({"id": request.match_info["upload_id"], "size": len(data)},
                                 status=201)

    def consent(self, card_message: Call, *, accept: bool, chat: Chat,
                sender: Person = ALICE, activity_id: str | None = None,
                app_id: str = APP_ID) -> dict[str, Any]:
        """The `fileConsent/invoke` of pressing Allow (`accept`) or Decline on a posted
        FileConsentCard; an accept carries an upload URL served here."""
        [card] = [a for a in card_message.body["attachments"]
                  if a["contentType"] == "application/vnd.microsoft.teams.card.file.consent"]
        value: dict[str, Any] = {"type": "fileUpload", "action": "accept" if accept
                                 else "decline"}
        if accept:
            upload_id = f"upload-{len(self.uploads) + 1:04d}-{self.next_id()}"
            base = self.service_url.removesuffix("/teams")
            value |= {"context": card["content"]["acceptContext"], "uploadInfo": {
                "name": card["name"], "uploadUrl": f"{base}/uploads/{upload_id}",
                "contentUrl": f"https://contoso-my.sharepoint.com/personal/alice/{card['name']}",
                "uniqueId": upload_id, "fileType": card["name"].rsplit(".", 1)[-1]}}
        else:
            value["context"] = card["content"]["declineContext"]
        return {**self._envelope(chat, sender, activity_id, app_id), "type": "invoke",
                "name": "fileConsent/invoke", "replyToId": card_message.body.get("id"),
                "value": value}

    # Keys -------------------------------------------------------------------------------

    async def _openid(self, request: web.Request) -> web.Response:
        return web.json_response({"issuer": ISSUER, "id_token_signing_alg_values_supported":
                                  ["RS256"], "jwks_uri": self.openid_metadata_url.replace(
                                      "/openidconfiguration", "/keys")})

    async def _jwks(self, request: web.Request) -> web.Response:
        return web.json_response({"keys": [self._keys.jwk(), self._webchat.jwk()]})

    # Connector --------------------------------------------------------------------------

    def _authorized(self, request: web.Request) -> str | None:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        return token if token in self._issued else None

    async def _post(self, request: web.Request) -> web.Response:
        token = self._authorized(request)
        if token is None:
            return web.json_response({"error": {"code": "Unauthorized"}}, status=401)
        body = await request.json()
        activity_id = str(next(self._ids))
        conversation = request.match_info["conversation"]
        async with self._changed:
            self.calls.append(Call("post", conversation, body.get("replyToId")
                                   or request.match_info.get("activity"), body, token))
            if body.get("type") == "message":
                self.texts[activity_id] = self._shown(body)
            self._changed.notify_all()
        return web.json_response({"id": activity_id}, status=201)

    async def _update(self, request: web.Request) -> web.Response:
        if (token := self._authorized(request)) is None:
            return web.json_response({"error": {"code": "Unauthorized"}}, status=401)
        body = await request.json()
        activity_id = request.match_info["activity"]
        async with self._changed:
            self.calls.append(Call("update", request.match_info["conversation"], activity_id,
                                   body, token))
            self.texts[activity_id] = self._shown(body)
            self._changed.notify_all()
        return web.json_response({"id": activity_id})

    @staticmethod
    def _shown(body: Mapping[str, Any]) -> str:
        cards = [a["content"] for a in body.get("attachments") or ()
                 if a.get("contentType") == "application/vnd.microsoft.card.adaptive"]
        card_text = " ".join(b.get("text", "") for c in cards for b in c.get("body", ()))
        return str(body.get("text") or card_text)

    def messages(self) -> list[Call]:
        """Every message posted (not typing, not updates), in order."""
        return [c for c in self.calls if c.method == "post" and c.body.get("type") == "message"]

    async def wait_for_messages(self, count: int, *, within: float = 20.0) -> list[Call]:
        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(lambda: len(self.messages()) >= count)
        return self.messages()

    async def wait_until_text(self, shown: str, *, within: float = 20.0) -> None:
        """Until some message of the bot shows exactly `shown`."""
        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(lambda: shown in self.texts.values())

    # The channel side -------------------------------------------------------------------

    @staticmethod
    def personal(person: Person) -> Chat:
        return Chat(f"a:1chat-with-{person.name.lower()}", "personal")

    @staticmethod
    def group(name: str = "Shop floor") -> Chat:
        return Chat("19:groupchat-0001@thread.v2", "groupChat", name)

    @staticmethod
    def channel(root: str, name: str = "General") -> Chat:
        return Chat(f"19:channel-general@thread.tacv2;messageid={root}", "channel", name)

    def next_id(self) -> str:
        return str(next(self._ids))

    def message(self, text: str, *, chat: Chat, sender: Person = ALICE,
                mentions: Mapping[str, str] | None = None, activity_id: str | None = None,
                reply_to: str | None = None, app_id: str = APP_ID,
                attachments: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """A message activity; `mentions` maps each `<at>name</at>` in `text` to its id."""
        return {**self._envelope(chat, sender, activity_id, app_id),
                "type": "message", "text": text, "textFormat": "plain",
                **({"attachments": attachments} if attachments else {}),
                **({"replyToId": reply_to} if reply_to else {}),
                "entities": [{"type": "mention", "text": f"<at>{name}</at>",
                              "mentioned": {"id": account, "name": name}}
                             for name, account in (mentions or {}).items()]}

    def press(self, card_message: Call, label: str, *, sender: Person = ALICE,
              chat: Chat, app_id: str = APP_ID) -> dict[str, Any]:
        """The `adaptiveCard/action` invoke of pressing `label` on a posted card."""
        [card] = [a["content"] for a in card_message.body["attachments"]]
        [action] = [a for a in card["actions"] if a["title"] == label]
        return {**self._envelope(chat, sender, None, app_id), "type": "invoke",
                "name": "adaptiveCard/action", "replyToId": card_message.body.get("id"),
                "value": {"action": {"type": "Action.Execute", "verb": action["verb"],
                                     "data": action["data"]}, "trigger": "manual"}}

    def _envelope(self, chat: Chat, sender: Person, activity_id: str | None,
                  app_id: str) -> dict[str, Any]:
        channel_data: dict[str, Any] = {"tenant": {"id": TENANT}}
        if chat.kind == "channel":
            channel_data |= {"channel": {"id": chat.id.split(";")[0], "name": chat.name},
                             "team": {"id": "19:team@thread.tacv2", "name": "Shop"}}
        return {"id": activity_id or self.next_id(), "channelId": "msteams",
                "serviceUrl": self.service_url,
                "timestamp": datetime.datetime.now(datetime.UTC).isoformat(),
                "localTimezone": "Europe/Berlin",
                "from": sender.account(), "recipient": {"id": f"28:{app_id}", "name": "Bot"},
                "conversation": {"id": chat.id, "conversationType": chat.kind,
                                 "tenantId": TENANT, **({"name": chat.name} if chat.name else {})},
                "channelData": channel_data}

    def token(self, *, audience: str = APP_ID, forgery: Forgery = "signed",
              service_url: str | None = None) -> str | None:
        """The bearer token the channel sends with an activity (or a forged one)."""
        now = int(time.time())
        claims = {"iss": ISSUER, "aud": audience, "iat": now - 10, "nbf": now - 10,
                  "exp": now + 3600, "serviceurl": service_url or self.service_url}
        if forgery == "none":
            return None
        if forgery == "expired":
            claims |= {"iat": now - 7200, "nbf": now - 7200, "exp": now - 3600}
        if forgery == "wrong_audience":
            claims["aud"] = "someone-elses-bot"
        if forgery == "wrong_service_url":
            claims["serviceurl"] = "https://elsewhere.example.invalid/teams"
        if forgery == "unsigned":
            return jwt.encode(claims, key=None, algorithm="none", headers={"kid": KEY_ID})
        keys = {"other_key": self._other, "not_endorsed": self._webchat}.get(forgery, self._keys)
        return jwt.encode(claims, keys.private, algorithm="RS256", headers={"kid": keys.kid})

    def session(self) -> aiohttp.ClientSession:
        """A client session to send raw requests with."""
        return aiohttp.ClientSession()

    async def deliver(self, url: str, activity: Mapping[str, Any], *, app_id: str = APP_ID,
                      forgery: Forgery = "signed") -> tuple[int, Any]:
        """POST `activity` to a bot's messaging endpoint as Teams does; (status, body)."""
        assert self._session is not None
        token = self.token(audience=app_id, forgery=forgery)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with self._session.post(url, json=activity, headers=headers) as response:
            body = await response.read()
            return response.status, body.decode(errors="replace")
