"""The embedding model loads from its installed package, checked, and finds meaning, not words."""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest
from structlog.testing import capture_logs

from threadline.errors import EmbeddingModelError
from threadline.history import embedding_model
from threadline.history.embedding_model import (
    MINILM_WEIGHTS,
    MODELS,
    WORDLLAMA_WEIGHTS,
    ShippedFile,
    load_embedder,
)
from threadline.history.vectors import Embedder


def vectors(embedder: Embedder, *texts: str) -> list[np.ndarray]:
    return [np.frombuffer(v, dtype="<f4") for v in embedder.embed(texts)]


@pytest.mark.parametrize("model", list(MODELS))
def test_a_question_is_closer_to_its_answer_than_to_other_talk(model: str) -> None:
    embedder = load_embedder(model)
    assert isinstance(embedder, Embedder)
    question, answer, *others = vectors(
        embedder, "Which sport does she coach?",
        "I train the under-12 football team on Saturdays",
        "We bought a new fridge for the kitchen", "My flight to Lisbon got delayed again")
    assert all(question @ answer > question @ other for other in others)


@pytest.mark.parametrize("model", list(MODELS))
def test_vectors_are_unit_float32_one_per_text_in_order(model: str) -> None:
    embedder = load_embedder(model)
    assert embedder is not None
    texts = ["hello there", "", "a much longer sentence about gardens and tomatoes", "hello there"]
    made = vectors(embedder, *texts)
    assert [len(v) for v in made] == [embedder.dimensions] * 4
    assert np.allclose([np.linalg.norm(v) for v in (made[0], made[2])], 1.0, atol=1e-5)
    assert not made[1].any()  # nothing to mean: similar to nothing
    assert made[0].tobytes() == made[3].tobytes()
    assert embedder.embed([]) == []
    assert embedder.name.startswith(MODELS[model].name_prefix)


@pytest.mark.parametrize("model", list(MODELS))
def test_a_text_embedded_alone_is_the_vector_a_batch_gives_it(model: str) -> None:
    """A question is embedded alone on the event loop; the turns it is compared with were
    embedded in batches by the indexer: the same text gives the same bytes either way."""
    embedder = load_embedder(model)
    assert embedder is not None
    texts = ["Which sport does she coach?", "", "  ", "order 4401 東京の天気 " * 3,
             "x" * (embedding_model.MAX_EMBEDDED_CHARS + 50)]
    together = embedder.embed(texts)
    assert [embedder.embed([text])[0] for text in texts] == together


def test_the_default_model_is_wordllama_and_another_is_chosen_by_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    default = load_embedder()
    assert default is not None and default.name.startswith("wordllama-l2-256@")
    monkeypatch.setenv("THREADLINE_EMBEDDING_MODEL", "minilm")
    chosen = load_embedder()
    assert chosen is not None and chosen.name.startswith("all-minilm-l6-v2-int8+speaker@")
    assert chosen.dimensions == 384
    monkeypatch.setenv("THREADLINE_EMBEDDING_MODEL", "off")
    assert load_embedder() is None  # recall by words only, extra installed or not
    monkeypatch.setenv("THREADLINE_EMBEDDING_MODEL", "bert-huge")
    with pytest.raises(EmbeddingModelError, match="choose one of wordllama, minilm, or off"):
        load_embedder()


@pytest.mark.parametrize("weights", [WORDLLAMA_WEIGHTS, MINILM_WEIGHTS])
def test_weights_that_differ_from_the_pin_refuse_to_load(weights: ShippedFile) -> None:
    altered = ShippedFile(weights.package, weights.path, "0" * 64)
    with pytest.raises(EmbeddingModelError, match="not the pinned") as caught:
        altered.read()
    assert "threadline[embeddings]" in str(caught.value)
    assert "THREADLINE_EMBEDDING_MODEL=off" in str(caught.value)


def test_a_missing_weights_file_names_the_package_and_the_fix() -> None:
    gone = ShippedFile("wordllama", "weights/no_such_file.safetensors", "0" * 64)
    with pytest.raises(EmbeddingModelError, match="'wordllama' package is missing"):
        gone.read()


def test_without_the_extra_there_is_no_embedder_and_one_line_says_why(
        monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def not_installed(name: str, *args: Any) -> Any:
        return None if name == "wordllama" else real_find_spec(name, *args)

    monkeypatch.setattr(embedding_model.importlib.util, "find_spec", not_installed)
    with capture_logs() as logs:
        assert load_embedder() is None
    assert [e["event"] for e in logs] == ["embeddings_unavailable"]
    assert logs[0]["missing"] == ["wordllama"]
    assert "threadline[embeddings]" in logs[0]["fix"]


@pytest.mark.parametrize("model", list(MODELS))
def test_only_a_short_question_through_static_vectors_is_embedded_at_once(model: str) -> None:
    """At once (on the event loop) only where that costs less than a hop to a thread."""
    embedder = load_embedder(model)
    assert embedder is not None
    question = "Which sport does she coach?"
    at_once = embedding_model.embeds_at_once(embedder, [question])
    assert at_once == (model == "wordllama")
    assert not embedding_model.embeds_at_once(embedder, [question * 20])
