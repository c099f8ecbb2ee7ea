"""Only Teams may speak to the bot: an activity without a valid Bot Framework token is refused
with 401 before it is read, and nothing is stored or answered."""

from __future__ import annotations

from typing import get_args

import pytest

from tests.channels.teams.test_teams_replies import serving
from tests.fakes.teams import ALICE, TENANT, FakeTeams, Forgery

REFUSED = [f for f in get_args(Forgery) if f != "signed"]


@pytest.mark.parametrize("forgery", REFUSED)
async def test_an_activity_without_a_valid_token_is_refused(
        sqlite_url: str, teams: FakeTeams, forgery: Forgery) -> None:
    async with serving(sqlite_url, teams) as (channel, store):
        activity = teams.message("transfer everything", chat=teams.personal(ALICE))
        status, _ = await teams.deliver(channel.messaging_url, activity, forgery=forgery)
        stored = await store.get(f"teams:{TENANT}:a%3A1chat-with-alice")

    assert status == 401
    assert stored == []
    assert teams.messages() == []


async def test_a_body_that_is_not_an_activity_is_refused(sqlite_url: str,
                                                         teams: FakeTeams) -> None:
    async with serving(sqlite_url, teams) as (channel, _store), teams.session() as session:
        token = teams.token()
        async with session.post(channel.messaging_url, data=b"{not json",
                                headers={"Authorization": f"Bearer {token}"}) as response:
            assert response.status == 400
            assert "not a JSON activity" in await response.text()
