"""Display names and time zones of Slack users and names of channels, looked up once and
cached.

Every inbound message needs its author's name and the names of the people it mentions;
asking `users.info` each time would cost a Web API call (and rate-limit budget) per message.
Answers are kept in a bounded LRU; concurrent lookups of the same id share one call. One
message asks at most `MAX_LOOKUPS_PER_MESSAGE` ids Slack has not told us yet (a message that
mentions 10,000 people must not cost 10,000 calls): the rest keep their ids as names. A lookup
that fails for a transient reason is not cached, so the next message tries again; an id Slack
says does not exist is cached as itself.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import structlog
from aiohttp import ClientError
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

log = structlog.get_logger("threadline.channels.slack")

MAX_LOOKUPS_PER_MESSAGE = 20
_GONE = frozenset({"user_not_found", "channel_not_found", "missing_scope", "not_in_channel"})


class _Cache:
    """A bounded LRU of looked-up names with in-flight lookups shared."""

    def __init__(self, *, size: int) -> None:
        self._size = size
        self._names: OrderedDict[str, str | None] = OrderedDict()
        self._pending: dict[str, asyncio.Task[tuple[str | None, bool]]] = {}

    def known(self, key: str) -> bool:
        return key in self._names or key in self._pending

    async def get(
        self, key: str, lookup: Callable[[str], Awaitable[tuple[str | None, bool]]]
    ) -> str | None:
        if key in self._names:
            self._names.move_to_end(key)
            return self._names[key]
        task = self._pending.get(key)
        if task is None:
            task = asyncio.ensure_future(lookup(key))
            self._pending[key] = task
            task.add_done_callback(lambda _: self._pending.pop(key, None))
        name, cacheable = await asyncio.shield(task)
        if cacheable:
            self._names[key] = name
            if len(self._names) > self._size:
                self._names.popitem(last=False)
        return name


class SlackDirectory:
    """Cached `users.info` / `conversations.info` lookups for one workspace's bot token."""

    def __init__(self, client: AsyncWebClient, *, size: int = 10_000) -> None:
        self._client = client
        self._users = _Cache(size=size)
        self._channels = _Cache(size=size)
        self._zones = _Cache(size=size)

    async def user_names(self, user_ids: Iterable[str]) -> dict[str, str]:
        """Display names of these users by id; an id whose name is unknown maps to itself."""
        ids = list(dict.fromkeys(user_ids))
        unknown = [i for i in ids if not self._users.known(i)]
        if len(unknown) > MAX_LOOKUPS_PER_MESSAGE:
            log.warning("slack_lookups_capped", mentioned=len(ids),
                        looked_up=MAX_LOOKUPS_PER_MESSAGE,
                        outcome="the others are shown by their user ids")
            skipped = set(unknown[MAX_LOOKUPS_PER_MESSAGE:])
            ids = [i for i in ids if i not in skipped]
        else:
            skipped = set()
        names = await asyncio.gather(*(self._users.get(i, self._lookup_user) for i in ids))
        found = {i: n or i for i, n in zip(ids, names, strict=True)}
        return {**found, **{i: i for i in skipped}}

    async def channel_name(self, channel_id: str) -> str | None:
        """The channel's name (`general`), or None for DMs and channels the bot cannot read."""
        return await self._channels.get(channel_id, self._lookup_channel)

    async def user_timezone(self, user_id: str) -> str | None:
        """The user's IANA time zone (`tz` in `users.info`), or None when Slack gives none."""
        return await self._zones.get(user_id, self._lookup_zone)

    async def _lookup_zone(self, user_id: str) -> tuple[str | None, bool]:
        data, cacheable = await self._fetch("users.info", user_id, user=user_id)
        if data is None:
            return None, cacheable
        return (data.get("user") or {}).get("tz") or None, True

    async def _lookup_user(self, user_id: str) -> tuple[str | None, bool]:
        data, cacheable = await self._fetch("users.info", user_id, user=user_id)
        if data is None:
            return None, cacheable
        user = data.get("user") or {}
        profile = user.get("profile") or {}
        name = (profile.get("display_name") or profile.get("real_name")
                or user.get("real_name") or user.get("name"))
        return name or None, True

    async def _lookup_channel(self, channel_id: str) -> tuple[str | None, bool]:
        data, cacheable = await self._fetch("conversations.info", channel_id, channel=channel_id)
        if data is None:
            return None, cacheable
        return (data.get("channel") or {}).get("name") or None, True

    async def _fetch(
        self, method: str, key: str, **params: str
    ) -> tuple[dict[str, Any] | None, bool]:
        """(response data or None, whether the outcome may be cached)."""
        try:
            response = await self._client.api_call(method, http_verb="GET", params=params)
        except SlackApiError as error:
            code = str(error.response.get("error", ""))
            log.warning("slack_lookup_failed", method=method, id=key, error=code)
            return None, code in _GONE
        except (ClientError, TimeoutError) as error:
            log.warning("slack_lookup_failed", method=method, id=key, error=repr(error))
            return None, False
        return (response.data if isinstance(response.data, dict) else None), True
