"""`threadline run` on the fake WhatsApp: the channel config, the process, what it logged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fakes.whatsapp import FakeWhatsApp
from tests.ports import free_port
from tests.runtime.platforms import Platform


def whatsapp_platform(fake: FakeWhatsApp, *, extra: str = "") -> Platform:
    """The channel's config (a fixed webhook port, so a restart listens where Meta posts)."""
    port = free_port()
    return Platform(f"""\
    type: whatsapp
    phone_number_id: "{fake.phone_number_id}"
    access_token: ${{WHATSAPP_ACCESS_TOKEN}}
    app_secret: ${{WHATSAPP_APP_SECRET}}
    verify_token: ${{WHATSAPP_VERIFY_TOKEN}}
    graph_url: {fake.url}
    webhook_port: {port}
{extra}""", {"WHATSAPP_ACCESS_TOKEN": fake.token, "WHATSAPP_APP_SECRET": fake.app_secret,
             "WHATSAPP_VERIFY_TOKEN": fake.verify_token}, fake,
        {"webhook_url": f"http://127.0.0.1:{port}/whatsapp"})


def log_events(log: Path, event: str) -> list[dict[str, Any]]:
    """The JSON log lines of `log` that are this event."""
    found = []
    for line in log.read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("event") == event:
            found.append(entry)
    return found
