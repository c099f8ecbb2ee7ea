"""A team of agents on a Matrix channel against the fake homeserver, for the Matrix tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from tests.fakes.matrix import FakeMatrix
from threadline.agents import Agent, OfflineModel
from threadline.backends.parts import parts_of
from threadline.backends.sql import SqlConversationStore
from threadline.channels.matrix import MatrixChannel
from threadline.channels.matrix.sync_tokens import SyncTokens
from threadline.team import Team


def matrix_channel(fake: FakeMatrix, store: SqlConversationStore, **settings: object
                   ) -> MatrixChannel:
    """A channel on `fake` whose sync position is kept by `store`'s backend."""
    part = parts_of(store).platform_part("matrix")
    assert isinstance(part, SyncTokens)
    options: dict[str, object] = {"sync_timeout_ms": 2000, **settings}
    return MatrixChannel(name="mx", homeserver=fake.url, access_token=fake.token,
                         sync_tokens=part, **options)  # type: ignore[arg-type]


@asynccontextmanager
async def matrix_team(fake: FakeMatrix, url: str, *, agents: Sequence[str] = ("support",),
                      **settings: object) -> AsyncIterator[tuple[Team, MatrixChannel]]:
    """Offline agents on one Matrix channel, started; stopped on the way out."""
    async with SqlConversationStore(url) as store:
        team = Team([Agent(name=n, conversation_history=store, provider=OfflineModel())
                     for n in agents])
        channel = matrix_channel(fake, store, **settings)
        team.attach(channel)
        await team.start()
        try:
            yield team, channel
        finally:
            await team.stop()
