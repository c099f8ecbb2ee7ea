"""The person memory of one turn: whose words, which keys, decided here and nowhere else.

From a group (channel, thread, topic) the person's own words said in that workspace's groups;
from a DM with the bot their own words anywhere, on every identity linked to them. Never a DM
into a group, never one workspace's groups into another's, never another person's words.
"""

from __future__ import annotations

from threadline.history.beside import parts_beside
from threadline.history.meaning import meaning_search
from threadline.history.model import StoredMessage
from threadline.history.person_memory import PersonMemory
from threadline.history.speakers import (
    identity_of,
    speaker_key,
    speaker_space_key,
    workspace_of,
)
from threadline.history.store import ConversationStore, SpeakerSearchStore
from threadline.people.directory import PeopleDirectory


async def person_memory_for(store: ConversationStore, message: StoredMessage, *,
                            by_meaning: bool = True) -> PersonMemory | None:
    """The person memory for answering `message`, or None (no person wrote it, or the store
    cannot search across conversations); `by_meaning`: it also finds their words by meaning
    where the model and vectors are there."""
    identity = identity_of(message)
    if identity is None:
        return None
    parts = parts_beside(store)
    speakers: SpeakerSearchStore | None = parts.speakers
    if speakers is None:  # the backend cannot search one person's turns
        return None
    people: PeopleDirectory | None = parts.people
    person = await people.person_of(identity) if people is not None else None
    identities = person.identities if person is not None else (identity,)
    if message.scope == "dm":
        keys = frozenset(speaker_key(i) for i in identities)
    else:
        workspace = workspace_of(message.conversation_id)
        keys = frozenset(speaker_space_key(i, workspace) for i in identities)
    return PersonMemory(store=speakers, person_name=message.participant.display_name,
                        keys=keys, conversation_id=message.conversation_id,
                        before=message.timestamp,
                        meaning=await meaning_search(store) if by_meaning else None)
