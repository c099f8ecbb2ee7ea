"""`threadline check` against a platform it cannot reach: one FAIL line per channel naming
the host tried, what went wrong in words and the one thing to do; no SDK warning, resource
warning, exception repr or traceback on the screen."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from aiohttp import web

from tests.cli.helpers import run_process, run_process_async

PATHS = {"slack": "/api/", "telegram": "/bot", "discord": "/api/v10"}
CHANNELS = {
    # port 0: `check` tries the events port, and Slack's default (3000) may be taken.
    "slack": ("type: slack\n    bot_token: ${SLACK_BOT_TOKEN}\n    port: 0\n"
              "    signing_secret: ${SLACK_SIGNING_SECRET}\n    api_base_url: {url}/api/",
              "Slack channel 'chat': could not reach the Slack Web API at {host} to ask who the "
              "bot is (auth.test): "),
    "telegram": ("type: telegram\n    token: ${TELEGRAM_BOT_TOKEN}\n    base_url: {url}/bot",
                 "telegram channel 'chat': could not reach the Telegram Bot API at {host} to "
                 "read the bot's settings (getMe): "),
    "discord": ("type: discord\n    token: ${DISCORD_BOT_TOKEN}\n    api_base_url: {url}/api/v10",
                "Discord channel 'chat': could not reach the Discord API at {host} to log in: "),
}
ENV = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s", "TELEGRAM_BOT_TOKEN": "1:abc",
       "DISCORD_BOT_TOKEN": "abc.def.ghi", "PYTHONWARNINGS": "default::ResourceWarning"}
NOISE = ("Traceback", "Warning", "WARNING", "PyNaCl", "voice", "Unclosed", "ConnectionKey",
         "ClientConnector", "httpx.", "Errno")


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def check(tmp_path: Path, platform: str, url: str) -> tuple[list[str], str]:
    entry, _ = CHANNELS[platform]
    (tmp_path / "threadline.yaml").write_text(
        f"ops: {{enabled: false}}\nchannels:\n  chat:\n    {entry.replace('{url}', url)}\n"
        "agents:\n  support: {channels: [chat]}\n", encoding="utf-8")
    outcome = run_process("check", "--timeout", "20", cwd=tmp_path, env=ENV)
    assert outcome.code == 1, outcome.out + outcome.err
    screen = outcome.out + outcome.err
    for noise in NOISE:
        assert noise not in screen, screen
    return [line for line in outcome.err.splitlines() if line.startswith("FAIL")], screen


@pytest.mark.parametrize("platform", sorted(CHANNELS))
def test_a_refused_connection_names_the_host_and_the_setting(tmp_path: Path,
                                                             platform: str) -> None:
    port = closed_port()
    url = f"http://127.0.0.1:{port}"
    failures, _ = check(tmp_path, platform, url)
    start = CHANNELS[platform][1].format(host=f"127.0.0.1:{port}")
    assert len(failures) == 1
    assert failures[0].startswith(f"FAIL  channel chat ({platform}): {start}the connection was "
                                  "refused (nothing listens at that address). Check the ")
    assert f"setting ({url}/" in failures[0]


@pytest.mark.parametrize("platform", sorted(CHANNELS))
def test_a_name_that_does_not_resolve_says_so(tmp_path: Path, platform: str) -> None:
    failures, _ = check(tmp_path, platform, "http://chat-api.invalid")
    start = CHANNELS[platform][1].format(host="chat-api.invalid")
    assert [f.split(": ", 1)[1] for f in failures] == [
        start + "the host name does not resolve (no DNS answer). Check the "
        f"{'base_url' if platform == 'telegram' else 'api_base_url'} setting "
        f"(http://chat-api.invalid{PATHS[platform]}) and that the "
        "server there is running."]


async def test_a_server_that_is_not_slack_is_named_with_its_status(tmp_path: Path) -> None:
    """An empty 404 (a wrong path, a proxy that is not Slack's) is said as such, not as
    `auth.test failed (None)`."""
    runner = web.AppRunner(web.Application())  # no routes: every request is an empty 404
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        (tmp_path / "threadline.yaml").write_text(
            "ops: {enabled: false}\nchannels:\n  chat:\n    "
            + CHANNELS["slack"][0].replace("{url}", f"http://127.0.0.1:{port}")
            + "\nagents:\n  support: {channels: [chat]}\n", encoding="utf-8")
        outcome = await run_process_async("check", cwd=tmp_path, env=ENV)
    finally:
        await runner.cleanup()
    assert outcome.code == 1
    assert (f"FAIL  channel chat (slack): Slack channel 'chat': 127.0.0.1:{port} answered "
            "auth.test with HTTP 404 and no Slack answer, so it is not the Slack Web API; check "
            f"the api_base_url setting (http://127.0.0.1:{port}/api/): it is the Web API root, "
            "ending in /api/") in outcome.err
