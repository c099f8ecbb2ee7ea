"""A Slack app's installations in the history's database (migration `slack_installations`).

slack_sdk's own SQLAlchemy installation store reads and writes the rows, on this database's
engine: PostgreSQL's async engine directly, SQLite through the sync store run off the event
loop (one thread hop per call; installs and token look-ups are rare next to turns). The tokens
arrive here already encrypted (`threadline.channels.slack.installations`).

OAuth states are ours rather than slack_sdk's: its `consume` reads the row and then deletes it,
so two replicas handed the same redirect could both accept it. Here consuming is one
`DELETE ... WHERE state = :state AND not expired`, and only the call that deleted the row wins.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.installation_store.models.bot import Bot
from slack_sdk.oauth.installation_store.models.installation import Installation
from slack_sdk.oauth.installation_store.sqlalchemy import (
    AsyncSQLAlchemyInstallationStore,
    SQLAlchemyInstallationStore,
)
from slack_sdk.oauth.state_store.async_state_store import AsyncOAuthStateStore
from sqlalchemy import Engine
from sqlalchemy.ext.asyncio import AsyncEngine

from threadline.backends.sql.operations import SqlRunner
from threadline.backends.sql.store import SqlConversationStore
from threadline.channels.slack.installations import InstalledWorkspace
from threadline.errors import ConfigError

INSTALLATIONS_TABLE = "threadline_slack_installations"
BOTS_TABLE = "threadline_slack_bots"
# Every table whose rows belong to one conversation: a purged workspace leaves none behind.
_log = logging.getLogger(__name__)  # slack_sdk's stores take a standard logger
_CONVERSATION_TABLES = ("threadline_messages", "threadline_conversations", "threadline_inbox",
                        "threadline_deliveries", "threadline_reply_records",
                        "threadline_schedules", "threadline_handoffs",
                        "threadline_tool_approvals")


class _ThreadedInstallationStore(AsyncInstallationStore):
    """slack_sdk's sync SQLAlchemy store behind the async interface bolt calls (SQLite)."""

    def __init__(self, inner: SQLAlchemyInstallationStore) -> None:
        self._inner = inner

    @property
    def logger(self) -> Any:
        return self._inner.logger

    async def async_save(self, installation: Installation) -> None:
        await asyncio.to_thread(self._inner.save, installation)

    async def async_save_bot(self, bot: Bot) -> None:
        await asyncio.to_thread(self._inner.save_bot, bot)

    async def async_find_bot(self, *, enterprise_id: str | None, team_id: str | None,
                             is_enterprise_install: bool | None = False) -> Bot | None:
        found: Bot | None = await asyncio.to_thread(
            lambda: self._inner.find_bot(enterprise_id=enterprise_id, team_id=team_id,
                                         is_enterprise_install=is_enterprise_install))
        return found

    async def async_find_installation(
        self, *, enterprise_id: str | None, team_id: str | None, user_id: str | None = None,
        is_enterprise_install: bool | None = False,
    ) -> Installation | None:
        found: Installation | None = await asyncio.to_thread(
            lambda: self._inner.find_installation(
                enterprise_id=enterprise_id, team_id=team_id, user_id=user_id,
                is_enterprise_install=is_enterprise_install))
        return found

    async def async_delete_bot(self, *, enterprise_id: str | None, team_id: str | None
                               ) -> None:
        await asyncio.to_thread(
            lambda: self._inner.delete_bot(enterprise_id=enterprise_id, team_id=team_id))

    async def async_delete_installation(self, *, enterprise_id: str | None,
                                        team_id: str | None, user_id: str | None = None
                                        ) -> None:
        await asyncio.to_thread(lambda: self._inner.delete_installation(
            enterprise_id=enterprise_id, team_id=team_id, user_id=user_id))


def _issue(conn: SqlRunner, state: str, expires_us: int, now_us: int) -> None:
    conn.rowcount("DELETE FROM threadline_slack_oauth_states WHERE expires_us <= :now",
                  {"now": now_us})
    conn.rowcount("INSERT INTO threadline_slack_oauth_states (state, expires_us) "
                  "VALUES (:state, :expires)", {"state": state, "expires": expires_us})


