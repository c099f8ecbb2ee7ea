"""A member cannot make the bot ping a crowd: `<!channel>`, `<!here>`, `<!everyone>` and user
groups in a model's answer or a member's `/remind` text reach Slack escaped (shown, not
notifying), and Discord posts carry `allowed_mentions` without everyone and roles. What
crossed the wire to the fakes is what is checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.anthropic import FakeAnthropic, text
from tests.fakes.slack import FakeSlack
from tests.runtime.in_process import running_in_process
from tests.runtime.platforms import platform, say
from tests.runtime.test_listeners_survive_bad_events import until

PINGS = "<!channel> <!here|here> <!everyone> <!subteam^S0ALL|@all-staff> read this"


async def test_slack_posts_broadcast_mentions_from_a_model_and_a_reminder_inert(
        tmp_path: Path) -> None:
    async with platform("slack", streaming=False) as where, FakeAnthropic() as anthropic:
        slack: FakeSlack = where.fake
        slack.add_user("U0ALICE", display_name="Alice")
        slack.add_channel("C0GENERAL", name="general")
        anthropic.script(text(f"Sure: {PINGS}, and <@U0ALICE> <!date^1700000000^{{date}}|x>"))
        async with running_in_process(tmp_path, "slack", where, anthropic.url,
                                      more_yaml="scheduler:\n  poll_interval: 0.1\n"):
            await say("slack", where, 0, "shout at everyone")
            payload = slack.slash_command("/remind", f"in 1 second to {PINGS}")
            assert await slack.deliver_command(where.extra["events_url"], payload) == (200, "")
            await until(lambda: len(slack.calls_to("chat.postMessage")) >= 2)
        posted = [str(c.params["text"]) for c in slack.calls_to("chat.postMessage")]
    assert len(posted) == 2
    for sent in posted:
        for live in ("<!channel>", "<!here", "<!everyone>", "<!subteam"):
            assert live not in sent
        assert "&lt;!channel&gt; &lt;!here|here&gt; &lt;!everyone&gt;" in sent
    assert "<@U0ALICE> <!date^1700000000^{date}|x>" in posted[0]  # a person and a date stay


async def test_discord_posts_never_allow_everyone_or_role_pings(tmp_path: Path) -> None:
    async with platform("discord", streaming=False) as where, FakeAnthropic() as anthropic:
        anthropic.script(text("@everyone @here <@&123456> look"))
        async with running_in_process(tmp_path, "discord", where, anthropic.url):
            await say("discord", where, 0, "shout at everyone")
            await where.fake.wait_for_posts(1)
        [call] = where.fake.calls_to("POST", r"/channels/\d+/messages")
    assert call.json["content"] == "@everyone @here <@&123456> look"
    allowed = call.json["allowed_mentions"]
    assert "everyone" not in allowed["parse"] and "roles" not in allowed["parse"]
    assert not allowed.get("roles")


async def test_an_agent_the_operator_allows_may_notify_the_channel(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    async with platform("slack", streaming=False) as where, FakeAnthropic() as anthropic:
        slack: FakeSlack = where.fake
        anthropic.script(text("<!here> the office closes at noon"))
        # `broadcast: true` on the one agent of write_config's config.
        async with running_in_process(tmp_path, "slack", where, anthropic.url,
                                      agent_yaml="    broadcast: true\n"):
            await say("slack", where, 0, "announce the early closing")
            await until(lambda: len(slack.calls_to("chat.postMessage")) >= 1)
        [sent] = [str(c.params["text"]) for c in slack.calls_to("chat.postMessage")]
    assert sent == "<!here> the office closes at noon"

    async with platform("discord", streaming=False) as where, FakeAnthropic() as anthropic:
        anthropic.script(text("@everyone the office closes at noon"))
        async with running_in_process(tmp_path_factory.mktemp("discord"), "discord", where,
                                      anthropic.url,
                                      agent_yaml="    broadcast: true\n"):
            await say("discord", where, 0, "announce the early closing")
            await where.fake.wait_for_posts(1)
        [call] = where.fake.calls_to("POST", r"/channels/\d+/messages")
    assert "everyone" in call.json["allowed_mentions"]["parse"]
