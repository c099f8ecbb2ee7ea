"""A vote names a reply by its platform id, looked up in the conversation the vote is sent in:
nobody rates a reply of another conversation, and a vote that names no agent reply, or no vote
at all, is answered with what to do instead and keeps nothing."""

from __future__ import annotations

from tests.feedback.voting import book_of, recorder_for, voting_team
from threadline.channels.local import LocalChannel
from threadline.history.memory import InMemoryConversationStore


async def test_a_vote_reaches_only_a_reply_of_its_own_conversation() -> None:
    store = InMemoryConversationStore()
    shop = LocalChannel(name="local", room="shop")
    team = voting_team(store, shop, recorder=recorder_for(store))
    elsewhere = LocalChannel(name="elsewhere", room="elsewhere")
    team.attach(elsewhere)
    await team.start()
    try:
        await shop.say("@support where is my parcel?", user="ada")
        [reply] = shop.sent
        await elsewhere.say(f"/feedback down {reply.message_id}", user="mallory")
        await shop.say(f"/feedback sideways {reply.message_id}", user="ada")
        await shop.say("/feedback down 123456", user="ada")  # no such reply here
        await shop.say(f"/feedback down {reply.message_id} it never said where", user="ada")
    finally:
        await team.stop()

    answers = [r.text for r in (*elsewhere.sent, *shop.sent[1:])]
    assert answers[0].startswith("There is no agent reply with that id in this conversation")
    assert answers[1].startswith("Use /feedback up|down REPLY [why]")
    assert answers[2].startswith("There is no agent reply with that id in this conversation")
    assert answers[3] == "Thanks: your 👎 on support's reply and its reason are kept."
    [vote] = await book_of(store).recent()
    assert (vote.voter, vote.vote, vote.reason) == ("local:ada", "down", "it never said where")
    assert vote.reply_id == f"{reply.in_reply_to}>support"  # the reply, not the question
