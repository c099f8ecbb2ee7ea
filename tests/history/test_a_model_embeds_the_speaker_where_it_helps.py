"""MiniLM embeds a turn with its speaker's name, so a question naming a person comes nearer that
person's turns; WordLlama embeds the words alone (with the name it lost a point fused with
BM25, which already weighs names). Real models, real stores (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

from functools import cache

import numpy as np

from tests.history.embedding import vectors_of
from tests.history.helpers import ANN, BOB, turn
from threadline.history.embedding_model import embedded_text, load_embedder
from threadline.history.indexer import VectorIndexer
from threadline.history.store import ConversationStore
from threadline.history.vectors import Embedder

COACHING = "I train the under-12 football team on Saturdays"


@cache
def _model(name: str) -> Embedder:
    embedder = load_embedder(name)
    assert embedder is not None, f"the {name} extra is part of `dev`; run `make .venv/.installed`"
    return embedder


async def test_a_question_naming_a_person_finds_their_turn_before_the_same_words_of_another(
        store: ConversationStore) -> None:
    minilm = _model("minilm")
    await store.append_many([turn(COACHING, who=ANN), turn(COACHING, who=BOB, minute=1),
                             turn("the parking lot closes at nine", who=BOB, minute=2)])
    progress = await VectorIndexer(store, vectors_of(store), minilm).fill()
    assert progress.done == 3
    [question] = minilm.embed(["Which sport does Bob coach?"])
    hits = await vectors_of(store).nearest("c1", question, minilm.name, limit=3)
    said = {t.id: (t.participant.display_name, t.content)
            for t in await store.get_by_ids("c1", [h.message_id for h in hits])}
    score = {said[h.message_id]: h.score for h in hits}
    assert said[hits[0].message_id] == ("Bob", COACHING)
    assert score[("Bob", COACHING)] > score[("Ann", COACHING)]  # the words alone would tie


def test_each_model_is_given_what_the_development_half_measured_better() -> None:
    said = turn(COACHING, who=BOB)
    assert embedded_text(_model("minilm"), said) == f"Bob: {COACHING}"
    assert embedded_text(_model("wordllama"), said) == COACHING
    words, named = (np.frombuffer(v, dtype="<f4") for v in _model("minilm").embed(
        [COACHING, f"Bob: {COACHING}"]))
    assert float(words @ named) < 0.999  # the name changes the vector, not only the text
