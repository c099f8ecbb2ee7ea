"""A multi-agent channel transcript: three humans, three agents, threads and DMs."""

from __future__ import annotations

from datetime import timedelta

from tests.history.helpers import T0
from threadline.history.model import MessageMetadata, Participant, StoredMessage
from threadline.history.store import ConversationStore

ANN = Participant(kind="user", id="U1", display_name="Ann")
BOB = Participant(kind="user", id="U2", display_name="Bob")
CAROL = Participant(kind="user", id="U3", display_name="Carol")
SUPPORT = Participant(kind="agent", id="support", display_name="Support")
BILLING = Participant(kind="agent", id="billing", display_name="Billing")
TRIAGE = Participant(kind="agent", id="triage", display_name="Triage")
CHANNEL = "slack:T1:C1"


class Transcript:
    """Builds turns in one conversation with increasing minutes and Slack-like message ids."""

    def __init__(self, conversation_id: str = CHANNEL) -> None:
        self.conversation_id = conversation_id
        self.turns: list[StoredMessage] = []

    def say(self, who: Participant, text: str, *, scope: str = "channel",
            mentions: tuple[str, ...] = (), thread_id: str | None = None,
            reply_to: str | None = None) -> StoredMessage:
        minute = len(self.turns)
        message_id = f"1700000000.{minute:04d}"
        message = StoredMessage(
            id=f"{self.conversation_id}:{message_id}",
            conversation_id=self.conversation_id,
            participant=who,
            content=text,
            timestamp=T0 + timedelta(minutes=minute),
            scope=scope,  # type: ignore[arg-type]
            metadata=MessageMetadata(channel_type="slack", message_id=message_id,
                                     mentions=mentions, thread_id=thread_id,
                                     reply_to_participant_id=reply_to),
        )
        self.turns.append(message)
        return message

    async def store_in(self, store: ConversationStore) -> None:
        await store.append_many(self.turns)
