"""A Slack app installed in many workspaces: bolt's OAuth flow, and each workspace's own token.

Installing: `install_path` answers with a redirect to Slack's authorize page carrying a fresh
`state` (kept in the database, so any replica may see the redirect back, and only once) and the
same value in a cookie; Slack sends the installer to `redirect_path` with a code, which bolt's
`AsyncOAuthFlow` exchanges (`oauth.v2.access`) for the workspace's tokens and saves through the
encrypted installation store (`slack.installations`).

Answering: one authorize (bolt's `AsyncInstallationStoreAuthorize`) finds a workspace's
installation for inbound requests and outbound replies (remembered for `_REMEMBER_SECONDS`),
and refreshes a rotating token `rotate_minutes_before_expiry` before it expires, saving the
new pair before it is used (one refresh per workspace at a time; a replica that lost the race
uses the winner's tokens). A
workspace without an installation (uninstalled, tokens revoked) is logged as
`slack_workspace_not_installed`: its events are acknowledged and dropped by bolt, and a reply
still owed there fails as a permanent channel error (logged by the delivery, never retried).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.authorization.async_authorize import AsyncInstallationStoreAuthorize
from slack_bolt.authorization.authorize_result import AuthorizeResult
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.listener.async_builtins import AsyncTokenRevocationListeners
from slack_bolt.oauth.async_callback_options import (
    AsyncCallbackOptions,
    AsyncFailureArgs,
    AsyncSuccessArgs,
)
from slack_bolt.oauth.async_oauth_flow import AsyncOAuthFlow
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackTokenRotationError
from slack_sdk.oauth.installation_store.models.installation import Installation
from slack_sdk.web.async_client import AsyncWebClient

from threadline.channels.slack.directory import SlackDirectory
from threadline.channels.slack.installations import (
    EncryptedInstallationStore,
    InstalledWorkspace,
    SlackInstallationBook,
    TokenCipher,
)
from threadline.errors import ChannelPermanentError, ConfigError

log = structlog.get_logger("threadline.channels.slack")
_bolt_log = logging.getLogger("threadline.channels.slack.bolt")
# A replica whose token refresh lost the race looks this often for the winner's tokens (well
# within Slack's 3 seconds for the event it is authorizing).
_RACE_LOOKS = 10
# A workspace's authorization is remembered this long: without it each event and each reply
# reads the installation store two to four times. Another replica's revocation is seen within
# it (until then a reply fails with Slack's token_revoked); far shorter than the rotation
# margin (at least a minute), so a remembered token never expires in use.
_REMEMBER_SECONDS = 30.0
_RACE_PAUSE_SECONDS = 0.1


@dataclass(frozen=True, slots=True, kw_only=True)
class SlackOAuth:
    """The OAuth settings of one Slack channel, with the backend's book and the token cipher."""

    client_id: str
    client_secret: str
    cipher: TokenCipher
    # None: the backend keeps no installations (the channel refuses to start, saying so).
    book: SlackInstallationBook | None
    scopes: tuple[str, ...]
    user_scopes: tuple[str, ...] = ()
    install_path: str = "/slack/install"
    redirect_path: str = "/slack/oauth_redirect"
    redirect_uri: str | None = None
    state_expiration_seconds: int = 600
    token_rotation: bool = True
    rotate_minutes_before_expiry: int = 120
    purge_on_uninstall: bool = False
    authorize_url: str | None = None


