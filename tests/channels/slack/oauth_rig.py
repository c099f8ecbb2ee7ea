"""A Slack channel with oauth on a fake Slack with two workspaces (Alpha and Beta), on a real
store: install each over HTTP, speak from either, see which token each reply used."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from cryptography.fernet import Fernet

from tests.channels.recording import RecordingEvents
from tests.fakes.slack import FakeSlack
from threadline.backends.parts import parts_of
from threadline.backends.sql import SqlConversationStore
from threadline.channels.platform import ChannelContext
from threadline.channels.slack import SlackChannel
from threadline.channels.slack.platform import PLATFORM, SlackSettings

KEY = Fernet.generate_key().decode()
ALPHA, BETA = "T0ALPHA", "T0BETA"


@dataclass
class Rig:
    fake: FakeSlack
    channel: SlackChannel
    events: RecordingEvents
    store: SqlConversationStore

    @property
    def base_url(self) -> str:
        return self.channel.events_url.removesuffix("/slack/events")

    async def install(self, team_id: str) -> None:
        status, body = await self.fake.install(f"{self.base_url}/slack/install",
                                               team_id=team_id)
        assert status == 200, body

    async def say(self, team_id: str, text: str, *, channel: str = "C0GENERAL") -> int:
        delivery = await self.fake.deliver_event(
            self.channel.events_url, self.fake.message_event(text, channel=channel),
            team_id=team_id)
        return delivery.status

    def posts_by_team(self) -> dict[str, list[str]]:
        """The text of each chat.postMessage, by the workspace of the token it came with."""
        found: dict[str, list[str]] = {}
        for call in self.fake.calls_to("chat.postMessage"):
            team = self.fake.tokens[call.token or ""].team_id
            found.setdefault(team, []).append(str(call.params["text"]))
        return found


def oauth_channel(fake: FakeSlack, store: SqlConversationStore, *, key: str = KEY,
                  **oauth: Any) -> SlackChannel:
    """A Slack channel with oauth, built from its settings as `threadline run` builds it."""
    settings = SlackSettings.model_validate({
        "type": "slack", "mode": "http", "signing_secret": fake.signing_secret,
        "api_base_url": fake.url, "host": "127.0.0.1", "port": 0, "streaming": False,
        "oauth": {"client_id": fake.client_id, "client_secret": fake.client_secret,
                  "token_key": key, "authorize_url": fake.authorize_url, **oauth}})
    context = ChannelContext(platform_part=parts_of(store).platform_part("slack"))
    channel = PLATFORM.build("slack", settings, context)
    assert isinstance(channel, SlackChannel)
    return channel


@asynccontextmanager
async def oauth_rig(url: str, **oauth: Any) -> AsyncIterator[Rig]:
    async with FakeSlack() as fake, SqlConversationStore(url) as store:
        fake.add_team(ALPHA, name="Alpha", bot_user_id="U0ALPHABOT", bot_id="B0ALPHA")
        fake.add_team(BETA, name="Beta", bot_user_id="U0BETABOT", bot_id="B0BETA")
        fake.add_user("U0ALICE", display_name="Alice")
        fake.add_channel("C0GENERAL", name="general")
        channel = oauth_channel(fake, store, **oauth)
        events = RecordingEvents(store)
        await channel.start(events)
        fake.redirect_url = channel.events_url.replace("/slack/events", "/slack/oauth_redirect")
        try:
            yield Rig(fake, channel, events, store)
        finally:
            await channel.stop()
