"""Only signed, fresh, well-formed requests become turns; each refusal says what to do.

Forged signatures, a timestamp replayed from outside the window, an unsigned request, a body
that is not JSON or lacks what a message needs, and bodies or texts over the limits are each
answered with a JSON error naming the problem, and leave nothing in the store.
"""

from __future__ import annotations

import time

import aiohttp
import pytest

from tests.channels.http.conftest import Rig
from tests.fakes.http_caller import sign


async def refused(rig: Rig, status: int, error: str, **send: object) -> str:
    """Send (`FakeCaller.send` arguments); assert the refusal; its message."""
    fields: dict[str, object] = {"conversation_id": "c-1", "message_id": "m-1",
                                 "text": "hello", **send}
    got, answer = await rig.caller.send(rig.channel.url, **fields)  # type: ignore[arg-type]
    assert (got, answer["error"]) == (status, error), answer
    assert await rig.store.get("http:api:c-1") == []
    return str(answer["message"])


async def test_a_forged_signature_is_refused(rig: Rig) -> None:
    message = await refused(rig, 401, "bad_signature", secret="not-the-shared-secret")
    assert "HMAC-SHA256" in message


async def test_a_body_changed_after_signing_is_refused(rig: Rig) -> None:
    url = rig.channel.url
    when = int(time.time())
    signed = b'{"conversation_id": "c-1", "message_id": "m-1", "text": "hello", ' \
             b'"speaker": {"id": "x"}}'
    async with aiohttp.ClientSession() as session, session.post(
            url, data=signed.replace(b"hello", b"HELLO"),
            headers={"X-Threadline-Timestamp": str(when),
                     "X-Threadline-Signature": sign(rig.caller.secret, when, signed)}) as got:
        assert (got.status, (await got.json())["error"]) == (401, "bad_signature")


async def test_a_replayed_old_timestamp_is_refused(rig: Rig) -> None:
    message = await refused(rig, 401, "stale_timestamp", timestamp=int(time.time()) - 3600)
    assert "replay window of 300 s" in message


async def test_an_unsigned_request_is_refused(rig: Rig) -> None:
    async with aiohttp.ClientSession() as session, session.post(
            rig.channel.url, json={"conversation_id": "c-1", "message_id": "m-1",
                                   "text": "hello", "speaker": {"id": "x"}}) as got:
        assert (got.status, (await got.json())["error"]) == (401, "unsigned")


@pytest.mark.parametrize(("body", "error"), [
    (b"{not json", "malformed_body"),
    (b"[1, 2]", "malformed_body"),
    (b'{"conversation_id": "c-1", "message_id": "m-1", "speaker": {"id": "x"}}', "bad_text"),
    (b'{"conversation_id": "c 1", "message_id": "m-1", "text": "hi", "speaker": {"id": "x"}}',
     "bad_conversation_id"),
    (b'{"conversation_id": "c-1", "text": "hi", "speaker": {"id": "x"}}', "bad_message_id"),
    (b'{"conversation_id": "c-1", "message_id": "m-1", "text": "hi"}', "bad_speaker"),
    (b'{"conversation_id": "c-1", "message_id": "m-1", "text": "hi", "speaker": {"id": "x"},'
     b' "to": 7}', "bad_to"),
])
async def test_a_malformed_body_is_refused_in_words(rig: Rig, body: bytes, error: str) -> None:
    await refused(rig, 400, error, body=body)
    assert rig.channel.skipped_events == 1  # signed: the caller's mistake, counted in /metrics


async def test_an_oversized_body_is_refused(rig: Rig) -> None:
    message = await refused(rig, 413, "body_too_large", text="x" * 5000)
    assert "4096 bytes" in message


async def test_an_oversized_text_is_refused(rig: Rig) -> None:
    message = await refused(rig, 413, "message_too_long", text="y" * 501)
    assert "at most 500" in message


async def test_a_refused_request_leaves_the_endpoint_serving(rig: Rig) -> None:
    await refused(rig, 401, "bad_signature", secret="wrong")
    status, _ = await rig.caller.send(rig.channel.url, conversation_id="c-1", message_id="m-1",
                                      text="hello")
    assert status == 202
    await rig.caller.wait_for_replies(1)
    assert rig.channel.skipped_events == 0


async def test_a_fetch_must_be_signed_over_its_own_target(rig: Rig) -> None:
    when = int(time.time())
    base = rig.channel.url.removesuffix("/http/messages")
    signed_for = "/http/messages/replies?after=0"
    async with aiohttp.ClientSession() as session, session.get(
            f"{base}/http/messages/replies?after=5",
            headers={"X-Threadline-Timestamp": str(when),
                     "X-Threadline-Signature": sign(rig.caller.secret, when,
                                                    signed_for.encode())}) as got:
        assert (got.status, (await got.json())["error"]) == (401, "bad_signature")


async def test_a_secret_in_rotation_is_accepted_beside_the_old_one(rig: Rig) -> None:
    when = int(time.time())
    body = (b'{"conversation_id": "c-1", "message_id": "m-1", "text": "hello", '
            b'"speaker": {"id": "x"}}')
    both = f"{sign('the-old-secret', when, body)}, {sign(rig.caller.secret, when, body)}"
    async with aiohttp.ClientSession() as session, session.post(
            rig.channel.url, data=body,
            headers={"X-Threadline-Timestamp": str(when),
                     "X-Threadline-Signature": both}) as got:
        assert got.status == 202