class _WorkspaceAuthorize(AsyncInstallationStoreAuthorize):
    """bolt's authorize from the installation store, saying in our log when a workspace has
    no installation, and leaving rotating tokens alone when rotation is off."""

    def __init__(self, *, rotate: bool, channel: str, **settings: Any) -> None:
        super().__init__(**settings)
        self._rotate = rotate
        self._rotating: dict[str, asyncio.Lock] = {}  # one refresh per workspace at a time
        # Workspaces authorized lately, until when (monotonic), as bolt answered.
        self._recent: dict[str | None, tuple[float, AuthorizeResult]] = {}
        self._log = log.bind(channel=channel)

    async def __call__(self, *, context: AsyncBoltContext, enterprise_id: str | None,
                       team_id: str | None, user_id: str | None, **actor: Any
                       ) -> AuthorizeResult | None:
        remembered = self._recent.get(team_id)
        if remembered is not None and remembered[0] > time.monotonic():
            return remembered[1]
        found = await super().__call__(context=context, enterprise_id=enterprise_id,
                                       team_id=team_id, user_id=user_id, **actor)
        if found is not None and found.user_token is None:  # nobody's own token in it
            self._recent[team_id] = (time.monotonic() + _REMEMBER_SECONDS, found)
        if found is None:
            self._log.warning("slack_workspace_not_installed", team_id=team_id,
                              outcome="not answered: the app was uninstalled there or its "
                                      "tokens were revoked (install it again to answer)")
        return found

    def forget(self, team_id: str) -> None:
        """Drop what is remembered of a workspace (its tokens were deleted)."""
        self._recent.pop(team_id, None)
        self.authorize_result_cache.clear()

    async def _rotate_and_save_tokens_if_necessary(
            self, installation: Installation | None) -> Installation | None:
        """Refresh the tokens when due, once: requests of one workspace wait for each other
        here, and a refresh that another replica won (Slack takes a refresh token once) is
        answered with the tokens that replica saved."""
        if not self._rotate or installation is None or not self._due(installation):
            return None
        async with self._rotating.setdefault(str(installation.team_id), asyncio.Lock()):
            newer = await self._rotated_since(installation)
            if newer is not None:
                return newer
            try:
                refreshed: Installation | None = (
                    await super()._rotate_and_save_tokens_if_necessary(installation))
            except SlackTokenRotationError:
                newer = await self._saved_by_the_winner(installation)
                if newer is None:
                    raise
                self._log.info("slack_tokens_rotated_elsewhere", team_id=newer.team_id)
                return newer
        if refreshed is not None:
            self._log.info("slack_tokens_rotated", team_id=refreshed.team_id,
                           expires_at=refreshed.bot_token_expires_at)
        return refreshed

    def _due(self, installation: Installation) -> bool:
        """Whether a token expires within the rotation margin (the rotator's own test)."""
        horizon = time.time() + self.token_rotation_expiration_minutes * 60
        return any(expires is not None and expires <= horizon
                   for expires in (installation.bot_token_expires_at,
                                   installation.user_token_expires_at))

    async def _saved_by_the_winner(self, installation: Installation) -> Installation | None:
        """After a refresh Slack refused: the tokens another replica got and is saving (it
        may not have written them yet), looked for a short while."""
        for _ in range(_RACE_LOOKS):
            newer = await self._rotated_since(installation)
            if newer is not None:
                return newer
            await asyncio.sleep(_RACE_PAUSE_SECONDS)
        return None

    async def _rotated_since(self, installation: Installation) -> Installation | None:
        """The workspace's installation as stored now, when its tokens changed since."""
        stored = await self.installation_store.async_find_installation(
            enterprise_id=installation.enterprise_id, team_id=installation.team_id,
            user_id=None)
        if stored is None or stored.bot_token == installation.bot_token:
            return None
        return stored


@dataclass(slots=True)
class SlackWorkspace:
    """One installed workspace as this process talks to it: a client holding its current
    token, and its directory of names (cached per workspace)."""

    team_id: str
    client: AsyncWebClient
    directory: SlackDirectory


