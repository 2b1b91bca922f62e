"""An embedder that calls an OpenAI-compatible ``POST /embeddings`` endpoint.

Works with OpenAI itself and with servers that copy its wire format (vLLM, llama.cpp server,
Ollama, LiteLLM, text-embeddings-inference). Pure module: no Django imports.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx
import numpy as np

from synthorg.embedding.base import EmbeddingError, l2_normalize_rows, validate_texts
from synthorg.http_json import HttpJsonError, RetryingJsonPoster, TransientHttpError, excerpt
from synthorg.outbound import OutboundPolicy

DEFAULT_BATCH_SIZE = 64
_RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})


class OpenAICompatibleEmbedder:
    """Remote embedder speaking the OpenAI embeddings wire format.

    See :class:`synthorg.embedding.base.Embedder` for the contract. Texts are sent in batches
    of ``batch_size``; each request is retried up to ``max_retries`` times, with exponential
    backoff, on 408/429/5xx, timeouts and connection errors (a ``Retry-After`` header in
    seconds is honoured up to ``backoff_max``). Other 4xx responses fail at once. Vectors are
    placed by each item's ``index``, must have ``dims`` values, and are L2-normalised here
    because not every compatible server normalises.

    Args:
        base_url: API root including any version prefix, e.g. ``https://api.openai.com/v1``.
        model: model name sent in each request and used in ``embedder_id``.
        dims: expected vector length; any other length is an :class:`EmbeddingError`.
        api_key: sent as ``Authorization: Bearer``; omitted when ``None``.
        timeout: seconds for connecting, and for each read/write, per attempt.
        max_retries: retries after the first attempt (``0`` means a single try).
        total_timeout: seconds one :meth:`embed` call may take in all (attempts, reads,
            back-off, every batch); ``None`` for no overall bound. Callers serving a request
            set it well under the request timeout: a failed embedding degrades (the memory is
            stored ``pending``), a killed worker loses the write.
        cooldown: after a call fails for a transient reason (timeout, connection error,
            retryable status), further calls fail at once for this many seconds instead of
            each waiting out the budget again (``0`` disables this circuit breaker).
        batch_size: inputs per request.
        backoff_base: delay before the first retry, doubled for each further retry.
        backoff_max: cap on any single delay.
        transport: httpx transport override (e.g. for proxies or mounts); normally ``None``.
        sleep: how to wait between attempts; tests pass a recorder instead of sleeping.
        policy: outbound allow-list (:mod:`synthorg.outbound`); ``None`` reads the
            operator's ``SYNTHORG_OUTBOUND_ALLOW`` at each connection.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        dims: int,
        *,
        api_key: str | None = None,
        timeout: float = 10.0,
        max_retries: int = 2,
        total_timeout: float | None = None,
        cooldown: float = 0.0,
        batch_size: int = DEFAULT_BATCH_SIZE,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        policy: OutboundPolicy | None = None,
    ) -> None:
        if not base_url:
            raise ValueError("base_url is required")
        if not model:
            raise ValueError("model is required")
        if dims < 1:
            raise ValueError(f"dims must be at least 1, got {dims}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if total_timeout is not None and total_timeout <= 0:
            raise ValueError(f"total_timeout must be positive, got {total_timeout}")
        if cooldown < 0:
            raise ValueError(f"cooldown cannot be negative, got {cooldown}")
        self._total_timeout = total_timeout
        self._cooldown = cooldown
        self._open_until = 0.0
        self._breaker_lock = threading.Lock()
        self._url = base_url.rstrip("/") + "/embeddings"
        self._model = model
        self._dims = dims
        self._batch_size = batch_size
        self._http = RetryingJsonPoster(
            self._url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            retryable_status=_RETRYABLE_STATUS,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
            transport=transport,
            sleep=sleep,
            policy=policy,
        )

    def __repr__(self) -> str:
        # Never show the API key.
        return f"{type(self).__name__}(url={self._url!r}, model={self._model!r}, dims={self._dims})"

    def __enter__(self) -> OpenAICompatibleEmbedder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def embedder_id(self) -> str:
        return f"openai:{self._model}"

    @property
    def dims(self) -> int:
        return self._dims

    def close(self) -> None:
        """Close pooled connections; a later call opens new ones."""
        self._http.close()

    def embed_one(self, text: str) -> np.ndarray:
        """Embed one text; returns a float32 vector of shape ``(dims,)``."""
        if not isinstance(text, str):
            raise TypeError(f"text is {type(text).__name__}, not str")
        return self.embed([text])[0]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``; float32 ``(len(texts), dims)``, unit rows, in input order."""
        items = validate_texts(texts)
        self._check_breaker()
        deadline = None if self._total_timeout is None else time.monotonic() + self._total_timeout
        vectors = np.empty((len(items), self._dims), dtype=np.float32)
        for start in range(0, len(items), self._batch_size):
            batch = items[start : start + self._batch_size]
            vectors[start : start + len(batch)] = self._embed_batch(batch, deadline)
        return vectors

    def _embed_batch(self, batch: list[str], deadline: float | None) -> np.ndarray:
        payload = self._post_with_retries({"model": self._model, "input": batch}, deadline)
        return l2_normalize_rows(self._parse(payload, expected=len(batch)))

    def _post_with_retries(self, body: dict[str, Any], deadline: float | None) -> Any:
        try:
            payload = self._http.post(body, describe=self._describe(), deadline=deadline)
        except TransientHttpError as exc:
            self._trip_breaker()
            raise EmbeddingError(str(exc)) from exc
        except HttpJsonError as exc:
            raise EmbeddingError(str(exc)) from exc
        return payload

    def _check_breaker(self) -> None:
        with self._breaker_lock:
            wait = self._open_until - time.monotonic()
        if wait > 0:
            raise EmbeddingError(
                f"{self._describe()}: skipped for another {wait:.0f} s after a transient "
                "failure (the endpoint timed out or was unreachable)"
            )

    def _trip_breaker(self) -> None:
        if self._cooldown > 0:
            with self._breaker_lock:
                self._open_until = time.monotonic() + self._cooldown

    def _parse(self, payload: Any, *, expected: int) -> np.ndarray:
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise EmbeddingError(
                f"{self._describe()}: response has no 'data' list: {excerpt(repr(payload))}"
            )
        if len(data) != expected:
            raise EmbeddingError(
                f"{self._describe()}: sent {expected} input(s), got {len(data)} embedding(s)"
            )
        vectors = np.empty((expected, self._dims), dtype=np.float32)
        seen: set[int] = set()
        for position, item in enumerate(data):
            index = item.get("index") if isinstance(item, dict) else None
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < expected:
                raise EmbeddingError(
                    f"{self._describe()}: data[{position}] has no valid 'index' "
                    f"(0..{expected - 1}): {excerpt(repr(item))}"
                )
            if index in seen:
                raise EmbeddingError(f"{self._describe()}: index {index} appears twice")
            seen.add(index)
            vectors[index] = self._vector(item.get("embedding"), index)
        return vectors

    def _vector(self, embedding: Any, index: int) -> np.ndarray:
        if not isinstance(embedding, list) or not all(
            isinstance(value, (int, float)) and not isinstance(value, bool) for value in embedding
        ):
            raise EmbeddingError(
                f"{self._describe()}: embedding {index} is not a list of numbers "
                "(a base64 encoding_format is not supported)"
            )
        if len(embedding) != self._dims:
            raise EmbeddingError(
                f"{self._describe()}: embedding {index} has {len(embedding)} dims, "
                f"expected {self._dims}"
            )
        vector = np.asarray(embedding, dtype=np.float32)
        if not np.isfinite(vector).all():
            raise EmbeddingError(f"{self._describe()}: embedding {index} has non-finite values")
        return vector

    def _describe(self) -> str:
        return f"embedding request to {self._url} (model {self._model!r})"
