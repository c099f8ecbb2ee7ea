"""HTTP mode on port 0 takes any free port and logs the one it bound, so it can be found."""

from __future__ import annotations

from structlog.testing import capture_logs

from tests.fakes.slack import slack_rig


async def test_port_zero_logs_the_events_url_with_the_bound_port(sqlite_url: str) -> None:
    with capture_logs() as logs:
        async with slack_rig(sqlite_url) as (_, channel, _events):
            url = channel.events_url
    [listening] = [entry for entry in logs if entry["event"] == "slack.listening"]
    assert listening["url"] == url
    assert not url.endswith(":0/slack/events")
