"""Each record says why its agent answered: its name, an alias, a DM, a reply to it, a thread
it answered in, another agent naming it, or respond_to_all. Records of an in-memory store
stay in memory."""

from __future__ import annotations

from dataclasses import replace

from threadline.agents import Agent, OfflineModel
from threadline.backends.parts import records_for
from threadline.channels.local import LocalChannel
from threadline.history import InMemoryConversationStore
from threadline.history.model import MessageMetadata
from threadline.inspector import InMemoryReplyRecords, ReplyRecorder
from threadline.team import Team


async def test_every_routing_reason_is_recorded() -> None:
    store = InMemoryConversationStore()
    records = records_for(store)
    assert isinstance(records, InMemoryReplyRecords)
    recorder = ReplyRecorder(records)
    agents = [Agent(name=name, conversation_history=store, provider=OfflineModel(),
                    observer=recorder, aliases=aliases)
              for name, aliases in (("support", ["helpdesk"]), ("billing", []), ("notes", []))]
    team = Team(agents)
    room = LocalChannel(name="local", room="shop")
    team.attach(room, respond_to_all=["notes"])
    await team.start()
    try:
        await room.say("@support where is my parcel?", user="ada")
        await room.say("@helpdesk and the invoice?", user="ada")
        await room.say("@support ask @billing whether I paid", user="ada")
        support_reply = room.sent[0]
        reply = room.message("thanks, that helps", user="ada")
        await team.handle(replace(reply, metadata=replace(
            reply.metadata, reply_to_message_id=support_reply.message_id)), room)
        follow_up = room.message("one more thing", user="ada")
        await team.handle(replace(follow_up, metadata=replace(
            follow_up.metadata, thread_id=support_reply.message_id,
            reply_to_message_id=support_reply.message_id)), room)
        direct = room.message("hello in private", user="ada")
        await team.handle(replace(direct, scope="dm", metadata=MessageMetadata(
            channel_type="local", channel_name="local", message_id="dm-1")), room)
        await recorder.flush()
    finally:
        await team.stop()

    recorded = [(r.agent, r.addressed_because) for r in reversed(await records.recent())]
    assert recorded == [
        ("support", "mention"), ("notes", "respond_to_all"),
        ("support", "alias"), ("notes", "respond_to_all"),
        # Named by the person, so billing answers it too; support's reply names billing, which
        # answers it, and that spends the budget of four agent turns for one message.
        ("support", "mention"), ("billing", "mention"), ("notes", "respond_to_all"),
        ("billing", "agent_mention"),
        ("support", "reply"), ("notes", "respond_to_all"),
        ("support", "thread"), ("notes", "respond_to_all"),
        ("support", "dm"), ("notes", "respond_to_all"),
    ]
    newest = (await records.recent(limit=1))[0]
    assert newest.detail is None  # listings leave the detail out
    whole = await records.get(newest.id)
    assert whole is not None and whole.detail is not None
    assert whole.detail["inbound"]["content"] == "hello in private"
    assert whole.detail["model_calls"][0]["format"] == "neutral"  # the offline model
