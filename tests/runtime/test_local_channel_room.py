"""The local channel: lines become addressed turns in `local:ROOM`, replies come back."""

from __future__ import annotations

from pathlib import Path

import pytest

from threadline.agents.agent import Agent
from threadline.agents.offline import OfflineModel
from threadline.backends.sql.store import SqlConversationStore
from threadline.channels.local import LocalChannel, LocalReply
from threadline.errors import ChannelError
from threadline.team import Team


async def test_addressed_line_is_stored_and_answered(tmp_path: Path) -> None:
    heard: list[LocalReply] = []
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        agents = [Agent(name=n, conversation_history=store, provider=OfflineModel())
                  for n in ("support", "billing")]
        team = Team(agents)
        room = LocalChannel(room="shop", on_reply=heard.append)
        team.attach(room)
        with pytest.raises(ChannelError, match="local channel 'local' is not started"):
            await room.say("@support hi")
        await team.start()
        try:
            inbound = await room.say("@Support where is order 7?", user="ada")
            await room.say("just thinking aloud", user="ada")
        finally:
            await team.stop()
        assert inbound.conversation_id == "local:shop"
        assert inbound.metadata.mentions == ("support",)
        assert [(r.agent_name, r.in_reply_to) for r in heard] == [("support", inbound.id)]
        turns = await store.get("local:shop")
        assert [(t.participant.id, t.participant.kind) for t in turns] == [
            ("ada", "user"), ("support", "agent"), ("ada", "user")]
        assert turns[1].content == heard[0].text
        for agent in agents:
            await agent.close()
