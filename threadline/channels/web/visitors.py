"""Who a web visitor is: a signed session cookie, and the signed identity a site may vouch with.

The host page is not trusted, so nothing it says about the visitor counts unless it is signed:

- An anonymous visitor gets a random id (`anon-...`) kept in a session cookie signed with the
  channel's `session_secret` (HMAC-SHA256), `HttpOnly` (no script of the page can read it) and
  `SameSite=Strict` (no other site's page can send it). A forged or altered cookie is a new
  visitor, never someone else.
- A site that knows its customer signs an identity for them with `identity_secret`: a JWT
  (HS256) whose `sub` is the customer's id on that site, `aud` the site's origin and `exp` a
  near expiry (PyJWT checks all three). The visitor is then `sub`, the same person on every
  device, and an operator can link `web:SUB` to their Slack or Telegram self (`people link`).
  A token that is unsigned, signed with another secret, expired, or made for another site is
  refused with a sentence saying which.

A visitor id is a platform identity's user part (`web:USER`), so it never holds a colon.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import time
from dataclasses import dataclass

import jwt

from threadline.errors import ChannelAuthError

SESSION_COOKIE = "threadline_web"
ANONYMOUS_PREFIX = "anon-"
_SUBJECT = re.compile(r"[A-Za-z0-9._@+-]{1,128}")
_LEEWAY_SECONDS = 30  # clocks of the site and of this server may differ a little


@dataclass(frozen=True, slots=True)
class Visitor:
    """One person talking through the widget: their id, the name they are shown with, and
    whether a site vouched for them (a signed identity) or they are anonymous."""

    visitor_id: str
    name: str
    signed: bool
    expires: int  # unix time the session ends

    @property
    def conversation_id(self) -> str:
        return f"web:{self.visitor_id}"


def new_anonymous(*, lifetime: float, now: float | None = None) -> Visitor:
    """A visitor nobody vouched for, with a fresh random id."""
    moment = time.time() if now is None else now
    return Visitor(visitor_id=ANONYMOUS_PREFIX + secrets.token_urlsafe(16), name="visitor",
                   signed=False, expires=int(moment + lifetime))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(secret: str, payload: str) -> str:
    return _b64(hmac.new(secret.encode(), payload.encode(), hashlib.sha256).digest())


def session_cookie(visitor: Visitor, secret: str) -> str:
    """The cookie value that names `visitor` until it expires, signed with `secret`."""
    payload = _b64(json.dumps({"v": visitor.visitor_id, "n": visitor.name,
                               "s": visitor.signed, "e": visitor.expires},
                              separators=(",", ":")).encode())
    return f"{payload}.{_mac(secret, payload)}"


def visitor_of_cookie(value: str | None, secret: str, *, now: float | None = None
                      ) -> Visitor | None:
    """The visitor a cookie names; None when it is missing, altered, forged or expired."""
    if not value or "." not in value:
        return None
    payload, mac = value.rsplit(".", 1)
    if not hmac.compare_digest(mac, _mac(secret, payload)):
        return None
    try:
        fields = json.loads(_unb64(payload))
        visitor = Visitor(visitor_id=str(fields["v"]), name=str(fields["n"]),
                          signed=bool(fields["s"]), expires=int(fields["e"]))
    except (ValueError, KeyError, TypeError):
        return None
    if visitor.expires <= (time.time() if now is None else now):
        return None
    return visitor


def vouched_visitor(token: str, *, secret: str | None, origin: str, lifetime: float,
                    now: float | None = None) -> Visitor:
    """The customer a site's signed identity names; `ChannelAuthError` says why it is refused.

    The session lasts until the token's `exp` or `lifetime`, whichever is sooner: a site that
    logs its customer out stops signing, and the widget is anonymous again at the next page.
    """
    if not secret:
        raise ChannelAuthError("this widget takes no signed identities: identity_secret is not "
                               "set in its channel's settings")
    moment = time.time() if now is None else now
    try:
        claims = jwt.decode(token, secret, algorithms=["HS256"], audience=origin,
                            leeway=_LEEWAY_SECONDS,
                            options={"require": ["sub", "exp", "aud"], "verify_iat": False})
    except jwt.ExpiredSignatureError as exc:
        raise ChannelAuthError("the signed identity has expired (its exp is past): the site "
                               "must sign a fresh one when it serves the page") from exc
    except jwt.InvalidAudienceError as exc:
        raise ChannelAuthError(f"the signed identity was made for another site: its aud is "
                               f"not this page's origin {origin!r}") from exc
    except jwt.MissingRequiredClaimError as exc:
        raise ChannelAuthError(f"the signed identity has no {exc.claim!r} claim: a site signs "
                               "sub (the customer's id), aud (its origin) and exp") from exc
    except jwt.InvalidSignatureError as exc:
        raise ChannelAuthError("the signed identity's signature does not match: it was not "
                               "signed with this widget's identity_secret") from exc
    except jwt.InvalidAlgorithmError as exc:
        raise ChannelAuthError("the signed identity is not signed with HS256 (an unsigned "
                               "token, alg none, is never accepted)") from exc
    except jwt.InvalidTokenError as exc:
        raise ChannelAuthError(f"the signed identity is not a JWT signed with HS256 ({exc}); "
                               "sign sub, aud and exp with the identity_secret") from exc
    subject = str(claims["sub"])
    if not _SUBJECT.fullmatch(subject) or subject.startswith(ANONYMOUS_PREFIX):
        raise ChannelAuthError(f"the signed identity's sub {subject[:40]!r} is not usable: use "
                               "1 to 128 letters, digits or ._@+- (not starting with anon-)")
    name = str(claims.get("name") or subject)[:80]
    expires = min(int(claims["exp"]), int(moment + lifetime))
    return Visitor(visitor_id=subject, name=name, signed=True, expires=expires)


def sign_identity(*, subject: str, origin: str, secret: str, lifetime: float = 600.0,
                  name: str | None = None, now: float | None = None) -> str:
    """A signed identity as a site's server makes one (for tests, the demo and the docs'
    example): HS256 over sub, aud, exp and an optional name."""
    moment = time.time() if now is None else now
    claims: dict[str, object] = {"sub": subject, "aud": origin, "exp": int(moment + lifetime)}
    if name:
        claims["name"] = name
    return jwt.encode(claims, secret, algorithm="HS256")
