"""Feedback on a Discord reply: buttons (message components) added to the reply by an edit, a
press kept once per person, a second press changing it, shown in the console, and gone for a
person `people forget` erased."""

from __future__ import annotations

from tests.fakes.discord_gateway import DiscordWorld, FakeDiscord
from tests.feedback.voting import book_of, console_feedback, recorder_for, voting_team
from threadline.backends.sql import SqlConversationStore
from threadline.channels.discord import DiscordChannel
from threadline.people.erase import forget_person


async def test_a_discord_down_vote_is_kept_once_per_person_and_forgotten(
        sqlite_url: str) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        channel = DiscordChannel(token=fake.token, api_base_url=fake.api_base_url,
                                 gateway_url=fake.gateway_url, guild_ready_timeout=0.02)
        recorder = recorder_for(store)
        team = voting_team(store, channel, recorder=recorder)
        await team.start()
        try:
            await fake.deliver_message(world.general, author=world.ada,
                                       content=f"<@{fake.bot.id}> where is my parcel?")
            await fake.wait_until(lambda: len(fake.posts) >= 1, within=30)
            reply_id_on_discord = str(fake.posted[0]["id"])
            await fake.wait_until(
                lambda: bool(fake.messages[reply_id_on_discord].get("components")), within=30)
            reply = fake.messages[reply_id_on_discord]
            assert reply["content"] == fake.posted[0]["content"]  # the edit kept the text
            for user, label in ((world.ada, "👎"), (world.bob, "👎"), (world.ada, "👍")):
                await fake.press_button(reply, label, user=user)
            followups = await fake.wait_for_followups(3)
            await recorder.flush()
        finally:
            await team.stop()

        assert all(str(f["content"]).startswith("Thanks: your ") for f in followups)
        book = book_of(store)
        [reply_id] = {v.reply_id for v in await book.recent()}
        votes = {v.voter: v.vote for v in await book.on_reply(reply_id)}
        assert votes == {f"discord:{world.ada.id}": "up", f"discord:{world.bob.id}": "down"}

        found, page = await console_feedback(store)
        assert [(d["up"], d["down"]) for d in found["satisfaction"]["support"]] == [(1, 1)]
        [down] = found["down_voted"]
        assert down["vote"]["voter"] == f"discord:{world.bob.id}"
        assert "where is my parcel?" in page

        counts = await forget_person(store, f"discord:{world.ada.id}")
        assert counts["feedback"] == 1
        assert [v.voter for v in await book.on_reply(reply_id)] == [f"discord:{world.bob.id}"]
