"""Two `http` channels are two systems: the same speaker id in each is two people.

Each caller names its own users, so `customer-42` of one shop is not `customer-42` of the
other: person memory asked in one channel never finds the other's words (the identity is
`http:CHANNEL:SPEAKER`, as Slack's is `slack:TEAM:USER`), and an identity is written so.
"""

from __future__ import annotations

import pytest

from tests.history.helpers import turn
from threadline.errors import ConfigError
from threadline.history.model import Participant
from threadline.history.speakers import identity_of
from threadline.history.store import ConversationStore
from threadline.people import person_memory_for
from threadline.people.identities import parse_identity

CUSTOMER = Participant(kind="user", id="customer-42", display_name="Ada")


async def test_the_same_speaker_id_on_two_channels_shares_no_memory(
        store: ConversationStore) -> None:
    await store.append_many([
        turn("my locker code is 5531", conversation_id="http:shop-a:order-1", who=CUSTOMER,
             scope="dm"),
        turn("my locker code is 9999", conversation_id="http:shop-b:order-7", who=CUSTOMER,
             scope="dm", minute=1),
    ])
    asking = turn("what was my locker code?", conversation_id="http:shop-a:order-2",
                  who=CUSTOMER, scope="dm", minute=2)
    memory = await person_memory_for(store, asking)
    assert memory is not None
    found = [m.content for m in await memory.search("locker code")]
    assert found == ["my locker code is 5531"]
    assert identity_of(asking) == "http:shop-a:customer-42"


def test_an_http_identity_names_its_channel() -> None:
    assert parse_identity("http:shop-a:customer-42") == "http:shop-a:customer-42"
    with pytest.raises(ConfigError, match="http:TEAM:USER"):
        parse_identity("http:customer-42")
