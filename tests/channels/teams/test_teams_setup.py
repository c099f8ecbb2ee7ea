"""Setting a Teams bot up: `init` writes the starter and the app manifest, the settings say what
is missing, and `check` says whether the login server gives the bot a token."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli.helpers import run_cli
from tests.fakes.teams import ALICE, APP_ID, TENANT, FakeTeams
from threadline.channels.teams import TeamsChannel
from threadline.channels.teams.platform import TeamsSettings
from threadline.cli.init import offered_commands, render
from threadline.config import load_settings
from threadline.errors import ChannelAuthError, ChannelError

GUIDE = Path(__file__).parents[3] / "docs" / "platforms" / "teams.md"
ENV = {"TEAMS_APP_ID": APP_ID, "TEAMS_APP_PASSWORD": "p", "TEAMS_TENANT_ID": TENANT}


def test_init_writes_the_starter_and_the_app_manifest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "threadline.yaml"
    outcome = run_cli(capsys, "init", str(path), "--platform", "teams")
    assert outcome.code == 0, outcome.err
    text = path.read_text(encoding="utf-8")
    assert "# Set-up, step by step: docs/platforms/teams.md" in text
    settings = load_settings(path, env=ENV)
    assert isinstance(settings.channels["teams"], TeamsSettings)
    assert {c.name for c in settings.agents["support"].channels} == {"local", "teams"}

    manifest = json.loads((tmp_path / "teams-app-manifest.json").read_text(encoding="utf-8"))
    [bot] = manifest["bots"]
    assert bot["botId"] == manifest["id"] == "TEAMS_APP_ID"  # the guide says to replace it
    assert set(bot["scopes"]) == {"personal", "groupChat", "team"}
    answered = [c.name for c in offered_commands(render("teams", str(path)), path)]
    assert [c["title"] for c in bot["commandLists"][0]["commands"]] == [
        f"/{name}" for name in answered][:10]
    assert {p["name"] for p in manifest["authorization"]["permissions"]["resourceSpecific"]} \
        == {"ChannelMessage.Read.Group", "ChatMessage.Read.Chat"}


def test_the_guide_names_every_command(tmp_path: Path) -> None:
    path = tmp_path / "threadline.yaml"
    named = set(re.findall(r"`/([a-z_-]+)", GUIDE.read_text(encoding="utf-8")))
    missing = [c.name for c in offered_commands(render("teams", str(path)), path)
               if c.name not in named]
    assert not missing, f"docs/platforms/teams.md does not name /{', /'.join(missing)}"


def test_the_settings_say_what_is_missing() -> None:
    settings = TeamsSettings(type="teams", app_id=APP_ID, login_url="http://127.0.0.1:1")
    [missing, insecure] = settings.problems()
    assert "app_password (${TEAMS_APP_PASSWORD}), tenant_id (${TEAMS_TENANT_ID}) missing" in \
        missing
    assert "app_id" not in missing
    assert "login_url must be an https:// address" in insecure
    assert TeamsSettings(type="teams", **ENV_SETTINGS).problems() == []


ENV_SETTINGS = {"app_id": APP_ID, "app_password": "p", "tenant_id": TENANT}


async def test_check_gets_a_token_and_learns_who_the_bot_is(teams: FakeTeams) -> None:
    channel = TeamsChannel(name="teams", port=0, **teams.settings())
    assert await channel.check() == []
    assert channel.identity is not None
    assert {f"28:{APP_ID}", APP_ID} <= set(channel.identity.aliases)
    assert teams.token_requests == 1


async def test_check_says_a_wrong_password_or_tenant_in_words(teams: FakeTeams) -> None:
    wrong = TeamsChannel(name="teams", port=0, **{**teams.settings(), "app_password": "nope"})
    with pytest.raises(ChannelAuthError, match=r"refused a token .*invalid_client.*check "
                                               r"app_id, app_password and tenant_id"):
        await wrong.check()
    elsewhere = TeamsChannel(name="teams", port=0, **{**teams.settings(), "tenant_id": "other"})
    with pytest.raises(ChannelAuthError, match="knows no tenant 'other'"):
        await elsewhere.check()


async def test_check_names_the_login_server_it_could_not_reach(teams: FakeTeams) -> None:
    settings = {**teams.settings(), "login_url": "https://127.0.0.1:9"}
    channel = TeamsChannel(name="teams", port=0, login_url_set=True, **settings)
    with pytest.raises(ChannelError, match=r"could not reach the Microsoft login server at "
                                           r"127\.0\.0\.1:9 .*refused.*login_url setting"):
        await channel.check()


async def test_a_command_picked_after_the_bots_mention_is_the_command(
        sqlite_url: str, teams: FakeTeams) -> None:
    from tests.channels.teams.test_teams_replies import serving, stored

    async with serving(sqlite_url, teams) as (channel, store):
        activity = teams.message("<at>Threadline</at> /forget", chat=teams.group(),
                                 mentions={"Threadline": f"28:{APP_ID}"}, sender=ALICE)
        assert (await teams.deliver(channel.messaging_url, activity))[0] == 200
        [answer] = await teams.wait_for_messages(1)
        [turn, _] = await stored(store, f"teams:{TENANT}:19%3Agroupchat-0001%40thread.v2", 2)

    assert turn.content == "/forget"
    assert "forget" in answer.body["text"].lower()
