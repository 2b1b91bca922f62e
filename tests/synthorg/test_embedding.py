"""The kernel's embedders: the local MiniLM model and the OpenAI-compatible HTTP client."""

import hashlib

import numpy as np
import pytest

from synthorg.embedding import (
    MINILM_DIMS,
    EmbeddingError,
    MiniLMOnnxEmbedder,
    OpenAICompatibleEmbedder,
    default_embedder,
)
from synthorg.embedding.base import l2_normalize_rows, validate_texts
from synthorg.embedding.minilm_onnx import (
    MINILM_EMBEDDER_ID,
    MODEL_PATH,
    MODEL_SHA256,
    PREVIOUS_EMBEDDER_IDS,
)
from tests.support.openai_server import (
    FakeOpenAIServer,
    ScriptedResponse,
    embeddings_payload,
    fake_embedding,
)

# --- pure helpers ---------------------------------------------------------------------------


def test_validate_texts_refuses_a_bare_string_and_non_strings():
    assert validate_texts(("a", "b")) == ["a", "b"]
    with pytest.raises(TypeError, match="not a single string"):
        validate_texts("hello")
    with pytest.raises(TypeError, match="position 1 is int"):
        validate_texts(["a", 3])


def test_l2_normalize_rows_keeps_zero_rows_zero():
    out = l2_normalize_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert out.dtype == np.float32
    assert np.allclose(out, [[0.6, 0.8], [0.0, 0.0]])


# --- the local model ------------------------------------------------------------------------


def test_minilm_embeds_unit_vectors_in_input_order():
    embedder = default_embedder()
    texts = ["The cat sat on the mat.", "A kitten rested on the rug.", "Quarterly tax filing"]
    vectors = embedder.embed(texts)
    assert vectors.shape == (3, MINILM_DIMS) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similar, unrelated = vectors[0] @ vectors[1], vectors[0] @ vectors[2]
    assert similar > unrelated + 0.2
    # Batching and sorting by length must not change a text's vector.
    assert np.allclose(embedder.embed([texts[2]])[0], vectors[2], atol=1e-5)
    assert np.allclose(embedder.embed_one(texts[1]), vectors[1], atol=1e-5)
    assert embedder.embed([]).shape == (0, MINILM_DIMS)


def test_minilm_truncates_long_texts():
    embedder = default_embedder()
    base = "deploy the billing service " * 100  # 400 tokens: far past 256
    assert np.allclose(
        embedder.embed_one(base), embedder.embed_one(base + " tail words"), atol=1e-6
    )


def test_minilm_refuses_a_model_with_the_wrong_sha256(tmp_path):
    embedder = MiniLMOnnxEmbedder(model_path=MODEL_PATH, expected_sha256="0" * 64)
    with pytest.raises(EmbeddingError, match="refusing to load a modified or corrupt model"):
        embedder.embed(["x"])
    assert embedder.is_ready() is False
    assert "sha256" in embedder.load_error


