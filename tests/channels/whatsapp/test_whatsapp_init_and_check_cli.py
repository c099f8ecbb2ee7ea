"""`threadline init --platform whatsapp` writes a config that loads and points at its guide;
the guide names every command; `threadline check` says who the number is and what is not set
up, and names the host and the setting when the Graph API cannot be reached."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from tests.cli.helpers import run_cli, run_process, run_process_async
from tests.fakes.whatsapp import FakeWhatsApp
from threadline.channels.whatsapp.platform import WhatsAppSettings
from threadline.cli.init import offered_commands, render
from threadline.config import load_settings

GUIDE = Path(__file__).parents[3] / "docs" / "platforms" / "whatsapp.md"
ENV = {"WHATSAPP_PHONE_NUMBER_ID": "106540352242922", "WHATSAPP_ACCESS_TOKEN": "EAAG",
       "WHATSAPP_APP_SECRET": "s", "WHATSAPP_VERIFY_TOKEN": "v"}


def test_the_starter_config_loads_and_names_its_guide(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bot.yaml"
    outcome = run_cli(capsys, "init", "--platform", "whatsapp", str(path))
    assert outcome.code == 0 and "set-up guide: docs/platforms/whatsapp.md" in outcome.err
    settings = load_settings(path, env=ENV)
    channel = settings.channels["whatsapp"]
    assert isinstance(channel, WhatsAppSettings)
    assert channel.phone_number_id == "106540352242922" and channel.window_template is None
    assert {c.name for c in settings.agents["support"].channels} == {"local", "whatsapp"}
    assert "# Set-up, step by step: docs/platforms/whatsapp.md" in path.read_text()


def test_the_guide_names_every_command(tmp_path: Path) -> None:
    path = tmp_path / "threadline.yaml"
    offered = [c.name for c in offered_commands(render("whatsapp", str(path)), path)]
    named = {m.replace("_", "-") for m in re.findall(r"`/([a-z_-]+)", GUIDE.read_text())}
    assert offered and not [c for c in offered if c not in named]


def config(tmp_path: Path, graph_url: str) -> None:
    (tmp_path / "threadline.yaml").write_text(f"""\
store:
  url: sqlite+aiosqlite:///{tmp_path / 'threadline.db'}
ops: {{enabled: false}}
channels:
  chat:
    type: whatsapp
    phone_number_id: "106540352242922"
    access_token: ${{WHATSAPP_ACCESS_TOKEN}}
    app_secret: ${{WHATSAPP_APP_SECRET}}
    verify_token: ${{WHATSAPP_VERIFY_TOKEN}}
    graph_url: {graph_url}
    webhook_port: 0
agents:
  support: {{channels: [chat]}}
""", encoding="utf-8")


async def test_check_says_who_the_number_is_and_what_is_not_set_up(tmp_path: Path) -> None:
    async with FakeWhatsApp() as fake:
        config(tmp_path, fake.url)
        outcome = await run_process_async("check", cwd=tmp_path, env={
            "WHATSAPP_ACCESS_TOKEN": fake.token, "WHATSAPP_APP_SECRET": fake.app_secret,
            "WHATSAPP_VERIFY_TOKEN": fake.verify_token})
    assert outcome.code == 0, outcome.out + outcome.err
    assert "ok    channel chat (whatsapp): bot Shop (106540352242922)" in outcome.out
    assert "warn  channel chat (whatsapp): whatsapp channel 'chat': no window_template" in (
        outcome.out)


def test_check_names_the_host_and_the_setting_it_could_not_reach(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config(tmp_path, f"http://127.0.0.1:{port}")
    outcome = run_process("check", "--timeout", "20", cwd=tmp_path, env={**ENV})
    assert outcome.code == 1, outcome.out + outcome.err
    [failure] = [line for line in outcome.err.splitlines() if line.startswith("FAIL")]
    assert failure.startswith(
        f"FAIL  channel chat (whatsapp): whatsapp channel 'chat': could not reach the WhatsApp "
        f"Graph API at 127.0.0.1:{port} to read the business phone number: "), failure
    assert "graph_url" in failure
    assert "Traceback" not in outcome.out + outcome.err
