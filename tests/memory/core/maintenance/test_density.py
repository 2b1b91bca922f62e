"""Density classification: prose is sparse; code, JSON, YAML and identifier lists are dense."""

import pytest

from memory.core.consolidation.density import WEIGHTS, DensityClassifier
from memory.core.consolidation.models import ContentDensity

SPARSE = {
    "narrative": (
        "We met with the design team this morning and talked about the onboarding flow. "
        "Everyone agreed the current version feels too long, and Maria suggested we cut the "
        "survey step entirely. I think that is a reasonable compromise for now."
    ),
    "long words are not identifiers": (
        "The implementation considerations surrounding internationalization and accessibility "
        "were extraordinarily comprehensive, encompassing documentation, organizational "
        "responsibilities and infrastructure modernization."
    ),
    "chat lines": (
        "User asked about refund policy.\nI explained they have 30 days.\n"
        "They seemed happy with that.\nWill follow up next week."
    ),
    "numbers in prose": (
        "Revenue in 2023 was about 4 million, up from 3 million in 2022, and we hired 12 people."
    ),
    "prose mentioning a file": (
        "The deploy failed because config.yaml had replicas: 0. Fixed it in commit 3f9a2c1 "
        "and redeployed v2.4.1."
    ),
    "short note": "Remember to buy milk.",
}
DENSE = {
    "python": (
        "def load(path):\n    with open(path) as fh:\n        data = json.load(fh)\n"
        "    return data['items']\n\nclass Foo:\n    x = 1\n"
    ),
    "json": '{\n  "name": "svc",\n  "version": "1.2.3",\n  "replicas": 3,\n  "ports": [80, 443]\n}',
    "json one line": '{"name": "svc", "version": "1.2.3", "replicas": 3, "owner_id": "a3f9c2e1"}',
    "yaml": (
        "service:\n  name: api\n  image: registry/api:2.4.1\n  replicas: 3\n  env:\n"
        "    - LOG_LEVEL: debug\n"
    ),
    "identifier list": (
        "user_id_7781 order_id_2231 sku_ABX_99 acct_44810 session_9f2c1e7a inv_2024_117"
    ),
    "identifier list without digits": (
        "getUser fetchOrder user_service.api OrderRepository billing.invoices.create auth_token"
    ),
}


@pytest.mark.parametrize("text", SPARSE.values(), ids=SPARSE.keys())
def test_prose_is_sparse(text):
    assert DensityClassifier().classify(text) is ContentDensity.SPARSE


@pytest.mark.parametrize("text", DENSE.values(), ids=DENSE.keys())
def test_code_and_structured_data_are_dense(text):
    assert DensityClassifier().classify(text) is ContentDensity.DENSE


def test_five_weighted_signals_sum_to_one():
    assert set(WEIGHTS) == {"code", "structured", "identifiers", "numeric", "lines"}
    assert sum(WEIGHTS.values()) == pytest.approx(1.0)
    signals = DensityClassifier().signals(DENSE["json one line"])
    assert set(signals) == set(WEIGHTS)
    assert all(0.0 <= value <= 1.0 for value in signals.values())


def test_threshold_moves_the_boundary():
    text = DENSE["yaml"]
    score = DensityClassifier().score(text)
    assert 0 < score < 1
    assert DensityClassifier(dense_threshold=score).classify(text) is ContentDensity.DENSE
    assert DensityClassifier(dense_threshold=score + 0.01).classify(text) is ContentDensity.SPARSE
    assert DensityClassifier(dense_threshold=0.0).classify("hello") is ContentDensity.DENSE
    assert DensityClassifier().score("") == 0.0


@pytest.mark.parametrize("bad", [-0.1, 1.5])
def test_threshold_is_validated(bad):
    with pytest.raises(ValueError, match="dense_threshold"):
        DensityClassifier(dense_threshold=bad)


def test_majority_vote_and_tie_is_sparse():
    classifier = DensityClassifier()
    dense, sparse = DENSE["json"], SPARSE["narrative"]
    assert classifier.majority([dense, dense, sparse]) is ContentDensity.DENSE
    assert classifier.majority([dense, sparse, sparse]) is ContentDensity.SPARSE
    assert classifier.majority([dense, sparse]) is ContentDensity.SPARSE
    assert classifier.classify_batch([dense, sparse]) == (
        ContentDensity.DENSE,
        ContentDensity.SPARSE,
    )
