"""A custom store whose appends fail for a while: every turn is answered, and stored once, in
order, once the store works again (through the team's outbox, as for the built-in stores)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.interceptors.scripted import ANN, RecordingChannel, ScriptedModel, say
from threadline.agents.agent import Agent
from threadline.errors import StoreUnavailableError
from threadline.history import InMemoryConversationStore
from threadline.history.model import StoredMessage
from threadline.team import Team


class FlakyStore:
    """A user's own store (not one of ours): every call but `append` goes to a real store."""

    def __init__(self) -> None:
        self._real = InMemoryConversationStore()
        self.down = False

    async def append(self, message: StoredMessage) -> bool:
        return (await self.append_many([message]))[0]

    async def append_many(self, messages: Sequence[StoredMessage]) -> list[bool]:
        if self.down:
            raise StoreUnavailableError("flaky store: the disk is away")
        return await self._real.append_many(messages)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


async def test_a_custom_store_that_fails_for_a_while_loses_and_reorders_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # where a custom store's outbox goes by default
    store = FlakyStore()
    team = Team([Agent(name="support", conversation_history=store,  # type: ignore[arg-type]
                       provider=ScriptedModel())])
    channel = RecordingChannel()
    team.attach(channel)
    await team.start()

    async def ask(n: int) -> None:
        await team.until_answered(say(f"@support question {n}", who=ANN, conversation_id="c1"),
                                  channel)

    await ask(0)
    store.down = True
    for n in range(1, 4):
        await ask(n)
    assert (tmp_path / "threadline-flakystore.outbox.jsonl").stat().st_size > 0
    store.down = False
    await ask(4)
    assert await team.writer.replay()
    await team.stop()

    assert [text for _, text, _ in channel.sent] == [
        f"re: Ann: @support question {n}" for n in range(5)]  # every turn was answered
    stored = [m.content for m in await store.get("c1")]
    assert stored == [line for n in range(5)
                      for line in (f"@support question {n}", f"re: Ann: @support question {n}")]
