"""`threadline run` with a Slack app installed by OAuth: the runtime hands the channel the
backend's installation book, two workspaces install it through the running process, and each
person is answered with their own workspace's token."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

from cryptography.fernet import Fernet

from tests.fakes.slack import FakeSlack
from tests.launch import spawn
from tests.ports import free_port
from tests.runtime.platforms import wait_for_log
from threadline.backends.sql.store import SqlConversationStore


async def test_run_installs_two_workspaces_and_answers_each_with_its_own_token(
        tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "threadline.yaml"
    async with FakeSlack() as fake:
        for team, name in (("T0ALPHA", "Alpha"), ("T0BETA", "Beta")):
            fake.add_team(team, name=name, bot_user_id=f"U0{team[2:]}BOT", bot_id=f"B0{team[2:]}")
        fake.add_user("U0ALICE", display_name="Alice")
        fake.redirect_url = f"http://127.0.0.1:{port}/slack/oauth_redirect"
        config.write_text(f"""\
store:
  url: sqlite+aiosqlite:///{tmp_path / 'threadline.db'}
log:
  format: json
ops:
  enabled: false
channels:
  slack:
    type: slack
    signing_secret: ${{SLACK_SIGNING_SECRET}}
    api_base_url: {fake.url}
    host: 127.0.0.1
    port: {port}
    streaming: false
    oauth:
      client_id: "{fake.client_id}"
      client_secret: ${{SLACK_CLIENT_SECRET}}
      token_key: ${{THREADLINE_SLACK_TOKEN_KEY}}
      authorize_url: {fake.authorize_url}
agents:
  support:
    system_prompt: You help.
    channels: [slack]
""", encoding="utf-8")
        process = await spawn("run", "--no-input", str(config), cwd=tmp_path,
            env={"PATH": str(Path(sys.executable).parent),
                 "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
                 "SLACK_SIGNING_SECRET": fake.signing_secret,
                 "SLACK_CLIENT_SECRET": fake.client_secret,
                 "THREADLINE_SLACK_TOKEN_KEY": Fernet.generate_key().decode()},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert process.stderr is not None
        try:
            await wait_for_log(process.stderr, "runtime.started")
            events_url = f"http://127.0.0.1:{port}/slack/events"
            for team in ("T0ALPHA", "T0BETA"):
                status, body = await fake.install(f"http://127.0.0.1:{port}/slack/install",
                                                  team_id=team)
                assert status == 200, body
                delivery = await fake.deliver_event(
                    events_url, fake.message_event(f"hello from {team}", channel="D0ALICE",
                                                   channel_type="im"), team_id=team)
                assert delivery.status == 200
            posts = await fake.wait_for_calls("chat.postMessage", 2)
            process.send_signal(signal.SIGTERM)
            async with asyncio.timeout(60):
                _, rest = await process.communicate()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert process.returncode == 0, rest.decode()

    assert sorted(fake.tokens[p.token or ""].team_id for p in posts) == ["T0ALPHA", "T0BETA"]
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}") as store:
        for team in ("T0ALPHA", "T0BETA"):
            turns = await store.get(f"slack:{team}:D0ALICE")
            assert [t.participant.kind for t in turns] == ["user", "agent"]
            assert turns[0].content == f"hello from {team}"
