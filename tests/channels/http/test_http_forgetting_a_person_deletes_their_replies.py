"""Forgetting a person who spoke through an `http` channel deletes the replies kept for them.

The outbox keeps each reply's text for the caller; `threadline people forget` deletes the
person's turns and everything hanging on them, and the replies in the outbox are among those.
Another customer's replies stay.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.channels.http.conftest import Rig
from threadline.cli import main as threadline

SECRET = "zanzibar"


async def test_forget_deletes_the_persons_kept_replies(
        rig: Rig, sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    await rig.caller.send(rig.channel.url, conversation_id="c-1", message_id="m-1",
                          text=f"my gate code is {SECRET}", speaker="ann")
    await rig.caller.send(rig.channel.url, conversation_id="c-2", message_id="m-2",
                          text="my dog is called Rex", speaker="bob")
    await rig.caller.wait_for_replies(2)
    kept = await rig.outbox.after("api", cursor=0, limit=10)
    assert any(SECRET in r.text for r in kept)

    forget = ["people", "forget", "http:api:ann", "--url", sqlite_url, "--yes"]
    assert await asyncio.to_thread(threadline, forget) == 0
    assert "forgot" in capsys.readouterr().err

    left = await rig.outbox.after("api", cursor=0, limit=10)
    assert [r.text for r in left] == ["re: Bob: my dog is called Rex"]
