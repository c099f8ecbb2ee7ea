"""`threadline eval capture RECORD_ID`: the conversation up to a recorded reply, frozen into a
case (the operator writes what to expect).

A reply record names the turn answered, its conversation and the agent. The case keeps every
stored turn of that conversation up to and including that turn, summaries and forget markers
included, as stored (ids, speakers, times, platform metadata): put back in a fresh store, they
give the agent the same turns, the same summary and the same recall it had, so the prompt it
saw is the prompt it sees again. Turns stored after it (its own reply among them) are left out.
The bytes of files the turns name are not copied (the turns still say what was sent).
"""

from __future__ import annotations

from threadline.backends import Backend
from threadline.errors import ConfigError
from threadline.evals.cases import Case, case_yaml
from threadline.history.codec import message_to_dict

TEXT_IN_NAME = 48


async def capture_case(backend: Backend, record_id: str, *, name: str | None = None) -> Case:
    """The case made from reply record `record_id` (an id or an 8+ character prefix)."""
    if backend.records is None:
        raise ConfigError(f"backend {backend.name} keeps no reply records: nothing to capture")
    record = await backend.records.get(record_id)
    if record is None:
        raise ConfigError(f"no reply record {record_id!r} (or the prefix is ambiguous); "
                          "`threadline inspect list` shows the records")
    found = await backend.history.get_by_ids(record.conversation_id, [record.inbound_id])
    if not found or found[0].sequence is None:
        raise ConfigError(f"reply record {record.id} answered turn {record.inbound_id!r}, "
                          f"which {record.conversation_id!r} no longer holds (pruned or "
                          "forgotten): the conversation cannot be frozen")
    inbound = found[0]
    earlier = await backend.history.get(record.conversation_id,
                                        through_sequence=inbound.sequence,
                                        include_summaries=True)
    history = [message_to_dict(m) for m in earlier if m.id != inbound.id]
    text = " ".join(inbound.content.split())[:TEXT_IN_NAME]
    return Case(name=name or f"{record.agent} on {text!r} ({record.id[:8]})",
                history=history, turn=message_to_dict(inbound), to=[record.agent],
                captured_from=record.id)


def captured_yaml(case: Case, *, reply: str) -> str:
    """The case as a file to edit: a note on what to write, the reply given then, the case."""
    said = "\n".join(f"#   {line}" for line in reply.splitlines()) or "#   (nothing)"
    return (f"# Captured from reply record {case.captured_from}. Write under expect: what the\n"
            "# reply should do (contains, not_contains, matches, answered_by, tools, isolated,\n"
            "# max_tokens, max_latency_ms, judge); see docs/evals.md. The reply then was:\n"
            f"{said}\n" + case_yaml([case]))
