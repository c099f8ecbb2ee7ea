"""A forged Slack file object cannot send the bot token elsewhere, nor read the bot's own ports.

A member's event names `url_private`; the bot fetches only from Slack's file hosts (here the
fake's, named in `file_hosts`). A URL on another host, on a private address, on this process's
own ops port (even when an operator named it), and Slack's host redirecting to another host or
to the ops port: no request reaches them, none carries the token, and nothing the ops port
would say reaches a prompt. The message is still answered, saying the file was not fetched.
"""

from __future__ import annotations

import json
from pathlib import Path

from aiohttp import web

from tests.fakes.anthropic import FakeAnthropic, text
from tests.fakes.slack import FakeSlack
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.files import SqlFileStore
from threadline.channels.files import FileIntake
from threadline.channels.slack import SlackChannel
from threadline.listening import Listener, serve
from threadline.team import Team

OPS_WORDS = "conversation slack:T0FAKE:CSECRET said: the merger closes Friday"


class Recorder:
    """A server that keeps every request's path and Authorization header."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str | None]] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append((request.path, request.headers.get("Authorization")))
        return web.Response(text=OPS_WORDS)

    async def start(self, *, own: bool) -> tuple[web.AppRunner, int]:
        """Served on 127.0.0.1 port 0; `own`: as this process serves its ops port."""
        app = web.Application()
        app.router.add_get("/{tail:.*}", self.handle)
        runner = web.AppRunner(app)
        await runner.setup()
        if own:
            return runner, await serve(runner, Listener("127.0.0.1", 0, "ops.port", "ops.host"))
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return runner, int(runner.addresses[0][1])


async def test_no_file_request_leaves_slack_hosts_or_reaches_the_ops_port(tmp_path: Path) -> None:
    elsewhere, ops = Recorder(), Recorder()
    elsewhere_runner, elsewhere_port = await elsewhere.start(own=False)
    ops_runner, ops_port = await ops.start(own=True)
    try:
        async with FakeSlack() as fake, FakeAnthropic() as model, SqlConversationStore(
                f"sqlite+aiosqlite:///{tmp_path / 's.db'}") as store:
            fake.add_user("U0ALICE", display_name="Alice")
            fake.add_channel("C0GENERAL", name="general")
            forged = [
                fake.file_at(f"http://localhost:{elsewhere_port}/steal", name="a.txt"),
                fake.file_at(f"http://10.20.30.40:{elsewhere_port}/steal", name="b.txt"),
                fake.file_at(f"http://127.0.0.1:{ops_port}/metrics", name="c.txt"),
                fake.file_at(fake.redirecting_to(f"http://127.0.0.1:{elsewhere_port}/hop"),
                             name="d.txt"),
                fake.file_at(fake.redirecting_to(f"http://127.0.0.1:{ops_port}/console"),
                             name="e.txt"),
            ]
            model.script(*[text("Answered.")] * len(forged))
            team = Team([Agent(name="support", conversation_history=store,
                               provider=AnthropicProvider(model.client(), stream=False))],
                        files=FileIntake(store=SqlFileStore(store)), respond_to_all=True)
            settings = fake.channel_settings()
            # Even an operator naming the ops port does not open it: it is this process's own.
            settings["file_hosts"] = [*settings["file_hosts"], f"127.0.0.1:{ops_port}"]
            channel = SlackChannel(**settings)
            team.attach(channel, respond_to_all=True)
            await team.start()
            try:
                for number, shared in enumerate(forged, start=1):
                    delivery = await fake.deliver_event(
                        channel.events_url, fake.message_event("read this", files=[shared]))
                    assert delivery.status == 200
                    await fake.wait_for_calls("chat.postMessage", number)
            finally:
                await team.stop()
            prompts = [json.dumps(body) for body in model.bodies]
    finally:
        await elsewhere_runner.cleanup()
        await ops_runner.cleanup()
    assert elsewhere.requests == [] and ops.requests == []
    assert len(prompts) == len(forged)
    for prompt in prompts:
        assert "read this" in prompt and "was not fetched" in prompt
        assert "merger" not in prompt
