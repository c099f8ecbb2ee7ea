"""Loading the embedding model keeps BLAS to one thread (the vector math is many small products
made from several threads at once; BLAS's own threads only contend with them), unless the
operator set BLAS's threads."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from threadline.history.embedding_model import load_embedder
from threadline.history.similarity import BLAS_THREAD_VARIABLES


def blas_threads() -> set[int]:
    return {int(lib["num_threads"]) for lib in threadpool_info() if lib["user_api"] == "blas"}


@pytest.fixture
def many_blas_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in BLAS_THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    limits = threadpool_limits(limits=2, user_api="blas")  # as BLAS starts on a 2-core machine
    assert blas_threads() == {2}
    yield
    limits.restore_original_limits()


def test_loading_the_model_keeps_blas_to_one_thread(many_blas_threads: None) -> None:
    assert load_embedder() is not None
    assert blas_threads() == {1}


def test_blas_threads_the_operator_set_are_left_as_set(
        many_blas_threads: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    assert load_embedder() is not None
    assert blas_threads() == {2}


def test_without_threadpoolctl_the_model_still_loads(
        many_blas_threads: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """An install from before the extra brought threadpoolctl: slower, never broken."""
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)  # import raises ImportError
    assert load_embedder() is not None
    monkeypatch.undo()
    assert blas_threads() == {2}