def _consume(conn: SqlRunner, state: str, now_us: int) -> bool:
    return conn.rowcount("DELETE FROM threadline_slack_oauth_states "
                         "WHERE state = :state AND expires_us > :now",
                         {"state": state, "now": now_us}) == 1


class SqlOAuthStateStore(AsyncOAuthStateStore):
    """OAuth states in `threadline_slack_oauth_states`: they survive a restart, and each is
    consumed by exactly one redirect (see the module docstring)."""

    def __init__(self, store: SqlConversationStore, *, expiration_seconds: int) -> None:
        self._store = store
        self.expiration_seconds = expiration_seconds

    @property
    def logger(self) -> logging.Logger:
        return _log

    async def async_issue(self, *args: Any, **kwargs: Any) -> str:
        state = uuid.uuid4().hex
        now_us = time.time_ns() // 1000
        await self._store.run("keep a Slack OAuth state", _issue, state,
                              now_us + self.expiration_seconds * 1_000_000, now_us, write=True)
        return state

    async def async_consume(self, state: str) -> bool:
        if not state:
            return False
        return await self._store.run("consume a Slack OAuth state", _consume, state,
                                     time.time_ns() // 1000, write=True)


def _installed_at(value: object) -> datetime:
    """slack_sdk writes naive UTC datetimes; SQLite's driver hands them back as text."""
    found = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return found.replace(tzinfo=UTC) if found.tzinfo is None else found


def _workspaces(conn: SqlRunner, client_id: str) -> list[InstalledWorkspace]:
    rows = conn.rows(
        f"SELECT team_id, team_name, bot_user_id, installed_at FROM {BOTS_TABLE} "
        "WHERE client_id = :client_id AND bot_token IS NOT NULL ORDER BY installed_at DESC",
        {"client_id": client_id})
    latest: dict[str, InstalledWorkspace] = {}
    for team_id, team_name, bot_user_id, installed_at in rows:
        latest.setdefault(str(team_id), InstalledWorkspace(
            team_id=str(team_id), team_name=team_name, bot_user_id=bot_user_id,
            installed_at=_installed_at(installed_at)))
    return list(latest.values())


def _purge(conn: SqlRunner, prefix: str) -> int:
    deleted = 0
    for table in _CONVERSATION_TABLES:
        count = conn.rowcount(f"DELETE FROM {table} WHERE conversation_id LIKE :prefix",
                              {"prefix": prefix})
        if table == "threadline_messages":
            deleted = count
    return deleted


class SqlSlackInstallations:
    """The Slack installation book (`SlackInstallationBook`) over the store's database."""

    def __init__(self, store: SqlConversationStore) -> None:
        self.store = store
        self._engine: Engine | AsyncEngine | None = None

    def installation_store(self, client_id: str) -> AsyncInstallationStore:
        if self._engine is None:
            self._engine = self.store.alchemy_engine()
        if isinstance(self._engine, AsyncEngine):
            return AsyncSQLAlchemyInstallationStore(
                client_id=client_id, engine=self._engine, bots_table_name=BOTS_TABLE,
                installations_table_name=INSTALLATIONS_TABLE, logger=_log)
        return _ThreadedInstallationStore(SQLAlchemyInstallationStore(
            client_id=client_id, engine=self._engine, bots_table_name=BOTS_TABLE,
            installations_table_name=INSTALLATIONS_TABLE, logger=_log))

    def state_store(self, expiration_seconds: int) -> AsyncOAuthStateStore:
        return SqlOAuthStateStore(self.store, expiration_seconds=expiration_seconds)

    async def workspaces(self, client_id: str) -> list[InstalledWorkspace]:
        return await self.store.run("list Slack workspaces", _workspaces, client_id)

    async def purge_workspace(self, team_id: str) -> int:
        if not team_id.isalnum():
            raise ConfigError(f"not a Slack team id: {team_id!r} (letters and digits only)")
        return await self.store.run("purge a Slack workspace's history", _purge,
                                    f"slack:{team_id}:%", write=True)