def test_minilm_refuses_a_tampered_copy_of_the_shipped_model(tmp_path):
    tampered = tmp_path / "model.onnx"
    data = bytearray(MODEL_PATH.read_bytes())
    data[len(data) // 2] ^= 0x01  # one flipped bit in the weights
    tampered.write_bytes(bytes(data))
    embedder = MiniLMOnnxEmbedder(model_path=tampered)  # checked against MODEL_SHA256
    with pytest.raises(EmbeddingError) as raised:
        embedder.embed(["x"])
    assert str(raised.value) == (
        f"{MINILM_EMBEDDER_ID}: model {tampered} has sha256 "
        f"{hashlib.sha256(bytes(data)).hexdigest()}, expected {MODEL_SHA256}; "
        "refusing to load a modified or corrupt model"
    )
    assert embedder.is_ready() is False


def test_the_shipped_model_is_the_pinned_file_and_stamps_its_own_id():
    assert hashlib.sha256(MODEL_PATH.read_bytes()).hexdigest() == MODEL_SHA256
    assert MINILM_EMBEDDER_ID not in PREVIOUS_EMBEDDER_IDS
    with pytest.raises(EmbeddingError, match="would stamp them 'other-id'"):
        MiniLMOnnxEmbedder(embedder_id="other-id").embed(["x"])


def test_minilm_rejects_bad_arguments():
    with pytest.raises(ValueError, match="batch_size"):
        MiniLMOnnxEmbedder(batch_size=0)
    with pytest.raises(ValueError, match="max_tokens"):
        MiniLMOnnxEmbedder(max_tokens=1000)


# --- the HTTP embedder ----------------------------------------------------------------------


@pytest.fixture
def server():
    with FakeOpenAIServer(embedding_dims=8) as fake:
        yield fake


def http_embedder(server, **kwargs) -> OpenAICompatibleEmbedder:
    kwargs.setdefault("sleep", lambda seconds: None)
    return OpenAICompatibleEmbedder(
        server.base_url, "fake-embedding", 8, api_key="secret-key", **kwargs
    )


def test_http_embedder_sends_batches_and_places_vectors_by_index(server):
    texts = ["alpha", "beta", "gamma"]
    server.enqueue(
        server.EMBEDDINGS,
        ScriptedResponse(
            json=embeddings_payload([fake_embedding(t, 8) for t in texts[:2]], order=[1, 0])
        ),
    )
    embedder = http_embedder(server, batch_size=2)
    vectors = embedder.embed(texts)
    expected = l2_normalize_rows(np.array([fake_embedding(t, 8) for t in texts]))
    assert np.allclose(vectors, expected, atol=1e-6)
    sent = server.requests_to(server.EMBEDDINGS)
    assert [r.json()["input"] for r in sent] == [["alpha", "beta"], ["gamma"]]
    assert sent[0].headers["authorization"] == "Bearer secret-key"
    assert embedder.embedder_id.endswith("fake-embedding")
    assert "secret-key" not in repr(embedder)


def test_http_embedder_retries_429_and_5xx_honouring_retry_after(server):
    waits = []
    server.enqueue(
        server.EMBEDDINGS,
        ScriptedResponse(status=429, headers={"Retry-After": "3"}),
        ScriptedResponse(status=503),
    )
    vectors = http_embedder(server, max_retries=2, sleep=waits.append).embed(["x"])
    assert vectors.shape == (1, 8)
    assert waits == [3.0, 1.0]  # max(backoff 0.5, Retry-After 3), then 0.5 * 2
    assert len(server.requests_to(server.EMBEDDINGS)) == 3


def test_http_embedder_gives_up_after_the_last_retry(server):
    server.enqueue(server.EMBEDDINGS, *[ScriptedResponse(status=500)] * 3)
    with pytest.raises(EmbeddingError, match=r"failed after 3 attempt\(s\): HTTP 500"):
        http_embedder(server, max_retries=2).embed(["x"])


def test_http_embedder_does_not_retry_a_401(server):
    server.enqueue(server.EMBEDDINGS, ScriptedResponse(status=401, json={"error": "bad key"}))
    with pytest.raises(EmbeddingError, match="failed: HTTP 401"):
        http_embedder(server).embed(["x"])
    assert len(server.requests_to(server.EMBEDDINGS)) == 1


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (ScriptedResponse(body=b"not json"), "not valid JSON"),
        (ScriptedResponse(json={"nope": 1}), "no 'data' list"),
        (ScriptedResponse(json=embeddings_payload([[1.0] * 8, [1.0] * 8])), "got 2 embedding"),
        (ScriptedResponse(json=embeddings_payload([[1.0] * 5])), "has 5 dims, expected 8"),
    ],
)
def test_http_embedder_rejects_malformed_responses(server, response, message):
    server.enqueue(server.EMBEDDINGS, response)
    with pytest.raises(EmbeddingError, match=message):
        http_embedder(server).embed(["x"])


def test_http_embedder_reports_an_unreachable_server():
    embedder = OpenAICompatibleEmbedder(
        "http://127.0.0.1:9/v1", "m", 8, max_retries=0, timeout=2, sleep=lambda s: None
    )
    with pytest.raises(EmbeddingError, match="failed after 1 attempt"):
        embedder.embed(["x"])


def test_http_embedder_stops_a_hanging_server_at_its_total_budget():
    """Accepts, never answers: the budget ends the call however many retries remain."""
    from tests.support.hanging_server import HangingServer

    waits = []
    with HangingServer() as server:
        embedder = OpenAICompatibleEmbedder(
            server.base_url,
            "m",
            8,
            timeout=30,
            max_retries=5,
            total_timeout=0.5,
            sleep=waits.append,
        )
        with pytest.raises(EmbeddingError, match="time budget exhausted"):
            embedder.embed(["x"])
        assert server.connections == 1  # no retry fits in what is left of the budget
    assert waits == []


def test_http_embedder_skips_the_endpoint_during_the_cooldown(server):
    server.enqueue(server.EMBEDDINGS, ScriptedResponse(status=503))
    embedder = http_embedder(server, max_retries=0, cooldown=600)
    with pytest.raises(EmbeddingError, match="failed after 1 attempt"):
        embedder.embed(["x"])
    with pytest.raises(EmbeddingError, match="skipped for another"):
        embedder.embed(["x"])
    assert len(server.requests_to(server.EMBEDDINGS)) == 1
    # A non-transient failure (bad request) does not open the circuit.
    other = http_embedder(server, max_retries=0, cooldown=600)
    server.enqueue(server.EMBEDDINGS, ScriptedResponse(status=400))
    with pytest.raises(EmbeddingError, match="HTTP 400"):
        other.embed(["x"])
    assert other.embed(["y"]).shape == (1, 8)
