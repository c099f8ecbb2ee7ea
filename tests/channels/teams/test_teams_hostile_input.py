"""Whatever a signed activity holds, the channel goes on: an activity it cannot read is answered
and skipped (logged, counted), the bot's own messages and other bots' are not turns, and an
edit of a waiting message is answered as edited."""

from __future__ import annotations

from tests.channels.teams.test_teams_replies import serving, stored
from tests.fakes.teams import ALICE, APP_ID, TENANT, FakeTeams, Person

BOT = Person(f"28:{APP_ID}", "Threadline", "")
OTHER_BOT = Person("28:someone-elses-bot", "Other", "")


async def test_an_unreadable_activity_is_skipped_and_the_next_is_answered(
        sqlite_url: str, teams: FakeTeams) -> None:
    async with serving(sqlite_url, teams) as (channel, store):
        chat = teams.personal(ALICE)
        broken = teams.message("no conversation", chat=chat)
        broken["conversation"] = {"conversationType": "personal"}  # no id
        no_id = teams.message("no activity id", chat=chat)
        no_id["id"] = ""
        for activity in (broken, no_id):
            assert (await teams.deliver(channel.messaging_url, activity))[0] == 200
        assert channel.skipped_events == 2
        fine = teams.message("still there?", chat=chat)
        assert (await teams.deliver(channel.messaging_url, fine))[0] == 200
        await teams.wait_for_messages(1)
        turns = await stored(store, f"teams:{TENANT}:a%3A1chat-with-alice", 2)

    assert turns[0].content == "still there?"


async def test_own_and_other_bots_messages_are_not_turns(sqlite_url: str,
                                                         teams: FakeTeams) -> None:
    async with serving(sqlite_url, teams) as (channel, store):
        chat = teams.group()
        for sender in (BOT, OTHER_BOT):
            activity = teams.message("<at>Threadline</at> loop?", chat=chat, sender=sender,
                                     mentions={"Threadline": f"28:{APP_ID}"})
            activity["from"]["role"] = "bot"
            assert (await teams.deliver(channel.messaging_url, activity))[0] == 200
        stored_turns = await store.get(f"teams:{TENANT}:19%3Agroupchat-0001%40thread.v2")

    assert stored_turns == []
    assert teams.messages() == []


async def test_markup_in_a_message_is_read_as_text(sqlite_url: str, teams: FakeTeams) -> None:
    async with serving(sqlite_url, teams) as (channel, store):
        activity = teams.message("<p>order <b>#7</b> &amp; <at>x</at></p>",
                                 chat=teams.personal(ALICE))
        assert (await teams.deliver(channel.messaging_url, activity))[0] == 200
        [turn, _] = await stored(store, f"teams:{TENANT}:a%3A1chat-with-alice", 2)

    assert turn.content == "order #7 & @x"