class SlackWorkspaces:
    """The installed workspaces of one channel: the OAuth flow, the authorize, a client each."""

    def __init__(self, oauth: SlackOAuth, *, client: AsyncWebClient,
                 new_client: Callable[[], AsyncWebClient], channel: str,
                 on_installed: Callable[[Installation], None]) -> None:
        if oauth.book is None:
            raise ConfigError(
                f"Slack channel {channel!r}: oauth keeps each workspace's installation in the "
                "database, and this store keeps none; use the sql backend (store.url "
                "sqlite:///PATH or postgresql+asyncpg://USER@HOST/DB)")
        self.oauth = oauth
        self.book: SlackInstallationBook = oauth.book
        self._client = client  # without a token: oauth.v2.access, auth.test with a token
        self._new_client = new_client
        self._channel = channel
        self._on_installed = on_installed
        self.store = EncryptedInstallationStore(self.book.installation_store(oauth.client_id),
                                                oauth.cipher)
        self.authorize = _WorkspaceAuthorize(
            rotate=oauth.token_rotation, channel=channel, logger=_bolt_log,
            installation_store=self.store, client_id=oauth.client_id,
            client_secret=oauth.client_secret,
            token_rotation_expiration_minutes=oauth.rotate_minutes_before_expiry,
            cache_enabled=True, client=client)
        settings = AsyncOAuthSettings(
            client_id=oauth.client_id, client_secret=oauth.client_secret,
            scopes=list(oauth.scopes), user_scopes=list(oauth.user_scopes),
            redirect_uri=oauth.redirect_uri, install_path=oauth.install_path,
            install_page_rendering_enabled=False, redirect_uri_path=oauth.redirect_path,
            authorization_url=oauth.authorize_url, installation_store=self.store,
            state_store=self.book.state_store(oauth.state_expiration_seconds),
            state_expiration_seconds=oauth.state_expiration_seconds,
            callback_options=AsyncCallbackOptions(success=self._installed,
                                                  failure=self._refused),
            logger=_bolt_log)
        settings.authorize = self.authorize  # the one with our client and our log
        self.flow = AsyncOAuthFlow(client=client, settings=settings, logger=_bolt_log)
        self._by_team: dict[str, SlackWorkspace] = {}
        self._log = log.bind(channel=channel)

    def workspace(self, team_id: str, token: str) -> SlackWorkspace:
        """The workspace's client, now holding `token` (rotation changes it in place)."""
        found = self._by_team.get(team_id)
        if found is None:
            client = self._new_client()
            found = self._by_team[team_id] = SlackWorkspace(team_id, client,
                                                            SlackDirectory(client))
        found.client.token = token
        return found

    async def authorized(self, team_id: str, *, conversation_id: str) -> SlackWorkspace:
        """The workspace with a valid token (refreshed when due), or a permanent error when
        it has no installation."""
        found = await self.authorize(context=AsyncBoltContext(client=self._client),
                                     enterprise_id=None, team_id=team_id, user_id=None)
        if found is None or not found.bot_token:
            raise ChannelPermanentError(
                f"Slack channel {self._channel!r}: workspace {team_id} has no installation "
                f"(uninstalled, or its tokens were revoked), so conversation "
                f"{conversation_id!r} cannot be answered there; install the app again")
        return self.workspace(team_id, found.bot_token)

    def forget(self, team_id: str) -> None:
        """Drop the workspace's client and every remembered authorization (its tokens are
        gone)."""
        self._by_team.pop(team_id, None)
        self.authorize.forget(team_id)

    async def installed(self) -> list[InstalledWorkspace]:
        """The installed workspaces, newest first; the newest one's token is decrypted to
        prove the key (one key seals them all)."""
        workspaces = await self.book.workspaces(self.oauth.client_id)
        if workspaces:
            await self.store.async_find_bot(enterprise_id=None, team_id=workspaces[0].team_id)
        return workspaces

    def serve_installs(self, server: web.Application) -> None:
        """The install and redirect routes of bolt's OAuth flow (a person's browser, not
        Slack, calls them: nothing to verify but the state, which the flow checks)."""
        flow = self.flow

        async def install(request: web.Request) -> web.Response:
            return await to_aiohttp_response(
                await flow.handle_installation(await to_bolt_request(request)))

        async def redirected(request: web.Request) -> web.Response:
            return await to_aiohttp_response(
                await flow.handle_callback(await to_bolt_request(request)))

        server.router.add_get(self.oauth.install_path, install)
        server.router.add_get(self.oauth.redirect_path, redirected)

    async def on_uninstalled(self, context: AsyncBoltContext) -> None:
        """bolt's `app_uninstalled` listener: the workspace's tokens go, its history as set."""
        team_id = str(context.team_id or "")
        if not team_id:
            return
        await self.store.async_delete_all(enterprise_id=context.enterprise_id, team_id=team_id)
        self.forget(team_id)
        history = "kept"
        if self.oauth.purge_on_uninstall:
            history = f"purged ({await self.book.purge_workspace(team_id)} turns)"
        self._log.warning("slack_app_uninstalled", team_id=team_id, tokens="deleted",
                          history=history)

    async def on_tokens_revoked(self, event: dict[str, Any], context: AsyncBoltContext
                                ) -> None:
        """bolt's `tokens_revoked` listener: the tokens are deleted (bolt's own handler); with
        the bot's among them the workspace is not answered until the app is installed again."""
        team_id = str(context.team_id or "")
        if not team_id:
            return
        await AsyncTokenRevocationListeners(self.store).handle_tokens_revoked_events(
            event, context)
        self.forget(team_id)
        tokens = event.get("tokens") or {}
        bot = bool(tokens.get("bot"))
        self._log.warning("slack_tokens_revoked", team_id=team_id, bot=bot,
                          users=len(tokens.get("oauth") or ()),
                          outcome="tokens deleted; the workspace is not answered until the "
                                  "app is installed again" if bot else
                                  "the people's tokens deleted; the bot still answers")

    async def _installed(self, args: AsyncSuccessArgs) -> BoltResponse:
        installation = args.installation
        self._log.info("slack_workspace_installed", team_id=installation.team_id,
                       team_name=installation.team_name, bot_user_id=installation.bot_user_id,
                       rotating=installation.bot_refresh_token is not None)
        self._on_installed(installation)
        return await args.default.success(args)

    async def _refused(self, args: AsyncFailureArgs) -> BoltResponse:
        self._log.warning("slack_install_refused", reason=args.reason,
                          error=str(args.error) if args.error else None,
                          outcome="nothing stored; the installer sees the failure page")
        return await args.default.failure(args)
