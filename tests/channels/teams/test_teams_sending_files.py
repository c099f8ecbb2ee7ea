"""Files an agent's tools make reach a Teams 1:1 chat through the file consent flow: a
FileConsentCard, then on Allow the bytes PUT once to the upload URL the press brings (held to
the channel's file hosts) and a FileInfoCard; Decline is answered in words. The offer survives
a restart (the bytes stay in the file store), and an accept delivered again uploads nothing.
Group chats have no consent cards: the reply says the file was not sent there."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.fakes.anthropic import FakeAnthropic, text, tool_use
from tests.fakes.files import chart_tool, png
from tests.fakes.teams import ALICE, APP_ID, Call, Chat, FakeTeams
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.files import SqlFileStore
from threadline.channels.files import FileIntake
from threadline.channels.teams import TeamsChannel
from threadline.team import Team

CONSENT = "application/vnd.microsoft.teams.card.file.consent"
INFO = "application/vnd.microsoft.teams.card.file.info"
CHART = png(300, 200)


@asynccontextmanager
async def running_bot(teams: FakeTeams, model: FakeAnthropic, tmp_path: Path, *,
                      allow_fake_uploads: bool = True) -> AsyncIterator[TeamsChannel]:
    """A bot whose agent draws a chart, on one SQLite file kept across restarts."""
    fake_host = teams.service_url.removesuffix("/teams").removeprefix("http://")
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        agent = Agent(name="support", conversation_history=store, tools=[chart_tool(CHART)],
                      provider=AnthropicProvider(model.client(), stream=False))
        team = Team([agent], files=FileIntake(store=SqlFileStore(
            store, directory=tmp_path / "files")))
        channel = TeamsChannel(name="teams", port=0, streaming=False, **teams.settings(),
                               file_hosts=[fake_host] if allow_fake_uploads else [])
        team.attach(channel)
        await team.start()
        try:
            yield channel
        finally:
            await team.stop()


def cards(call: Call, kind: str) -> list[dict[str, object]]:
    return [a for a in call.body.get("attachments") or () if a["contentType"] == kind]


async def offered_chart(teams: FakeTeams, model: FakeAnthropic, tmp_path: Path,
                        chat: Chat) -> Call:
    """Ask for a chart in `chat`; the bot's last post (the consent card, in a 1:1 chat)."""
    model.script(tool_use("draw_chart", {}), text("Here is the chart."))
    async with running_bot(teams, model, tmp_path) as channel:
        asked = (teams.message("chart my sales", chat=chat) if chat.kind == "personal" else
                 teams.message("<at>Bot</at> chart my sales", chat=chat,
                               mentions={"Bot": f"28:{APP_ID}"}))
        status, _ = await teams.deliver(channel.messaging_url, asked)
        assert status == 200
        posted = await teams.wait_for_messages(2)
    assert posted[0].body["text"] == "Here is the chart."
    return posted[1]


async def test_allow_uploads_the_bytes_once_after_a_restart_and_shows_the_file(
        tmp_path: Path, teams: FakeTeams) -> None:
    chat = teams.personal(ALICE)
    async with FakeAnthropic() as model:
        card_post = await offered_chart(teams, model, tmp_path, chat)
        [card] = cards(card_post, CONSENT)
        assert card["name"] == "sales.png"
        assert card["content"]["sizeInBytes"] == len(CHART)  # type: ignore[index]
        accept = teams.consent(card_post, accept=True, chat=chat)
        async with running_bot(teams, model, tmp_path) as channel:  # a new process
            assert (await teams.deliver(channel.messaging_url, accept))[0] == 200
            shown = (await teams.wait_for_messages(3))[2]
            assert (await teams.deliver(channel.messaging_url, accept))[0] == 200
        async with running_bot(teams, model, tmp_path) as channel:  # and after another
            assert (await teams.deliver(channel.messaging_url, accept))[0] == 200

    [(upload_id, content_range, data)] = teams.uploads
    assert data == CHART and content_range == f"bytes 0-{len(CHART) - 1}/{len(CHART)}"
    [info] = cards(shown, INFO)
    assert info["content"] == {"uniqueId": upload_id, "fileType": "png"}
    assert str(info["contentUrl"]).endswith("/sales.png")
    assert len(teams.messages()) == 3  # replays posted nothing more


