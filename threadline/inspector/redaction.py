"""Redaction: secrets from the config and the environment never reach a record or a page.

A record holds what the model saw and what tools returned, and either can carry a credential
(a tool that echoes its configuration, an error message quoting a URL with a password). The
redactor knows every secret value the process was given and replaces each occurrence, in
plain and JSON-escaped form. This module is the one place that decides what the secrets are;
every exit uses it, on the text as it is before any escaping (HTML-escaped, a secret with `&`
or `<` no longer reads as itself): reply records as they are written, console pages and the
live stream, `threadline history export`, and spans with message content (`tracing.export`).

The config's secrets are its secret fields (tokens, keys, client secrets, the database
password), the values of the variables that `*_env` settings name, and every value of an MCP
server's `env:` and `headers:` (they exist to carry credentials, and the config cannot tell
which one does), whether written as `${VAR}` or literally.

Values shorter than `MIN_SECRET_CHARS` are not redacted: replacing a three-letter "secret"
everywhere would garble every text while protecting nothing.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    from threadline.config import Settings

MASK = "[redacted]"
MIN_SECRET_CHARS = 6
# Environment variables whose values are credentials, by the usual naming.
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)", re.IGNORECASE)


class Redactor:
    """Replaces known secret values in text; longest first, so a secret inside another goes too."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = {s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_CHARS}
        escaped = {json.dumps(s, ensure_ascii=False)[1:-1] for s in values}
        ascii_escaped = {json.dumps(s)[1:-1] for s in values}
        self._secrets = sorted(values | escaped | ascii_escaped, key=len, reverse=True)

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def text(self, value: str) -> str:
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, MASK)
        return value

    def value(self, value: Any) -> Any:
        """A JSON-like value with every string redacted (mappings become dicts, sequences
        lists)."""
        # Sequences before mappings, and a plain dict by its type: a reply record's detail is
        # hundreds of strings, dicts and lists, and an isinstance check against Mapping goes
        # through the ABC machinery.
        if isinstance(value, str):
            return self.text(value) if self._secrets else value
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        if type(value) is dict or isinstance(value, Mapping):
            return {k: self.value(v) for k, v in value.items()}
        return value


def environment_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of environment variables named like credentials (…_KEY, …_TOKEN, …_SECRET)."""
    environ = os.environ if environ is None else environ
    return [value for name, value in environ.items() if _SECRET_NAME.search(name) and value]


def settings_secrets(settings: Settings, environ: Mapping[str, str] | None = None) -> list[str]:
    """Every secret the settings hold (see the module docstring); `environ` is where `*_env`
    settings' variables are read."""
    from threadline.config import SECRET_FIELDS

    environ = os.environ if environ is None else environ
    found: list[str] = []

    def walk(value: Any, key: str = "") -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(v, str(k))
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif isinstance(value, str) and key in SECRET_FIELDS:
            found.append(value)
        elif isinstance(value, str) and key.endswith("_env") and environ.get(value):
            found.append(environ[value])

    walk(settings.model_dump())
    for channel in settings.channels.values():
        found += [value for name in channel.secret_fields
                  if isinstance(value := getattr(channel, name, None), str)]
    for server in settings.mcp_servers.values():
        found += [*server.env.values(), *server.headers.values()]
    try:
        password = unquote(urlsplit(settings.store.url).password or "")
    except ValueError:
        password = None
    if password:
        found.append(str(password))
    return found


def redactor_for(settings: Settings | None = None,
                 environ: Mapping[str, str] | None = None) -> Redactor:
    """The redactor of a process: the settings' secrets and the environment's."""
    secrets = environment_secrets(environ)
    if settings is not None:
        secrets += settings_secrets(settings, environ)
    return Redactor(secrets)
