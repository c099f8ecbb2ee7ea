"""A person's right to see and erase what is kept about them: `export_person`, `forget_person`.

Both take a person id or any platform identity (an identity nobody linked is a person alone),
walk what the backend's people part finds in bounded batches, and log their progress.
Forget ends with an audit line holding counts and the time, never content; a `/forget-me` command
calls `forget_speaker(store, message)` with the message that asked (and was confirmed).

The outbox (turns waiting on disk for the store) is purged too, when given.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import IO, Any

import structlog

from threadline.errors import ConfigError
from threadline.history.beside import parts_beside
from threadline.history.codec import message_to_dict
from threadline.history.files import file_record, kept_files
from threadline.history.model import StoredMessage
from threadline.history.speakers import identity_of, speaker_key
from threadline.history.store import ConversationStore
from threadline.interceptors.outbox import Outbox
from threadline.people.directory import Batch, Person, people_for
from threadline.people.identities import parse_identity

log = structlog.get_logger("threadline.people")

PROGRESS_BATCHES = 10  # a progress log line every this many batches (of kept.BATCH turns)
Counts = dict[str, int]
KINDS = ("turns", "replies", "summaries", "reply_records", "inbox", "deliveries", "outbox",
         "feedback")


async def resolve_person(store: ConversationStore, reference: str) -> Person:
    """The person a reference names: a person id, or an identity (alone when never linked)."""
    found = await people_for(store).find(reference.strip())
    if found is not None:
        return found
    if reference.strip().startswith("person-"):
        raise ConfigError(f"no person {reference!r}; `threadline people show IDENTITY` finds "
                          "the person of an identity")
    identity = parse_identity(reference)
    return Person("identity-" + speaker_key(identity)[1:], (identity,))


class _Progress:
    """A structlog progress line every PROGRESS_BATCHES batches, and a final one."""

    def __init__(self, event: str, person: Person) -> None:
        self.event = event
        self.log = log.bind(person=person.person_id)
        self.counts: Counts = dict.fromkeys(KINDS, 0)
        self._batches = 0

    def add(self, counts: Counts) -> None:
        for name, n in counts.items():
            self.counts[name] = self.counts.get(name, 0) + n
        self._batches += 1
        if self._batches % PROGRESS_BATCHES == 0:
            self.log.info(f"{self.event}.progress", **self.counts)

    def done(self) -> Counts:
        self.log.info(f"{self.event}.done", **self.counts)
        return self.counts


def _is_theirs(person: Person) -> Callable[[StoredMessage], bool]:
    identities = set(person.identities)
    return lambda message: identity_of(message) in identities


async def _outbox_entries(outbox: Outbox | None, person: Person) -> list[StoredMessage]:
    if outbox is None:
        return []
    theirs = _is_theirs(person)
    pending = await outbox.pending()
    asked = {m.id for m in pending if theirs(m)}
    return [m for m in pending if m.id in asked or m.id.split(">", 1)[0] in asked]


# -- export ---------------------------------------------------------------------------------


def _line(kind: str, value: dict[str, Any]) -> str:
    return json.dumps({"kind": kind, **value}, ensure_ascii=False, sort_keys=True,
                      default=repr) + "\n"


def _batch_lines(batch: Batch) -> list[str]:
    lines = [_line("turn", message_to_dict(m)) for m in batch.turns]
    lines += [_line("reply", message_to_dict(m)) for m in batch.replies]
    lines += [_line("summary", message_to_dict(m)) for m in batch.summaries]
    lines += [_line("reply_record", r) for r in batch.records]
    lines += [_line("inbox", i) for i in batch.inbox]
    lines += [_line("delivery", d) for d in batch.deliveries]
    return lines


def _files_named(messages: Iterable[StoredMessage]) -> list[str]:
    """The hashes of the kept files these turns name, in order, once each."""
    return list(dict.fromkeys(f.sha256 for f in kept_files(messages)))


async def _file_lines(store: ConversationStore, batch: Batch) -> list[str]:
    """A `file` line (its bytes in base64) for each file the batch's turns and replies name."""
    files = parts_beside(store).files
    if files is None:
        return []
    lines = []
    for file in kept_files([*batch.turns, *batch.replies]):
        data = await files.get(file.sha256)
        if data is not None:
            lines.append(_line("file", file_record(file, data)))
    return lines


async def export_person(store: ConversationStore, reference: str, target: IO[str], *,
                        outbox: Outbox | None = None) -> Counts:
    """Write everything kept about a person to `target` as JSON Lines, batch by batch.

    The first line names the person and identities; every other line has a `kind` (turn,
    reply, summary, reply_record, inbox, delivery, outbox, feedback) and the kept value.
    """
    person = await resolve_person(store, reference)
    target.write(_line("person", {"person_id": person.person_id,
                                  "identities": list(person.identities)}))
    progress = _Progress("people.export", person)
    async for batch in people_for(store).kept(person):
        target.writelines(_batch_lines(batch))
        target.writelines(await _file_lines(store, batch))
        progress.add(batch.counts())
    entries = await _outbox_entries(outbox, person)
    target.writelines(_line("outbox", message_to_dict(m)) for m in entries)
    progress.add({"outbox": len(entries)})
    votes = parts_beside(store).feedback
    cast = await votes.by_voters(person.identities) if votes is not None else []
    target.writelines(_line("feedback", v.as_dict()) for v in cast)
    progress.add({"feedback": len(cast)})
    target.flush()
    return progress.done()


# -- forget ---------------------------------------------------------------------------------


async def forget_person(store: ConversationStore, reference: str, *,
                        outbox: Outbox | None = None) -> Counts:
    """Delete everything kept about a person (see the module docstring); the counts deleted."""
    person = await resolve_person(store, reference)
    progress = _Progress("people.forget", person)
    progress.log.info("people.forget.started", identities=len(person.identities))
    entries = await _outbox_entries(outbox, person)
    if outbox is not None and entries:
        await outbox.remove([m.id for m in entries])
        progress.add({"outbox": len(entries)})
    # Their files' bytes go once no turn left names them (another person may have sent the
    # same picture).
    directory = people_for(store)
    files: list[str] = []
    async for batch in directory.kept(person):
        files += _files_named([*batch.turns, *batch.replies])
    async for counts in directory.forget(person, progress.counts):
        progress.add(counts)
    beside = parts_beside(store)
    if beside.files is not None:
        progress.add({"files": await beside.files.forget_unused(files)})
    if beside.feedback is not None:  # the votes they cast on replies, and their reasons
        progress.add({"feedback": await beside.feedback.forget_voters(person.identities)})
    return progress.done()


async def forget_speaker(store: ConversationStore, message: StoredMessage, *,
                         outbox: Outbox | None = None) -> Counts:
    """`forget_person` for whoever wrote `message` (and every identity linked to them): what a
    `/forget-me` command calls once the person has confirmed."""
    identity = identity_of(message)
    if identity is None:
        raise ConfigError(f"turn {message.id!r} was not written by a person; nothing to forget")
    return await forget_person(store, identity, outbox=outbox)
