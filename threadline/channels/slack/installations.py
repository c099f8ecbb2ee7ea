"""Where a Slack app installed in many workspaces keeps each one's tokens, encrypted at rest.

The backend gives the storage (`SlackInstallationBook`: slack_sdk's installation store and an
OAuth state store in its own database, the list of installed workspaces, purging one
workspace's history); this module wraps the installation store so that every token (bot, user,
and their refresh tokens) is encrypted with Fernet before it reaches the database and decrypted
after it comes back. Without the key (`token_key`, ${THREADLINE_SLACK_TOKEN_KEY}) a row of the
database is useless to whoever reads it; a wrong key is said plainly ("was the key changed?"), never
mistaken for "not installed".
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import datetime
from logging import Logger
from typing import Protocol, TypeVar, runtime_checkable

from cryptography.fernet import Fernet, InvalidToken
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.installation_store.models.bot import Bot
from slack_sdk.oauth.installation_store.models.installation import Installation
from slack_sdk.oauth.state_store.async_state_store import AsyncOAuthStateStore

from threadline.errors import ConfigError

TOKEN_KEY_VARIABLE = "THREADLINE_SLACK_TOKEN_KEY"
# The token fields of slack_sdk's records; everything else (ids, names, scopes) stays readable.
_INSTALLATION_TOKENS = ("bot_token", "bot_refresh_token", "user_token", "user_refresh_token")
_BOT_TOKENS = ("bot_token", "bot_refresh_token")
Record = TypeVar("Record", Installation, Bot)


@dataclass(frozen=True, slots=True)
class InstalledWorkspace:
    """One workspace the app is installed in, as `threadline check` lists it."""

    team_id: str
    team_name: str | None
    bot_user_id: str | None
    installed_at: datetime


@runtime_checkable
class SlackInstallationBook(Protocol):
    """What a backend keeps for a Slack app installed by OAuth (its `platform_parts["slack"]`).

    It need not encrypt: `EncryptedInstallationStore` wraps whatever `installation_store`
    gives. States must survive a restart and be consumed once, whichever replica sees the
    redirect first.
    """

    def installation_store(self, client_id: str) -> AsyncInstallationStore:
        """slack_sdk's installation store for this app (rows as given: encrypt before)."""
        ...

    def state_store(self, expiration_seconds: int) -> AsyncOAuthStateStore:
        """OAuth `state` values: issued on the install page, consumed once on the redirect."""
        ...

    async def workspaces(self, client_id: str) -> list[InstalledWorkspace]:
        """The workspaces with a bot token now, newest installation first."""
        ...

    async def purge_workspace(self, team_id: str) -> int:
        """Delete every conversation of workspace `team_id` (`slack:TEAM:...`) and what is
        kept beside it; returns the number of turns deleted."""
        ...


MAKE_A_KEY = ('make one with `python -c "from cryptography.fernet import Fernet; '
              'print(Fernet.generate_key().decode())"`')


def key_problem(key: str) -> str | None:
    """What is wrong with `key` as a Fernet key, or None."""
    try:
        Fernet(key.encode())
    except ValueError as error:
        return (f"token_key is not a Fernet key (32 url-safe base64 bytes, 44 characters: "
                f"{error}); {MAKE_A_KEY}")
    return None


class TokenCipher:
    """Fernet over the `token_key` setting (${THREADLINE_SLACK_TOKEN_KEY})."""

    def __init__(self, key: str | None, *, channel: str) -> None:
        where = f"Slack channel {channel!r}"
        if not key:
            raise ConfigError(
                f"{where}: oauth keeps each workspace's tokens encrypted and needs a key "
                f"(token_key: ${{{TOKEN_KEY_VARIABLE}}}); {MAKE_A_KEY} and keep it beside the "
                "other secrets (losing it means installing the app again)")
        problem = key_problem(key)
        if problem is not None:
            raise ConfigError(f"{where}: {problem}")
        self._fernet = Fernet(key.encode())
        self._channel = channel

    def encrypt(self, token: str) -> str:
        return self._fernet.encrypt(token.encode()).decode()

    def decrypt(self, stored: str) -> str:
        try:
            return self._fernet.decrypt(stored.encode()).decode()
        except InvalidToken as error:
            raise ConfigError(
                f"Slack channel {self._channel!r}: {TOKEN_KEY_VARIABLE} does not decrypt the "
                "stored workspace tokens; was the key changed? Set the key they were saved "
                "with, or install the app in each workspace again") from error


class EncryptedInstallationStore(AsyncInstallationStore):
    """slack_sdk's installation store with every token encrypted on the way in, decrypted on
    the way out (bolt's authorize, token rotator and revocation listeners use it unchanged)."""

    def __init__(self, inner: AsyncInstallationStore, cipher: TokenCipher) -> None:
        self._inner = inner
        self._cipher = cipher

    @property
    def logger(self) -> Logger:
        return self._inner.logger

    async def async_save(self, installation: Installation) -> None:
        await self._inner.async_save(self._sealed(installation, _INSTALLATION_TOKENS))

    async def async_save_bot(self, bot: Bot) -> None:
        await self._inner.async_save_bot(self._sealed(bot, _BOT_TOKENS))

    async def async_find_bot(self, *, enterprise_id: str | None, team_id: str | None,
                             is_enterprise_install: bool | None = False) -> Bot | None:
        found = await self._inner.async_find_bot(
            enterprise_id=enterprise_id, team_id=team_id,
            is_enterprise_install=is_enterprise_install)
        return None if found is None else self._opened(found, _BOT_TOKENS)

    async def async_find_installation(
        self, *, enterprise_id: str | None, team_id: str | None, user_id: str | None = None,
        is_enterprise_install: bool | None = False,
    ) -> Installation | None:
        found = await self._inner.async_find_installation(
            enterprise_id=enterprise_id, team_id=team_id, user_id=user_id,
            is_enterprise_install=is_enterprise_install)
        return None if found is None else self._opened(found, _INSTALLATION_TOKENS)

    async def async_delete_bot(self, *, enterprise_id: str | None, team_id: str | None
                               ) -> None:
        await self._inner.async_delete_bot(enterprise_id=enterprise_id, team_id=team_id)

    async def async_delete_installation(self, *, enterprise_id: str | None,
                                        team_id: str | None, user_id: str | None = None
                                        ) -> None:
        await self._inner.async_delete_installation(enterprise_id=enterprise_id,
                                                    team_id=team_id, user_id=user_id)

    def _sealed(self, record: Record, fields: tuple[str, ...]) -> Record:
        """A copy with its tokens encrypted (bolt keeps using the one it gave us)."""
        sealed = copy.copy(record)
        for name in fields:
            token = getattr(record, name, None)
            if token:
                setattr(sealed, name, self._cipher.encrypt(token))
        return sealed

    def _opened(self, record: Record, fields: tuple[str, ...]) -> Record:
        for name in fields:
            stored = getattr(record, name, None)
            if stored:
                setattr(record, name, self._cipher.decrypt(stored))
        return record
