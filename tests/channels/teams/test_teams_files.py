"""Files sent to the bot in a Teams 1:1 chat reach the model: fetched from the download URL
Teams gives (pre-authenticated, no token sent), from SharePoint's hosts only unless
`file_hosts` names another; a file elsewhere is not fetched and the text is still answered."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from tests.fakes.anthropic import FakeAnthropic, text
from tests.fakes.files import png
from tests.fakes.teams import ALICE, TENANT, FakeTeams
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.files import SqlFileStore
from threadline.channels.files import FileIntake
from threadline.channels.teams import TeamsChannel
from threadline.history.files import files_of
from threadline.team import Team


async def test_a_sent_png_reaches_the_model_and_a_file_elsewhere_is_refused(
        tmp_path: Path, teams: FakeTeams) -> None:
    picture = png(320, 200)
    fake_host = teams.service_url.removesuffix("/teams").removeprefix("http://")
    async with FakeAnthropic() as model, SqlConversationStore(
            f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        model.script(text("A grey picture."), text("a grey image"), text("Could not open it."))
        files = FileIntake(store=SqlFileStore(store, directory=tmp_path / "files"))
        team = Team([Agent(name="support", conversation_history=store,
                           provider=AnthropicProvider(model.client(), stream=False))],
                    files=files)
        channel = TeamsChannel(name="teams", port=0, streaming=False, file_hosts=[fake_host],
                               **teams.settings())
        team.attach(channel)
        await team.start()
        try:
            chat = teams.personal(ALICE)
            shot = teams.add_file(picture, name="shot.png")
            elsewhere = teams.add_file(b"secret", name="notes.txt",
                                       host="http://127.0.0.2:9")
            for number, activity in enumerate((
                    teams.message("what is this?", chat=chat, attachments=[shot]),
                    teams.message("and this", chat=chat, attachments=[elsewhere])), start=1):
                assert (await teams.deliver(channel.messaging_url, activity))[0] == 200
                await teams.wait_for_messages(number)
        finally:
            await team.stop()
        turns = await store.get(f"teams:{TENANT}:a%3A1chat-with-alice")

    assert teams.file_downloads == ["file-0001"]  # the other host is never asked
    first, _describe, second = (json.dumps(b) for b in model.bodies)
    assert base64.b64encode(picture).decode() in first
    assert "and this" in second and "notes.txt" in second
    sent = files_of(turns[0].metadata.extra)[0]
    assert (sent.name, sent.media_type, sent.platform_id) == ("shot.png", "image/png",
                                                              "file-0001")
