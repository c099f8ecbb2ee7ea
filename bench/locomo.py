"""Real long conversations for the recall benchmark: LoCoMo, read from shared/data.

Each file is one conversation between two people over up to 35 sessions, with questions and the
turns that answer them (see the data folder's README). The turns become stored turns of two
human participants; each question is asked later by a third person, addressed to the agent.
Adversarial questions (category 5, no answer in the conversation) are left out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from threadline.history import MessageMetadata, Participant, StoredMessage

# The data sits in shared/data beside the checkout (or a folder or two further up for worktrees).
DATA = next((p / "shared" / "data" / "locomo-dev" for p in Path(__file__).resolve().parents
             if (p / "shared" / "data" / "locomo-dev").is_dir()), Path("locomo-dev"))
AGENT = "support"
KINDS = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
ASKER = Participant(kind="user", id="UASKER", display_name="Quinn")

_SESSION = re.compile(r"session_(\d+)")
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


@dataclass
class Question:
    text: str
    kind: str
    evidence_ids: list[str]


@dataclass
class Conversation:
    conversation_id: str
    turns: list[StoredMessage] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)

    def asked(self, position: int) -> StoredMessage:
        """Question `position` as the newest turn: a day after the last session, to the agent."""
        question = self.questions[position]
        return StoredMessage(
            id=f"{self.conversation_id}:q{position}", conversation_id=self.conversation_id,
            participant=ASKER, content=f"@{AGENT} {question.text}",
            timestamp=self.turns[-1].timestamp + timedelta(days=1),
            metadata=MessageMetadata(channel_type="slack", message_id=f"q{position}",
                                     mentions=(AGENT,)),
        )


def session_start(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' as an aware datetime."""
    return datetime.strptime(text.replace(",", ""), "%I:%M %p on %d %B %Y").replace(tzinfo=UTC)


def load(path: Path) -> Conversation:
    raw = json.loads(path.read_text())
    conversation = Conversation(f"locomo:{path.stem}")
    sessions = sorted(int(m.group(1)) for key in raw if (m := _SESSION.fullmatch(key)))
    people: dict[str, Participant] = {}
    for number in sessions:
        start = session_start(raw[f"session_{number}_date_time"])
        for index, entry in enumerate(raw[f"session_{number}"]):
            speaker = people.setdefault(entry["speaker"], Participant(
                kind="user", id=f"U{entry['speaker'].upper()}", display_name=entry["speaker"]))
            text = entry["text"]
            if entry.get("blip_caption"):
                text = f"{text} [shares a photo of {entry['blip_caption']}]"
            conversation.turns.append(StoredMessage(
                id=f"{conversation.conversation_id}:{entry['dia_id']}",
                conversation_id=conversation.conversation_id, participant=speaker,
                content=text, timestamp=start + timedelta(minutes=index),
                metadata=MessageMetadata(channel_type="slack", message_id=entry["dia_id"]),
            ))
    known = {t.id for t in conversation.turns}
    for qa in raw["qa"]:
        if qa["category"] not in KINDS:
            continue
        ids = [f"{conversation.conversation_id}:D{s}:{t}"
               for entry in qa["evidence"] for s, t in _EVIDENCE.findall(entry)]
        ids = [i for i in dict.fromkeys(ids) if i in known]
        if ids:
            conversation.questions.append(Question(qa["question"], KINDS[qa["category"]], ids))
    return conversation


def locomo_conversations(folder: Path = DATA) -> list[Conversation]:
    """Every conversation in the folder, in file order; empty when the data is not there."""
    return [load(path) for path in sorted(folder.glob("*.json"))]
