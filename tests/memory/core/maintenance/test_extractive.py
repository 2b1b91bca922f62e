"""Extractive preservation: verbatim facts, deduplicated and capped, plus anchors."""

import pytest

from memory.core.consolidation.extractive import ExtractivePreserver

CONFIG = """\
service: billing-api
image: registry.example.com/billing:2.4.1
endpoint = https://billing.example.com/v2/invoices
owner_id: 0b7e5d3c-8f2a-4c1e-9d6b-2a5f7e8c1d30
commit 9f2c1e7ab4 deployed; see https://billing.example.com/v2/invoices again
requires python 3.11.7 and libpq 16.2.1
"""


def test_output_format_lists_facts_then_anchors():
    out = ExtractivePreserver(max_facts=20, anchor_length=150).extract(CONFIG)
    assert out.splitlines() == [
        f"[extractive] 7 key facts, 1 anchors of {len(CONFIG.strip())} chars",
        "Key facts:",
        "- service=billing-api",
        "- image=registry.example.com/billing:2.4.1",
        "- endpoint=https://billing.example.com/v2/invoices",
        "- owner_id=0b7e5d3c-8f2a-4c1e-9d6b-2a5f7e8c1d30",
        "- 9f2c1e7ab4",
        "- 3.11.7",
        "- 16.2.1",
        "Anchors:",
        "[full] " + " ⏎ ".join(line.strip() for line in CONFIG.strip().splitlines()),
    ]


def test_facts_are_verbatim_deduplicated_and_in_order():
    facts = ExtractivePreserver().facts(CONFIG)
    # The URL appears twice and inside a key=value fact: kept once.
    assert sum("https://billing.example.com/v2/invoices" in f for f in facts) == 1
    assert facts[0] == "service=billing-api"
    assert "9f2c1e7ab4" in facts
    assert "3.11.7" in facts and "16.2.1" in facts
    assert len(facts) == len(set(facts))


def test_facts_are_capped():
    text = "\n".join(f"key_{i} = value_{i}" for i in range(50))
    facts = ExtractivePreserver(max_facts=5).facts(text)
    assert facts == [f"key_{i}=value_{i}" for i in range(5)]


def test_long_content_gets_start_mid_end_anchors():
    text = "".join(f"{i:04d}," for i in range(400))  # 2000 chars
    anchors = ExtractivePreserver(anchor_length=50).anchors(text)
    assert [name for name, _ in anchors] == ["start", "mid", "end"]
    assert anchors[0][1] == text[:50]
    assert anchors[1][1] == text[975:1025]
    assert anchors[2][1] == text[-50:]
    out = ExtractivePreserver(anchor_length=50).extract(text)
    assert out.splitlines()[-3:] == [
        f"[start] {text[:50]}",
        f"[mid] {text[975:1025]}",
        f"[end] {text[-50:]}",
    ]


def test_prose_without_facts_has_only_anchors():
    out = ExtractivePreserver().extract("Nothing structured here at all.")
    assert out.splitlines() == [
        "[extractive] 0 key facts, 1 anchors of 31 chars",
        "Anchors:",
        "[full] Nothing structured here at all.",
    ]


@pytest.mark.parametrize(
    ("kwargs", "match"), [({"max_facts": 0}, "max_facts"), ({"anchor_length": 0}, "anchor_length")]
)
def test_limits_are_validated(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ExtractivePreserver(**kwargs)
