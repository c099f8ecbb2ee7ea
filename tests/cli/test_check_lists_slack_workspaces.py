"""`threadline check` on a Slack app installed by OAuth lists the workspaces it is installed in,
and says plainly when the token key is missing, malformed, or not the one the tokens were
sealed with."""

from __future__ import annotations

from pathlib import Path

from cryptography.fernet import Fernet

from tests.channels.slack.oauth_rig import ALPHA, BETA, KEY, oauth_rig
from tests.cli.helpers import run_process_async
from tests.fakes.slack import FakeSlack


def config(tmp_path: Path, fake: FakeSlack, database: str) -> Path:
    path = tmp_path / "threadline.yaml"
    path.write_text(f"""\
store:
  url: {database}
ops:
  enabled: false
channels:
  slack:
    type: slack
    signing_secret: ${{SLACK_SIGNING_SECRET}}
    api_base_url: {fake.url}
    port: 0
    oauth:
      client_id: "{fake.client_id}"
      client_secret: ${{SLACK_CLIENT_SECRET}}
      token_key: ${{THREADLINE_SLACK_TOKEN_KEY}}
agents:
  support:
    channels: [slack]
""", encoding="utf-8")
    return path


async def test_check_lists_each_installed_workspace_and_refuses_a_wrong_key(
        tmp_path: Path) -> None:
    database = f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}"
    async with oauth_rig(database) as rig:
        await rig.install(ALPHA)
        await rig.install(BETA)
    fake = rig.fake
    path = config(tmp_path, fake, database)
    env = {"SLACK_SIGNING_SECRET": fake.signing_secret,
           "SLACK_CLIENT_SECRET": fake.client_secret}

    listed = await run_process_async("check", str(path), cwd=tmp_path,
                                     env={**env, "THREADLINE_SLACK_TOKEN_KEY": KEY})
    assert listed.code == 0, listed.err
    [line] = [x for x in listed.out.splitlines() if x.startswith("ok    channel slack")]
    # Newest first: Beta was installed after Alpha.
    assert line.startswith(f"ok    channel slack (slack): installed in {BETA} (Beta): bot "
                           f"U0BETABOT, installed 20")
    assert f"; {ALPHA} (Alpha): bot U0ALPHABOT, installed 20" in line

    wrong = await run_process_async(
        "check", str(path), cwd=tmp_path,
        env={**env, "THREADLINE_SLACK_TOKEN_KEY": Fernet.generate_key().decode()})
    assert wrong.code == 1
    assert "FAIL  channel slack (slack):" in wrong.err
    assert "does not decrypt the stored workspace tokens; was the key changed?" in wrong.err

    malformed = await run_process_async("check", str(path), cwd=tmp_path,
                                        env={**env, "THREADLINE_SLACK_TOKEN_KEY": "short"})
    assert malformed.code == 2
    assert "token_key is not a Fernet key" in malformed.err
    assert "Fernet.generate_key()" in malformed.err

    missing = await run_process_async("check", str(path), cwd=tmp_path, env=env)
    assert missing.code == 2
    assert "THREADLINE_SLACK_TOKEN_KEY" in missing.err
