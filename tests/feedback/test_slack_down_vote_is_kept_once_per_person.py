"""Feedback on a Slack reply: Slack's feedback buttons (a `context_actions` block) added under
the reply, a press kept once per person, a second press changing it, shown in the console,
and gone for a person `people forget` erased."""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text
from tests.fakes.slack import FakeSlack
from tests.feedback.voting import book_of, console_feedback, recorder_for, voting_team
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.channels.slack import SlackChannel
from threadline.people.erase import forget_person

anthropic = fake_anthropic_fixture()


def blocks_of(params: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = params["blocks"]
    return json.loads(blocks) if isinstance(blocks, str) else list(blocks)


async def test_a_slack_down_vote_is_kept_once_per_person_and_forgotten(sqlite_url: str) -> None:
    async with FakeSlack() as slack, SqlConversationStore(sqlite_url) as store:
        slack.add_user("U0ALICE", display_name="Alice")
        slack.add_user("U0BOB", display_name="Bob")
        slack.add_channel("C0GENERAL", name="general")
        channel = SlackChannel(**slack.channel_settings(mode="http"))
        recorder = recorder_for(store)
        team = voting_team(store, channel, recorder=recorder)
        await team.start()
        try:
            asked = slack.message_event("<@U0BOT> where is my parcel?")
            await slack.deliver_event(channel.events_url, asked)
            [posted] = await slack.wait_for_calls("chat.postMessage", 1)
            [update] = await slack.wait_for_calls("chat.update", 1)
            blocks = blocks_of(dict(update.params))
            [actions] = [b for b in blocks if b["type"] == "context_actions"]
            assert actions["elements"][0]["type"] == "feedback_buttons"
            assert slack.messages[update.params["ts"]] == posted.params["text"]
            assert update.params["text"] == posted.params["text"]  # the reply reads the same

            thread = asked["ts"]
            for user, label in (("U0ALICE", "👎"), ("U0BOB", "👎"), ("U0ALICE", "👍")):
                press = slack.block_action(blocks, label, user=user, thread_ts=thread)
                assert (await slack.deliver_action(channel.events_url, press))[0] == 200
            answers = await slack.wait_for_responses(3)
            await recorder.flush()
        finally:
            await team.stop()

        assert all(str(body["text"]).startswith("Thanks: your ") for _, body in answers)
        assert all(body.get("response_type") == "ephemeral" for _, body in answers)
        book = book_of(store)
        [reply_id] = {v.reply_id for v in await book.recent()}
        votes = {v.voter: v.vote for v in await book.on_reply(reply_id)}
        assert votes == {f"slack:{slack.team_id}:U0ALICE": "up",
                         f"slack:{slack.team_id}:U0BOB": "down"}

        found, page = await console_feedback(store)
        assert found["satisfaction"]["support"][0]["up"] == 1
        assert found["satisfaction"]["support"][0]["down"] == 1
        [down] = found["down_voted"]
        assert down["vote"]["voter"] == f"slack:{slack.team_id}:U0BOB"
        seen = [p["content"] for p in down["record"]["detail"]["prompt"]["parts"]]
        assert any("where is my parcel?" in text for text in seen)
        assert "where is my parcel?" in page and "U0BOB" in page

        counts = await forget_person(store, f"slack:{slack.team_id}:U0ALICE")
        assert counts["feedback"] == 1
        assert {v.voter for v in await book.on_reply(reply_id)} == {
            f"slack:{slack.team_id}:U0BOB"}


async def test_a_streamed_slack_reply_gets_the_buttons_once_it_is_whole(
        sqlite_url: str, anthropic: FakeAnthropic) -> None:
    """Replies in a thread are streamed (chat.startStream ... stopStream): the buttons are
    added once the stream stopped, on the streamed message, its text unchanged."""
    reply = "Your parcel left the warehouse this morning and should arrive on Friday."
    anthropic.script(text(reply, tokens_per_second=200))
    async with FakeSlack() as slack, SqlConversationStore(sqlite_url) as store:
        slack.add_user("U0ALICE", display_name="Alice")
        slack.add_channel("C0GENERAL", name="general")
        channel = SlackChannel(**slack.channel_settings(mode="http"))
        team = voting_team(store, channel, recorder=recorder_for(store),
                           provider=AnthropicProvider(anthropic.client()))
        await team.start()
        try:
            await slack.deliver_event(channel.events_url, slack.message_event(
                "<@U0BOT> where is my parcel?"))
            [stop] = await slack.wait_for_calls("chat.stopStream", 1)
            [update] = await slack.wait_for_calls("chat.update", 1)
        finally:
            await team.stop()

    assert update.params["ts"] == stop.params["ts"]
    assert update.params["text"] == reply == slack.messages[update.params["ts"]]
    assert [b["type"] for b in blocks_of(dict(update.params))] == ["section", "context_actions"]
