"""A seeded long-conversation set with planted facts and questions about them.

Conversations span months of sessions in one channel: a few humans and one or two agents, small
talk between the facts. Each fact is stated once (sometimes across two turns) in the speaker's own
words ("I", "my") and asked about later in other words (the person named by name, synonyms,
other word forms, relative dates), with the ids of the turns that answer it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from threadline.history import MessageMetadata, Participant, StoredMessage

HUMANS = ["Ann", "Bob", "Carol", "Dmitri", "Esther", "Farid", "Grace", "Hiro"]
AGENTS = ["support", "billing", "triage"]

SMALL_TALK = [
    "morning everyone", "anyone up for lunch later?", "the coffee machine is broken again",
    "did you watch the game last night?", "it is raining like crazy here", "lol",
    "I am heading into a meeting, back in an hour", "thanks, that helps", "good point",
    "has anyone seen the new dashboard?", "weekend plans anyone?", "traffic was terrible today",
    "the build is green again", "I will check and get back to you", "sounds good to me",
    "happy friday!", "can someone review my pull request?", "the wifi keeps dropping",
    "we should order pizza for the team", "in order to ship faster we skip the demo",
    "what a week", "I need a vacation", "the printer on floor two is jammed",
    "who is on call tonight?", "the quarterly numbers look fine", "nice work on the release",
]

# Which kind of question each fact makes, in the order of FACTS, for reporting misses.
FACT_KINDS = [
    "pet name", "order number", "moved city (synonym)", "preference", "new job",
    "birthday", "flight over two turns", "relative date", "daughter's name", "car (brand)",
    "favourite band", "allergy (word form)", "wifi password", "running distance", "warranty",
]

# (statement, question, second statement for a fact spread over two turns, or None)
FACTS = [
    ("I just adopted a {animal}, we named her {pet}",
     "What did {name} name the new {animal}?", None),
    ("my order number is {number} and it still has not arrived",
     "Which order number did {name} say was missing?", None),
    ("we finally moved to {city} last week", "Which city did {name} move to?", None),
    ("honestly I prefer {pref} over {other}", "Does {name} like {pref} or {other} better?", None),
    ("I started a new job as a {job} at {company}", "What job did {name} start?", None),
    ("my birthday is on {date}", "When is {name}'s birthday?", None),
    ("I booked the flight to {city}", "When does {name}'s flight to {city} leave?",
     "the flight leaves on {weekday} at {hour}"),
    ("yesterday I dropped my laptop and the screen cracked",
     "When did {name} break the laptop screen?", None),
    ("my daughter {child} starts school in {month}", "What is the name of {name}'s daughter?",
     None),
    ("I drive a {color} {car}", "What car does {name} drive?", None),
    ("my favourite band is {band}", "Which band does {name} like most?", None),
    ("I am allergic to {food}", "What food allergy does {name} have?", None),
    ("my wifi password at home is {word}{number}", "What is {name}'s home wifi password?", None),
    ("I run {distance} kilometres every morning", "How far does {name} run in the mornings?",
     None),
    ("the warranty on my {device} expires in {month}",
     "When does {name}'s {device} warranty expire?", None),
]

FILL = {
    "animal": ["cat", "dog", "parrot", "rabbit", "hamster", "turtle"],
    "pet": ["Miso", "Pixel", "Biscuit", "Nori", "Waffles", "Pepper", "Juniper", "Tofu"],
    "number": [str(n) for n in range(1000, 9999, 137)],
    "city": ["Lisbon", "Osaka", "Denver", "Tallinn", "Nairobi", "Porto", "Quebec", "Hanoi"],
    "pref": ["tea", "cycling", "mountains", "novels", "jazz", "sushi"],
    "other": ["coffee", "running", "beaches", "podcasts", "techno", "pizza"],
    "job": ["nurse", "carpenter", "data analyst", "pilot", "teacher", "chef"],
    "company": ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay"],
    "date": ["March 3rd", "July 19th", "October 2nd", "December 24th", "May 11th"],
    "weekday": ["Monday", "Tuesday", "Thursday", "Saturday"],
    "hour": ["7am", "noon", "6pm", "9:30pm"],
    "child": ["Maya", "Lena", "Zoe", "Ines", "Aiko"],
    "month": ["September", "January", "April", "November"],
    "color": ["red", "silver", "green", "black"],
    "car": ["Volvo", "Subaru", "Tesla", "Fiat"],
    "band": ["Radiohead", "ABBA", "Daft Punk", "Metallica"],
    "food": ["peanuts", "shellfish", "gluten", "strawberries"],
    "word": ["sunflower", "pancake", "zeppelin", "marmalade"],
    "distance": ["five", "eight", "ten", "twelve"],
    "device": ["phone", "fridge", "camera", "laptop"],
}


@dataclass
class Question:
    conversation_id: str
    text: str
    asked_of: str
    evidence_ids: list[str]
    kind: str


@dataclass
class Conversation:
    conversation_id: str
    turns: list[StoredMessage] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


def _fill(template: str, values: dict[str, str]) -> str:
    return template.format(**values)


def build_conversation(
    rng: random.Random,
    conversation_id: str,
    *,
    turns: int,
    sessions: int,
    humans: list[str],
    agents: list[str],
    facts: int,
    address_facts: bool = False,
) -> Conversation:
    """One channel's history with `facts` planted facts and a question for each."""
    conversation = Conversation(conversation_id)
    moment = datetime(2024, 1, 8, 9, 0, tzinfo=UTC)
    people = {n: Participant(kind="user", id=f"U{n.upper()}", display_name=n) for n in humans}
    bots = {a: Participant(kind="agent", id=a, display_name=a.capitalize()) for a in agents}
    fact_slots = set(rng.sample(range(5, turns - 10), facts))
    session_length = max(turns // sessions, 1)
    # second halves of two-turn facts: (turn index, speaker, text, question)
    follow_ups: list[tuple[int, Participant, str, Question]] = []
    for index in range(turns):
        if index % session_length == 0:
            moment += timedelta(days=rng.randint(3, 9), hours=rng.randint(0, 8))
        moment += timedelta(minutes=rng.randint(1, 7))
        speaker_name = rng.choice(humans)
        speaker = people[speaker_name]
        mentions: tuple[str, ...] = ()
        answers: Question | None = None
        if follow_ups and follow_ups[0][0] <= index:
            _, speaker, content, answers = follow_ups.pop(0)
        elif index in fact_slots:
            template, question_template, second = FACTS[len(conversation.questions) % len(FACTS)]
            values = {k: rng.choice(v) for k, v in FILL.items()}
            values["name"] = speaker_name
            content = template.format(**values)
            agent = rng.choice(agents)
            if address_facts:
                content = f"@{agent} {content}"
                mentions = (agent,)
            kind = FACT_KINDS[len(conversation.questions) % len(FACTS)]
            answers = Question(conversation_id, question_template.format(**values), agent, [],
                               kind=kind)
            conversation.questions.append(answers)
            if second:
                follow_ups.append((index + rng.randint(2, 6), speaker,
                                   second.format(**values), answers))
        elif rng.random() < 0.12:
            speaker = bots[rng.choice(agents)]
            content = rng.choice(["Happy to help!", "I have noted that.",
                                  "Let me know if there is anything else.",
                                  "I can look into that for you."])
        else:
            content = " ".join(rng.sample(SMALL_TALK, rng.randint(1, 3)))
        message = StoredMessage(
            id=f"{conversation_id}:{index}", conversation_id=conversation_id,
            participant=speaker, content=content, timestamp=moment,
            metadata=MessageMetadata(channel_type="slack", message_id=f"{index}",
                                     mentions=mentions),
        )
        conversation.turns.append(message)
        if answers is not None:
            answers.evidence_ids.append(message.id)
    return conversation


def question_turn(conversation: Conversation, question: Question, position: int) -> StoredMessage:
    """The question, asked at the end of the conversation by another human, to the agent."""
    last = conversation.turns[-1]
    return StoredMessage(
        id=f"{conversation.conversation_id}:q{position}",
        conversation_id=conversation.conversation_id,
        participant=Participant(kind="user", id="UASKER", display_name="Quinn"),
        content=f"@{question.asked_of} {question.text}",
        timestamp=last.timestamp + timedelta(days=2),
        metadata=MessageMetadata(channel_type="slack", message_id=f"q{position}",
                                 mentions=(question.asked_of,)),
    )


def long_conversations(seed: int = 7, count: int = 6, turns: int = 1200,
                       facts: int = 60) -> list[Conversation]:
    """The recall benchmark's set: `count` channels of `turns` turns over 20+ sessions."""
    rng = random.Random(seed)
    result = []
    for n in range(count):
        humans = rng.sample(HUMANS, rng.randint(2, 4))
        agents = rng.sample(AGENTS[:2], rng.randint(1, 2))
        result.append(build_conversation(rng, f"slack:T1:C{n}", turns=turns, sessions=24,
                                         humans=humans, agents=agents, facts=facts))
    return result
