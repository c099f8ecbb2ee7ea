"""A Teams reply written live: typing while the model thinks, then one message edited in place
as the text grows, ending as the whole reply."""

from __future__ import annotations

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text
from tests.fakes.teams import ALICE, FakeTeams
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.channels.teams import TeamsChannel
from threadline.team import Team

model = fake_anthropic_fixture()
INTERVAL = 0.3


async def test_a_streamed_reply_is_one_message_edited_in_place(
        sqlite_url: str, model: FakeAnthropic, teams: FakeTeams) -> None:
    reply = " ".join(f"word{n}" for n in range(60)) + "."
    model.script(text(reply, delay=0.5, tokens_per_second=50))
    async with SqlConversationStore(sqlite_url) as store:
        channel = TeamsChannel(name="teams", port=0, stream_interval=INTERVAL,
                               **teams.settings())
        team = Team([Agent(name="support", conversation_history=store,
                           provider=AnthropicProvider(model.client(), stream=True))])
        team.attach(channel)
        await team.start()
        try:
            chat = teams.personal(ALICE)
            await teams.deliver(channel.messaging_url, teams.message("tell me", chat=chat))
            [posted] = await teams.wait_for_messages(1)
            await teams.wait_until_text(reply)
        finally:
            await team.stop()

    kinds = [(c.method, c.body.get("type")) for c in teams.calls]
    assert kinds[0] == ("post", "typing")  # shown before the first words
    assert teams.messages()[0] is posted
    updates = [c for c in teams.calls if c.method == "update"]
    [activity_id] = teams.texts
    assert updates and {c.activity_id for c in updates} == {activity_id}
    assert teams.texts == {activity_id: reply}  # one message, showing the whole reply
    assert posted.body["text"] != reply  # it began with the first words only
