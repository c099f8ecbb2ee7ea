"""`check` names the missing OAuth scopes that would leave the bot deaf or mute."""

from __future__ import annotations

from tests.fakes.slack import slack_rig


async def test_a_fully_scoped_token_has_nothing_to_report(sqlite_url: str) -> None:
    async with slack_rig(sqlite_url) as (_, channel, _events):
        assert await channel.check() == []


async def test_missing_history_scopes_are_reported_as_sentences(sqlite_url: str) -> None:
    async with slack_rig(sqlite_url) as (fake, channel, _):
        fake.scopes = ("chat:write", "users:read", "im:history", "app_mentions:read")
        problems = await channel.check()

    assert len(problems) == 2
    assert "'channels:history'" in problems[0] and "public channels" in problems[0]
    assert "'groups:history'" in problems[1] and "private channels" in problems[1]
    assert all("'slack'" in p and p.endswith(".") for p in problems)
