"""Teams ids carry `:` `;` `@` `=`; Threadline's ids built from them read as every other
platform's: a workspace (the tenant), a person who can be named in `access:`, and a
conversation a schedule can post to again."""

from __future__ import annotations

from tests.fakes.teams import ALICE, TENANT, FakeTeams
from threadline.channels.teams.activities import message_turn
from threadline.channels.teams.platform import TeamsSettings
from threadline.history.model import StoredMessage
from threadline.history.speakers import identity_of, workspace_of
from threadline.people.identities import parse_identity


def turn_in(chat_kind: str) -> StoredMessage:
    """A message from Alice as Teams would deliver it in a chat of this kind, read."""
    teams = FakeTeams()
    teams.service_url = "https://smba.example.invalid/teams"
    chat = {"personal": teams.personal(ALICE), "group": teams.group(),
            "channel": teams.channel("1700000000099")}[chat_kind]
    turn = message_turn(teams.message("hi", chat=chat, activity_id="1700000000123"),
                        default_tenant="unused", own_ids=frozenset(), allow_bots=False)
    assert turn is not None
    return turn


def test_each_scope_reads_as_platform_workspace_conversation() -> None:
    dm, group, thread = turn_in("personal"), turn_in("group"), turn_in("channel")
    assert dm.conversation_id == f"teams:{TENANT}:a%3A1chat-with-alice"
    assert group.conversation_id == f"teams:{TENANT}:19%3Agroupchat-0001%40thread.v2"
    assert thread.conversation_id == \
        f"teams:{TENANT}:19%3Achannel-general%40thread.tacv2:1700000000099"
    for turn in (dm, group, thread):
        assert workspace_of(turn.conversation_id) == f"teams:{TENANT}"
        assert ";" not in turn.conversation_id and "@" not in turn.conversation_id
    assert thread.id == f"teams:{TENANT}:19%3Achannel-general%40thread.tacv2:1700000000123"
    assert (dm.scope, group.scope, thread.scope) == ("dm", "channel", "thread")


def test_a_person_is_their_entra_object_id_and_can_be_named_in_access_lists() -> None:
    identity = identity_of(turn_in("group"))
    assert identity == f"teams:{ALICE.aad_object_id}"
    assert parse_identity(identity) == identity


async def test_a_conversation_id_leads_back_to_where_teams_posts() -> None:
    from threadline.channels.teams import TeamsChannel

    settings = TeamsSettings(type="teams", app_id="a", app_password="p", tenant_id=TENANT)
    channel = TeamsChannel(app_id="a", app_password="p", tenant_id=TENANT,
                           login_url=settings.login_url,
                           openid_metadata_url=settings.openid_metadata_url)
    meta = channel.metadata_for(turn_in("channel").conversation_id)
    assert (meta.channel_id, meta.thread_id) == ("19:channel-general@thread.tacv2",
                                                 "1700000000099")
    meta = channel.metadata_for(turn_in("personal").conversation_id)
    assert (meta.channel_id, meta.thread_id) == ("a:1chat-with-alice", None)