async def test_decline_is_answered_in_words_and_uploads_nothing(
        tmp_path: Path, teams: FakeTeams) -> None:
    chat = teams.personal(ALICE)
    async with FakeAnthropic() as model:
        card_post = await offered_chart(teams, model, tmp_path, chat)
        async with running_bot(teams, model, tmp_path) as channel:
            decline = teams.consent(card_post, accept=False, chat=chat)
            assert (await teams.deliver(channel.messaging_url, decline))[0] == 200
            said = (await teams.wait_for_messages(3))[2]
    assert said.body["text"] == "OK, sales.png was not sent."
    assert teams.uploads == []


async def test_an_upload_url_outside_the_file_hosts_gets_no_bytes(
        tmp_path: Path, teams: FakeTeams) -> None:
    chat = teams.personal(ALICE)
    async with FakeAnthropic() as model:
        card_post = await offered_chart(teams, model, tmp_path, chat)
        async with running_bot(teams, model, tmp_path, allow_fake_uploads=False) as channel:
            accept = teams.consent(card_post, accept=True, chat=chat)
            assert (await teams.deliver(channel.messaging_url, accept))[0] == 200
            said = (await teams.wait_for_messages(3))[2]
    assert "was not sent" in said.body["text"] and teams.uploads == []


async def test_an_accept_from_another_chat_uploads_nothing(
        tmp_path: Path, teams: FakeTeams) -> None:
    async with FakeAnthropic() as model:
        card_post = await offered_chart(teams, model, tmp_path, teams.personal(ALICE))
        async with running_bot(teams, model, tmp_path) as channel:
            elsewhere = teams.consent(card_post, accept=True, chat=teams.group())
            assert (await teams.deliver(channel.messaging_url, elsewhere))[0] == 200
            said = (await teams.wait_for_messages(3))[2]
    assert "another chat" in said.body["text"] and teams.uploads == []


async def test_in_a_group_chat_the_reply_says_the_file_was_not_sent(
        tmp_path: Path, teams: FakeTeams) -> None:
    async with FakeAnthropic() as model:
        said = await offered_chart(teams, model, tmp_path, teams.group())
    assert said.body["text"].startswith("sales.png was made, but Teams lets a bot send files "
                                        "only in a 1:1 chat")
    assert cards(said, CONSENT) == [] and teams.uploads == []


async def test_a_stale_or_malformed_press_is_answered_and_uploads_nothing(
        tmp_path: Path, teams: FakeTeams) -> None:
    chat = teams.personal(ALICE)
    async with FakeAnthropic() as model:
        card_post = await offered_chart(teams, model, tmp_path, chat)
        stale = teams.consent(card_post, accept=True, chat=chat)
        stale["value"]["context"] = {**stale["value"]["context"], "sha256": "0" * 64}
        malformed = teams.consent(card_post, accept=True, chat=chat)
        del malformed["value"]["context"]
        async with running_bot(teams, model, tmp_path) as channel:
            assert (await teams.deliver(channel.messaging_url, malformed))[0] == 200
            assert (await teams.deliver(channel.messaging_url, stale))[0] == 200
            said = (await teams.wait_for_messages(3))[2]
    assert said.body["text"] == ("sales.png is no longer kept here, so it could not be sent; "
                                 "ask for it again.")
    assert teams.uploads == [] and len(teams.messages()) == 3


async def test_an_upload_url_that_redirects_is_not_followed(
        tmp_path: Path, teams: FakeTeams) -> None:
    chat = teams.personal(ALICE)
    teams.upload_redirect = "somewhere-else"
    async with FakeAnthropic() as model:
        card_post = await offered_chart(teams, model, tmp_path, chat)
        async with running_bot(teams, model, tmp_path) as channel:
            accept = teams.consent(card_post, accept=True, chat=chat)
            assert (await teams.deliver(channel.messaging_url, accept))[0] == 200
            said = (await teams.wait_for_messages(3))[2]
    assert said.body["text"] == "Uploading sales.png failed; please ask for it again."
    assert teams.uploads == []  # the redirect's target never got the bytes
