"""`check` says what would keep a Matrix bot deaf or mute, before it starts: a token the
homeserver refuses, a homeserver that does not answer, encrypted rooms it cannot read, no
nobody allowed to invite it."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.channels.matrix.rig import matrix_channel
from tests.cli.helpers import run_process_async
from tests.fakes.matrix import ALICE, FakeMatrix
from threadline.backends.sql import SqlConversationStore
from threadline.channels.matrix import MatrixChannel
from threadline.config import load_settings
from threadline.errors import ChannelAuthError, ChannelError, ConfigError


async def test_check_names_encrypted_rooms_and_learns_who_the_bot_is(
        fake: FakeMatrix, sqlite_url: str) -> None:
    plain = fake.add_room("Plain", members=[ALICE])
    secret = fake.add_room("Secret", members=[ALICE], encrypted=True)
    async with SqlConversationStore(sqlite_url) as store:
        problems = await matrix_channel(fake, store, auto_join=["fake.test"]).check()
        channel = matrix_channel(fake, store)
        await channel.check()
    assert len(problems) == 1
    assert f"room {secret} is end-to-end encrypted" in problems[0]
    assert plain not in problems[0]
    assert channel.identity is not None and channel.identity.user_id == "@support:fake.test"
    assert channel.identity.display_name == "Support"


async def test_check_of_a_bot_nobody_may_invite_says_so(fake: FakeMatrix) -> None:
    channel = MatrixChannel(name="mx", homeserver=fake.url, access_token=fake.token)
    [problem] = await channel.check()
    assert "in no room" in problem and "channels.mx.auto_join is empty" in problem


async def test_a_refused_token_and_a_silent_homeserver_are_said_in_words(
        fake: FakeMatrix) -> None:
    wrong = MatrixChannel(name="mx", homeserver=fake.url, access_token="syt_wrong")
    with pytest.raises(ChannelAuthError, match="refused the access token"):
        await wrong.check()
    fake.whoami_answers = False
    with pytest.raises(ChannelError, match="whoami"):
        await MatrixChannel(name="mx", homeserver=fake.url, access_token=fake.token).check()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    nobody = MatrixChannel(name="mx", homeserver=f"http://127.0.0.1:{port}",
                           access_token=fake.token)
    with pytest.raises(ChannelError, match=r"channels\.mx\.homeserver"):
        await nobody.check()


def test_settings_that_cannot_work_are_refused() -> None:
    with pytest.raises(ConfigError, match="homeserver must be"):
        MatrixChannel(name="mx", homeserver="matrix.example.org", access_token="t")
    with pytest.raises(ConfigError, match="access_token is empty"):
        MatrixChannel(name="mx", homeserver="https://matrix.example.org", access_token="")


def test_a_config_without_homeserver_or_token_names_both(tmp_path: Path) -> None:
    path = tmp_path / "threadline.yaml"
    path.write_text("channels:\n  matrix:\n    type: matrix\nagents:\n  support:\n"
                    "    system_prompt: hi\n    channels: [matrix]\n", encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_settings(path, env={})
    assert "channels.matrix.homeserver: required setting is missing" in str(refused.value)
    assert "channels.matrix.access_token: required setting is missing" in str(refused.value)


async def test_threadline_check_names_the_bot_and_its_encrypted_room(
        fake: FakeMatrix, tmp_path: Path) -> None:
    secret = fake.add_room("Secret", members=[ALICE], encrypted=True)
    config = tmp_path / "threadline.yaml"
    config.write_text(f"""\
store:
  url: sqlite+aiosqlite:///{tmp_path / 'threadline.db'}
ops:
  enabled: false
channels:
  matrix:
    type: matrix
    homeserver: {fake.url}
    access_token: ${{MATRIX_ACCESS_TOKEN}}
agents:
  support:
    channels: [matrix]
""", encoding="utf-8")
    said = await run_process_async("check", str(config), cwd=tmp_path,
                                   env={"MATRIX_ACCESS_TOKEN": fake.token})
    lines = (said.out + said.err).splitlines()
    assert "ok    channel matrix (matrix): bot support (@support:fake.test)" in lines, lines
    assert any(line.startswith("warn  channel matrix (matrix):") and
               f"room {secret} is end-to-end encrypted" in line for line in lines), lines
    refused = await run_process_async("check", str(config), cwd=tmp_path,
                                      env={"MATRIX_ACCESS_TOKEN": "syt_revoked"})
    assert refused.code == 1
    assert "refused the access token (M_UNKNOWN_TOKEN)" in refused.out + refused.err
