"""A question waiting for a person's confirmation is theirs: nobody else closes or buries it.

Ann asks to be erased; before she confirms, Mallory asks and confirms his own erasure, then
posts 60 messages. Ann's confirmation still finds her question, and Mallory's confirmations
never act on Ann's.
"""

from __future__ import annotations

from threadline.agents import Agent
from threadline.agents.offline import OfflineModel
from threadline.backends.sql import SqlConversationStore
from threadline.channels.local import LocalChannel
from threadline.team import Team


async def test_someone_elses_confirmation_and_chatter_leave_anns_question_open(
        sqlite_url: str) -> None:
    async with SqlConversationStore(sqlite_url) as store:
        agent = Agent(name="support", conversation_history=store, provider=OfflineModel())
        team = Team([agent])
        room = LocalChannel(name="local")
        team.attach(room)
        await team.start()
        try:
            async def say(text: str, user: str) -> list[str]:
                before = len(room.sent)
                await room.say(text, user=user)
                return [r.text for r in room.sent[before:]]

            await say("@support I am Ann and my address is 4 Elm Road", "ann")
            [question] = await say("/forget-me", "ann")
            assert "/forget-me confirm" in question
            await say("/forget-me", "mallory")
            [mallory_done] = await say("/forget-me confirm", "mallory")
            assert mallory_done.startswith("Done: erased")
            for n in range(60):
                await say(f"filler {n}", "mallory")
            [ann_done] = await say("/forget-me confirm", "ann")
            assert ann_done.startswith("Done: erased"), ann_done
            assert not any("Elm Road" in m.content for m in await store.get("local:main"))
            [again] = await say("/forget-me confirm", "mallory")
            assert again.startswith("Nothing to confirm")
        finally:
            await team.stop()
