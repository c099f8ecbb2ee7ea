"""Feedback on a Telegram reply: an inline keyboard added under the reply
(editMessageReplyMarkup), a press kept once per person, a second press changing it, shown in
the console, and gone for a person `people forget` erased."""

from __future__ import annotations

from tests.fakes.telegram import ALICE, BOB, GROUP, FakeTelegram
from tests.feedback.voting import book_of, console_feedback, recorder_for, voting_team
from threadline.backends.sql import SqlConversationStore
from threadline.channels.telegram import TelegramChannel
from threadline.ops import Metrics
from threadline.people.erase import forget_person


async def test_a_telegram_down_vote_is_kept_once_per_person_and_forgotten(
        sqlite_url: str) -> None:
    async with FakeTelegram() as fake, SqlConversationStore(sqlite_url) as store:
        channel = TelegramChannel(name="tg", **fake.channel_settings())
        recorder = recorder_for(store)
        metrics = Metrics()
        team = voting_team(store, channel, recorder=recorder, metrics=metrics)
        await team.start()
        try:
            await fake.deliver(fake.message(GROUP, ALICE, "@support_bot where is my parcel?"))
            [edit] = await fake.wait_for_calls("editMessageReplyMarkup", 1)
            reply = fake.sent[0]
            assert edit.params["message_id"] == reply["message_id"]
            keyboard = [b["text"] for row in reply["reply_markup"]["inline_keyboard"]
                        for b in row]
            assert keyboard == ["👍", "👎"]
            for user, label in ((ALICE, "👎"), (BOB, "👎"), (ALICE, "👍")):
                await fake.deliver(fake.press(reply, label, user=user))
            # A reason is typed after the vote, as the answer to a press says.
            await fake.deliver(fake.message(
                GROUP, BOB, f"/feedback down {reply['message_id']} it never said where"))
            await fake.wait_for_calls("sendMessage", 5)
            await recorder.flush()
        finally:
            await team.stop()

        assert all(str(m["text"]).startswith("Thanks: your ") for m in fake.sent[1:])
        book = book_of(store)
        [reply_id] = {v.reply_id for v in await book.recent()}
        votes = {v.voter: v.vote for v in await book.on_reply(reply_id)}
        assert votes == {f"telegram:{ALICE.id}": "up", f"telegram:{BOB.id}": "down"}
        assert [v.reason for v in await book.on_reply(reply_id) if v.voter.endswith(
            str(BOB.id))] == ["it never said where"]
        scraped = metrics.render().decode()
        assert 'threadline_reply_feedback_total{agent="support",vote="down"} 2.0' in scraped
        assert 'threadline_reply_feedback_total{agent="support",vote="up"} 1.0' in scraped
        assert ('threadline_reply_feedback_withdrawn_total{agent="support",vote="down"} 1.0'
                in scraped)

        found, page = await console_feedback(store)
        assert [(d["up"], d["down"]) for d in found["satisfaction"]["support"]] == [(1, 1)]
        [down] = found["down_voted"]
        assert down["vote"]["voter"] == f"telegram:{BOB.id}"
        assert down["record"]["outbound_id"] == reply_id
        assert "where is my parcel?" in page
        assert 'aria-label="support: share of replies voted up, by day"' in page
        assert "<td>50%</td>" in page  # one up, one down that day

        counts = await forget_person(store, f"telegram:{ALICE.id}")
        assert counts["feedback"] == 1
        assert [v.voter for v in await book.on_reply(reply_id)] == [f"telegram:{BOB.id}"]
