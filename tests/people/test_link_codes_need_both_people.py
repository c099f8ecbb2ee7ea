"""The directory's side of linking by code, on every store (in memory, SQLite, PostgreSQL).

A code is taken once and only while it lives; a redeemed code opens a request that only the
person it awaits (the one who said the code, then the code's owner) can take, once, before it
expires; wrong codes are counted per identity and the
count resets after its window; `unlink` makes an identity alone again.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from tests.cli.helpers import run_cli
from threadline.backends.parts import people_for
from threadline.commands.registry import Origin
from threadline.history.model import utc_now
from threadline.history.store import ConversationStore
from threadline.people.directory import code_hash
from threadline.people.link_requests import MAX_WRONG_CODES, link_requests_for

ANN, MALLORY = "telegram:700", "slack:T1:UMAL"
ORIGIN = Origin("tg", "telegram:700", "telegram:700:5")


async def test_a_code_is_taken_once_while_it_lives(store: ConversationStore) -> None:
    people = people_for(store)
    code = await people.issue_code(ANN, origin=ORIGIN.to_json())
    taken = await people.take_code(code_hash(code))
    assert taken is not None and taken.identity == ANN
    assert Origin.from_json(taken.origin) == ORIGIN
    assert await people.take_code(code_hash(code)) is None  # once only
    expired = await people.issue_code(ANN, minutes=-1)
    assert await people.take_code(code_hash(expired)) is None
    assert await people.take_code(code_hash("TL-NOPE-NOPE")) is None
    assert await people.person_of(ANN) is None  # taking a code links nothing


async def test_only_the_person_awaited_answers_a_request_once_before_it_expires(
        store: ConversationStore) -> None:
    requests = link_requests_for(store)
    later = utc_now() + timedelta(minutes=10)
    asked = await requests.open(issuer=ANN, redeemer=MALLORY, issuer_origin=ORIGIN,
                                redeemer_origin=None, expires=later, awaiting=ANN)
    assert await requests.take(asked.request_id, MALLORY) is None  # not his to accept
    taken = await requests.take(asked.request_id, ANN)
    assert taken is not None and (taken.issuer, taken.redeemer) == (ANN, MALLORY)
    assert taken.issuer_origin == ORIGIN and taken.awaiting == ANN
    assert await requests.take(asked.request_id, ANN) is None  # answered already
    first = await requests.open(issuer=ANN, redeemer=MALLORY, issuer_origin=ORIGIN,
                                redeemer_origin=None, expires=later, awaiting=MALLORY)
    assert await requests.take(first.request_id, ANN) is None  # the redeemer answers first
    assert await requests.take(first.request_id, MALLORY) is not None
    silent = await requests.open(issuer=ANN, redeemer=MALLORY, issuer_origin=ORIGIN,
                                 redeemer_origin=None, expires=utc_now() - timedelta(seconds=1),
                                 awaiting=ANN)
    assert await requests.take(silent.request_id, ANN) is None  # expired with the code
    assert await people_for(store).person_of(MALLORY) is None


async def test_wrong_codes_are_counted_per_identity(store: ConversationStore) -> None:
    requests = link_requests_for(store)
    for _ in range(MAX_WRONG_CODES):
        await requests.said_wrong_code(MALLORY)
    assert await requests.wrong_codes(MALLORY) == MAX_WRONG_CODES
    assert await requests.wrong_codes(ANN) == 0


async def test_unlink_leaves_an_identity_alone(store: ConversationStore) -> None:
    people = people_for(store)
    await people.link([ANN, MALLORY, "discord:9"], linked_by="operator")
    assert await people.unlink(MALLORY)
    person = await people.person_of(ANN)
    assert person is not None and person.identities == ("discord:9", ANN)
    assert await people.person_of(MALLORY) is None
    assert await people.unlink(ANN)
    assert await people.person_of("discord:9") is None  # one identity left: alone again
    assert not await people.unlink(ANN)


def test_an_operator_links_and_unlinks_from_the_command_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "threadline.db"
    db.touch()
    linked = run_cli(capsys, "people", "link", "--db", str(db), ANN, MALLORY)
    assert linked.code == 0 and ANN in linked.out
    shown = run_cli(capsys, "people", "show", "--db", str(db), ANN)
    assert MALLORY in shown.out
    assert run_cli(capsys, "people", "unlink", "--db", str(db), MALLORY).code == 0
    again = run_cli(capsys, "people", "unlink", "--db", str(db), MALLORY)
    assert again.code == 2 and "not linked" in again.err
