"""bench/rerankers.py: its fusion, its recall counting, and its numpy SPLADE encoder on a tiny
model written here (the benchmark's real model comes from an optional package)."""

from __future__ import annotations

import json
import struct

import numpy as np
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

from bench.rerankers import SpladeReranker, read_safetensors, recall, rrf

WORDS = ["[PAD]", "[UNK]", "paris", "capital", "france", "berlin", "germany", "is", "the", "of"]


def _write_safetensors(path, tensors: dict[str, np.ndarray]) -> None:
    header, offset, blobs = {}, 0, []
    for name, array in tensors.items():
        blob = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        offset += len(blob)
        blobs.append(blob)
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))


def _tiny_model(tmp_path) -> SpladeReranker:
    """One layer, two heads, hidden 8, over a 10-word vocabulary; random weights."""
    rng = np.random.default_rng(7)
    hidden, inner, vocab = 8, 16, len(WORDS)

    def r(*shape: int) -> np.ndarray:
        return rng.normal(0, 0.5, shape).astype(np.float32)

    w = {
        "bert.embeddings.word_embeddings.weight": r(vocab, hidden),
        "bert.embeddings.position_embeddings.weight": r(32, hidden),
        "bert.embeddings.token_type_embeddings.weight": r(2, hidden),
        "cls.predictions.bias": r(vocab),
        "cls.predictions.transform.dense.weight": r(hidden, hidden),
        "cls.predictions.transform.dense.bias": r(hidden),
    }
    for norm in (
        "bert.embeddings.LayerNorm",
        "bert.encoder.layer.0.attention.output.LayerNorm",
        "bert.encoder.layer.0.output.LayerNorm",
        "cls.predictions.transform.LayerNorm",
    ):
        w[norm + ".gamma"], w[norm + ".beta"] = 1 + r(hidden) / 5, r(hidden) / 5
    p = "bert.encoder.layer.0."
    for name, (out, inp) in {
        "attention.self.query": (hidden, hidden),
        "attention.self.key": (hidden, hidden),
        "attention.self.value": (hidden, hidden),
        "attention.output.dense": (hidden, hidden),
        "intermediate.dense": (inner, hidden),
        "output.dense": (hidden, inner),
    }.items():
        w[p + name + ".weight"], w[p + name + ".bias"] = r(out, inp), r(out)
    _write_safetensors(tmp_path / "model.safetensors", w)
    tokenizer = Tokenizer(WordLevel({t: i for i, t in enumerate(WORDS)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "num_hidden_layers": 1,
                "num_attention_heads": 2,
                "hidden_size": hidden,
                "layer_norm_eps": 1e-12,
            }
        )
    )
    files = ("config.json", "model.safetensors", "tokenizer.json")
    return SpladeReranker({name: tmp_path / name for name in files})


def test_safetensors_are_read_back_as_written(tmp_path):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([1.5, -2.0], dtype=np.float32)
    _write_safetensors(tmp_path / "t.safetensors", {"a": a, "b": b})
    read = read_safetensors(tmp_path / "t.safetensors")
    assert sorted(read) == ["a", "b"]
    assert read["a"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert read["b"].tolist() == [1.5, -2.0]


def test_splade_scores_on_the_query_terms_equal_the_whole_vocabulary_dot_product(tmp_path):
    model = _tiny_model(tmp_path)
    query = "the capital of france"
    docs = ["paris is the capital of france", "berlin", "germany is the", "of of of france"]
    states, mask = model.states([query])
    q = model._activations(states, mask, None)[0]
    states, mask = model.states(docs)
    full = model._activations(states, mask, None) @ q
    assert np.allclose(model.score(query, docs), full, atol=1e-5)
    # batching by length (padding) does not change a score
    assert np.allclose(model.score(query, docs, batch=1), model.score(query, docs, batch=50))
    # SPLADE activations are non-negative, so are the scores
    assert (model.score(query, docs) >= 0).all()


def test_rrf_ranks_by_summed_reciprocal_ranks_and_keeps_the_first_order_on_ties():
    # 0 and 2 tie (1/61 + 1/63) and beat 1 (2/62)
    assert rrf([0, 1, 2], [2, 1, 0]) == [0, 2, 1]
    assert rrf([0, 1, 2], [0, 1, 2]) == [0, 1, 2]


def test_recall_scores_each_question_in_the_order_given():
    """The candidates are scored in each question's order (positions into its list), and an
    evidence turn that was never stored (None) makes "all" unreachable."""
    candidates = [[f"m{i}", f"text {i}"] for i in range(12)]
    questions = [
        {"category": 1, "evidence": ["m3", "m10"], "candidates": candidates},
        {"category": 3, "evidence": ["m11", None], "candidates": candidates},
    ]
    fused = list(range(12))
    reranked = [11, 10, 3, 0, 1, 2, 4, 5, 6, 7, 8, 9]
    assert recall(questions, [fused, fused])["recall_any"] == {"5": 0.5, "10": 0.5}
    assert recall(questions, [fused, fused])["recall_all"] == {"5": 0.0, "10": 0.0}
    result = recall(questions, [reranked, reranked])
    assert result["recall_any"] == {"5": 1.0, "10": 1.0}
    assert result["recall_all"] == {"5": 0.5, "10": 0.5}
    assert result["by_category"] == {
        "1": {"count": 1, "recall_any@10": 1.0, "recall_all@10": 1.0},
        "3": {"count": 1, "recall_any@10": 1.0, "recall_all@10": 0.0},
    }
