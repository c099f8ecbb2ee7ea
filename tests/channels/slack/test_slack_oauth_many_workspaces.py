"""A Slack app installed in many workspaces: each installed by OAuth over real HTTP, each answered
with its own token, cut off when its tokens are revoked, its tokens unreadable in the database
without the key, and a rotating token refreshed before it expires."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from typing import Any

import pytest
from cryptography.fernet import Fernet
from structlog.testing import capture_logs

from tests.channels.recording import RecordingEvents
from tests.channels.slack.oauth_rig import ALPHA, BETA, KEY, oauth_channel, oauth_rig
from tests.conftest import drop_pg_schema, fresh_pg_schema, pg_url_or_skip
from tests.fakes.slack import FakeSlack
from threadline.backends.sql import SqlConversationStore
from threadline.errors import ChannelPermanentError, ConfigError


@pytest.fixture(params=["sqlite", "postgresql"])
async def database(request: pytest.FixtureRequest, sqlite_url: str) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield sqlite_url
        return
    url = await fresh_pg_schema(pg_url_or_skip())
    try:
        yield url
    finally:
        await drop_pg_schema(url)


async def raw_rows(url: str, table: str, columns: str = "*") -> list[tuple[Any, ...]]:
    """`columns` of every row of `table` as the database driver returns them."""
    if url.startswith("sqlite"):
        path = url.split(":///", 1)[1]
        with sqlite3.connect(path) as connection:
            return list(connection.execute(f"SELECT {columns} FROM {table}"))
    import asyncpg

    base, _, options = url.partition("?")
    schema = options.rsplit("search_path=", 1)[-1]
    connection = await asyncpg.connect(base.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        return [tuple(r) for r in await connection.fetch(
            f"SELECT {columns} FROM {schema}.{table}")]
    finally:
        await connection.close()


async def test_two_workspaces_install_and_each_is_answered_with_its_own_token(
        database: str) -> None:
    async with oauth_rig(database) as rig:
        await rig.install(ALPHA)
        await rig.install(BETA)

        assert await rig.say(ALPHA, "hello from alpha") == 200
        assert await rig.say(BETA, "hello from beta") == 200
        await rig.fake.wait_for_calls("chat.postMessage", 2)

        assert rig.posts_by_team() == {ALPHA: ["echo: hello from alpha"],
                                       BETA: ["echo: hello from beta"]}
        # The same channel id in two workspaces is two conversations: history stays apart.
        alpha = await rig.store.get(f"slack:{ALPHA}:C0GENERAL")
        beta = await rig.store.get(f"slack:{BETA}:C0GENERAL")
        assert [m.content for m in alpha] == ["hello from alpha"]
        assert [m.content for m in beta] == ["hello from beta"]
        # Each workspace's bot is known as ours (a mention of it addresses the first agent).
        assert rig.channel.identity is not None
        assert {"U0ALPHABOT", "U0BETABOT"} <= set(rig.channel.identity.aliases)


async def test_tokens_revoked_removes_that_workspace_and_its_turns_are_not_answered(
        sqlite_url: str) -> None:
    async with oauth_rig(sqlite_url) as rig:
        await rig.install(ALPHA)
        await rig.install(BETA)
        assert await rig.say(ALPHA, "before") == 200
        owed = await rig.events.next_inbound()
        await rig.fake.wait_for_calls("chat.postMessage", 1)

        revoked = rig.fake.revoke(ALPHA)
        with capture_logs() as logs:
            delivery = await rig.fake.deliver_event(rig.channel.events_url, revoked,
                                                    team_id=ALPHA)
            assert delivery.status == 200
            assert await rig.say(ALPHA, "after the revocation") == 200
            assert await rig.say(BETA, "beta still here") == 200
            await rig.fake.wait_for_calls("chat.postMessage", 2)
            with pytest.raises(ChannelPermanentError, match=f"workspace {ALPHA} has no "
                                                            "installation"):
                await rig.channel.send_reply(owed, "a reply still owed to alpha")

        assert rig.posts_by_team() == {ALPHA: ["echo: before"], BETA: ["echo: beta still here"]}
        assert [m.content for m in await rig.store.get(f"slack:{ALPHA}:C0GENERAL")] == ["before"]
        assert await raw_rows(sqlite_url, "threadline_slack_bots", "team_id") == [(BETA,)]
        said = [entry["event"] for entry in logs]
        assert "slack_tokens_revoked" in said and "slack_workspace_not_installed" in said


async def test_tokens_are_not_readable_in_the_database_without_the_key(database: str) -> None:
    async with oauth_rig(database) as rig:
        rig.fake.token_lifetime = 43_200  # rotating tokens: refresh tokens are kept too
        await rig.install(ALPHA)
        await rig.install(BETA)
        secrets = [*rig.fake.tokens, *(t.refresh_token for t in rig.fake.tokens.values()
                                       if t.refresh_token)]
        assert len(secrets) == 4

        rows = [*await raw_rows(database, "threadline_slack_installations"),
                *await raw_rows(database, "threadline_slack_bots")]
        stored = " ".join(str(value) for row in rows for value in row)
        assert rows and all(secret not in stored for secret in secrets)
        assert "xoxb-" not in stored and "xoxe" not in stored
        # With the key the ciphertext opens to the tokens: they are there, only sealed.
        opened = {Fernet(KEY.encode()).decrypt(value.encode()).decode()
                  for row in rows for value in row
                  if isinstance(value, str) and value.startswith("gAAAA")}
        assert set(secrets) <= opened

    async with FakeSlack() as fake, SqlConversationStore(database) as store:
        channel = oauth_channel(fake, store, key=Fernet.generate_key().decode())
        with pytest.raises(ConfigError, match="does not decrypt the stored workspace tokens"):
            await channel.start(RecordingEvents(store))


async def test_an_expiring_token_is_refreshed_before_use_and_the_new_one_kept(
        database: str) -> None:
    async with oauth_rig(database) as rig:
        rig.fake.token_lifetime = 60  # expires well within rotate_minutes_before_expiry
        await rig.install(ALPHA)
        [first] = rig.fake.tokens_of(ALPHA)
        rig.fake.token_lifetime = 43_200

        assert await rig.say(ALPHA, "rotate please") == 200
        [post] = await rig.fake.wait_for_calls("chat.postMessage", 1)

        refreshes = [c for c in rig.fake.calls_to("oauth.v2.access")
                     if c.params.get("grant_type") == "refresh_token"]
        assert len(refreshes) == 1
        assert refreshes[0].params["refresh_token"] == rig.fake.tokens[first].refresh_token
        [_, second] = rig.fake.tokens_of(ALPHA)
        assert post.token == second
        await rig.channel.stop()

        # A restarted process finds the new token (and refresh token) in the database.
        restarted = oauth_channel(rig.fake, rig.store)
        events = RecordingEvents(rig.store)
        await restarted.start(events)
        try:
            delivery = await rig.fake.deliver_event(
                restarted.events_url, rig.fake.message_event("still there?"), team_id=ALPHA)
            assert delivery.status == 200
            calls = await rig.fake.wait_for_calls("chat.postMessage", 2)
            assert calls[1].token == second
            assert len([c for c in rig.fake.calls_to("oauth.v2.access")
                        if c.params.get("grant_type") == "refresh_token"]) == 1
        finally:
            await restarted.stop()


@pytest.mark.parametrize("on_uninstall", ["keep", "purge"])
async def test_uninstalling_deletes_the_tokens_and_keeps_or_purges_the_history_as_set(
        sqlite_url: str, on_uninstall: str) -> None:
    async with oauth_rig(sqlite_url, on_uninstall=on_uninstall) as rig:
        await rig.install(ALPHA)
        await rig.install(BETA)
        await rig.say(ALPHA, "alpha's words")
        await rig.say(BETA, "beta's words")
        await rig.fake.wait_for_calls("chat.postMessage", 2)

        delivery = await rig.fake.deliver_event(
            rig.channel.events_url, {"type": "app_uninstalled", "event_ts": "1.0"},
            team_id=ALPHA)
        assert delivery.status == 200

        kept = [m.content for m in await rig.store.get(f"slack:{ALPHA}:C0GENERAL")]
        assert kept == (["alpha's words"] if on_uninstall == "keep" else [])
        assert [m.content for m in await rig.store.get(f"slack:{BETA}:C0GENERAL")] == [
            "beta's words"]
        for table in ("threadline_slack_bots", "threadline_slack_installations"):
            assert await raw_rows(sqlite_url, table, "team_id") == [(BETA,)]


async def test_an_install_redirect_is_accepted_once(database: str) -> None:
    async with oauth_rig(database) as rig:
        session = rig.fake._session
        assert session is not None
        async with session.get(f"{rig.base_url}/slack/install?team={ALPHA}",
                               allow_redirects=False) as started:
            authorize = started.headers["Location"]
            cookie = started.headers["Set-Cookie"].split(";")[0]
        async with session.get(authorize, allow_redirects=False) as allowed:
            redirect = allowed.headers["Location"]
        statuses = []
        for _ in range(2):
            async with session.get(redirect, headers={"Cookie": cookie},
                                   allow_redirects=False) as answered:
                statuses.append(answered.status)

        assert statuses == [200, 401]  # the state was consumed by the first redirect
        assert len(rig.fake.tokens_of(ALPHA)) == 1


async def test_two_replicas_refreshing_one_token_at_once_both_answer_with_the_winners_token(
        database: str) -> None:
    async with oauth_rig(database) as rig:
        rig.fake.token_lifetime = 60  # due at once
        await rig.install(ALPHA)
        rig.fake.token_lifetime = 43_200
        async with SqlConversationStore(database) as other_store:
            other = oauth_channel(rig.fake, other_store)  # a second replica, same database
            other_events = RecordingEvents(other_store)
            await other.start(other_events)
            try:
                held = rig.fake.hold("oauth.v2.access")  # both refreshes reach Slack first
                first = asyncio.create_task(rig.fake.deliver_event(
                    rig.channel.events_url, rig.fake.message_event("one", channel="C01"),
                    team_id=ALPHA))
                second = asyncio.create_task(rig.fake.deliver_event(
                    other.events_url, rig.fake.message_event("two", channel="C02"),
                    team_id=ALPHA))
                await rig.fake.wait_for_calls("oauth.v2.access", 3)  # the install, 2 refreshes
                held.set()
                assert [d.status for d in await asyncio.gather(first, second)] == [200, 200]
                posts = await rig.fake.wait_for_calls("chat.postMessage", 2)
            finally:
                await other.stop()

        [_, winner] = rig.fake.tokens_of(ALPHA)  # Slack refreshed once: one new token
        assert {p.token for p in posts} == {winner}
        assert sorted(str(p.params["text"]) for p in posts) == ["echo: one", "echo: two"]


async def test_revoking_only_a_persons_token_leaves_the_bot_answering(sqlite_url: str) -> None:
    async with oauth_rig(sqlite_url) as rig:
        await rig.install(ALPHA)
        revoked = {"type": "tokens_revoked", "event_ts": rig.fake.next_ts(),
                   "tokens": {"oauth": ["U0INSTALLER"], "bot": []}}
        with capture_logs() as logs:
            delivery = await rig.fake.deliver_event(rig.channel.events_url, revoked,
                                                    team_id=ALPHA)
        assert delivery.status == 200
        [said] = [e for e in logs if e["event"] == "slack_tokens_revoked"]
        assert said["bot"] is False and "the bot still answers" in said["outcome"]

        assert await rig.say(ALPHA, "still there?") == 200
        [post] = await rig.fake.wait_for_calls("chat.postMessage", 1)
        assert rig.fake.tokens[post.token or ""].team_id == ALPHA
