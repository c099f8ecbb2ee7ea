"""Two agents, each its own Teams bot, both installed in one channel (with the permission to
read every message there): a message whose `<at>` mention names one bot is answered by that
bot's agent alone, in the message's thread, whichever bot Teams delivers it to first."""

from __future__ import annotations

import jwt
import pytest

from tests.channels.teams.test_teams_replies import stored
from tests.fakes.teams import ALICE, APP_ID, TENANT, FakeTeams
from threadline.agents import Agent
from threadline.agents.offline import OfflineModel
from threadline.backends.sql import SqlConversationStore
from threadline.channels.teams import TeamsChannel
from threadline.team import Team

BILLING_APP = "00000000-0000-4000-8000-0000000b1111"


@pytest.mark.parametrize("first", ["support", "billing"])
async def test_the_bot_named_by_the_mention_answers_alone(
        sqlite_url: str, teams: FakeTeams, first: str) -> None:
    teams.apps[BILLING_APP] = "billing-password"
    async with SqlConversationStore(sqlite_url) as store:
        support, billing = (Agent(name=n, conversation_history=store, provider=OfflineModel())
                            for n in ("support", "billing"))
        team = Team([support, billing])
        bots = {"support": TeamsChannel(name="teams-support", port=0, streaming=False,
                                        bot_name="Support", **teams.settings()),
                "billing": TeamsChannel(name="teams-billing", port=0, streaming=False,
                                        bot_name="Billing",
                                        **teams.settings(app_id=BILLING_APP))}
        team.attach(bots["support"], agents=[support])
        team.attach(bots["billing"], agents=[billing])
        await team.start()
        try:
            root = teams.next_id()
            thread = teams.channel(root)
            activity = teams.message("<at>Billing</at> was I charged twice?", chat=thread,
                                     mentions={"Billing": f"28:{BILLING_APP}"}, reply_to=root)
            order = [first, *({"support", "billing"} - {first})]
            for name in order:
                app_id = BILLING_APP if name == "billing" else APP_ID
                delivered = {**activity, "recipient": {"id": f"28:{app_id}", "name": name}}
                status, _ = await teams.deliver(bots[name].messaging_url, delivered,
                                                app_id=app_id)
                assert status == 200
            [reply] = await teams.wait_for_messages(1)
            turns = await stored(
                store, f"teams:{TENANT}:19%3Achannel-general%40thread.tacv2:{root}", 2)
        finally:
            await team.stop()

    assert len(teams.messages()) == 1
    assert reply.conversation_id == thread.id and reply.body["replyToId"] == activity["id"]
    assert [t.participant.id for t in turns] == [ALICE.aad_object_id, "billing"]
    # Posted as the billing bot: with the token the login server gave its app.
    assert jwt.decode(reply.token, options={"verify_signature": False})["appid"] == BILLING_APP
