"""Each ``memory.consolidation`` knob without a test of its own: set for the company, the
maintenance run does something different (against the local OpenAI-wire server)."""

import pytest

from memory.core.models.maintenance import ArchivedMemory
from memory.core.models.memory import Memory
from memory.core.services.maintenance import run_maintenance
from persistence.selectors.config import company_config
from persistence.services.companies import company_config_set
from synthorg.company_config.memory import DUAL_MODE_ENABLED_CONFLICT, DUAL_MODE_ONLY, LLM_ONLY
from synthorg.errors import InvalidInputError
from tests.memory.core.maintenance.conftest import configure, seed
from tests.support.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.django_db

OLD = {"enabled": True, "age_threshold_days": 30}
DENSE = '{"service": "billing", "version": "2.4.%(i)d", "sha": "9f2c1e7a%(i)db"}'
SPARSE = "Talked with Maria about the onboarding survey; we agreed to shorten it (%(i)d)."
SUMMARY = "Maria and the team agreed to shorten onboarding."


@pytest.fixture
def llm(settings):
    with FakeOpenAIServer(chat_reply=SUMMARY) as server:
        settings.SYNTHORG_LLM = {
            "BASE_URL": server.base_url,
            "API_KEY": "sk-test",
            "MODEL": "default-model",
            "TIMEOUT": 5,
            "MAX_RETRIES": 0,
        }
        yield server


@pytest.mark.parametrize(("threshold", "consolidated"), [(4, 3), (5, 0)])
def test_group_threshold_is_the_companys(threshold, consolidated, caller, now):
    configure(caller.company, strategy="simple", group_threshold=threshold, archival=OLD)
    seed(caller.agent, 4, now=now, age_days=40)
    report = run_maintenance(agent=caller.agent, now=now)
    assert report.status == "succeeded", report.errors
    assert report.counts["consolidated"] == consolidated
    assert ArchivedMemory.objects.filter(agent=caller.agent).count() == consolidated


@pytest.mark.parametrize(("days", "consolidated"), [(30, 3), (50, 0)])
def test_age_threshold_days_is_the_companys(days, consolidated, caller, now):
    configure(caller.company, archival={"enabled": True, "age_threshold_days": days})
    seed(caller.agent, 4, now=now, age_days=40)
    report = run_maintenance(agent=caller.agent, now=now)
    assert report.counts["consolidated"] == consolidated


@pytest.mark.parametrize("length", [40, 300])
def test_fallback_truncate_length_is_the_companys(length, caller, now):
    content = "retro notes " * 20  # 240 characters
    configure(caller.company, archival=OLD, llm={"fallback_truncate_length": length})
    seed(caller.agent, 4, now=now, age_days=40, content=content)
    run_maintenance(agent=caller.agent, now=now)
    summary = Memory.objects.get(agent=caller.agent, source="consolidation").content
    bullets = [line.split("] ", 1)[1] for line in summary.splitlines()[1:]]
    assert len(bullets) == 3
    if length < len(content.strip()):
        assert all(len(b) <= length and b.endswith("…") for b in bullets)
    else:
        assert bullets == [content.strip()] * 3


def test_llm_request_limits_are_the_companys(caller, now, llm):
    configure(
        caller.company,
        strategy="llm",
        archival=OLD,
        llm={
            "temperature": 0.9,
            "max_summary_tokens": 321,
            "max_entry_input_chars": 100,
            "max_total_user_content_chars": 1000,
        },
    )
    seed(caller.agent, 12, now=now, age_days=40, template="alpha%(i)02d " + "x" * 200)
    report = run_maintenance(agent=caller.agent, now=now)
    assert report.status == "succeeded", report.errors
    (request,) = llm.requests_to(llm.CHAT_COMPLETIONS)
    body = request.json()
    assert (body["temperature"], body["max_tokens"]) == (0.9, 321)
    prompt = body["messages"][-1]["content"]
    # 11 removed entries, each cut to 100 characters ("[date] " + 100 = 113, + 2 between):
    # 8 fit in 1000 characters
    assert prompt.count("alpha") == 8
    assert "alpha04 " + "x" * 90 + " …" in prompt and "x" * 91 not in prompt


def test_llm_group_threshold_above_the_consolidation_one_applies(caller, now, llm):
    configure(caller.company, strategy="llm", archival=OLD, llm={"group_threshold": 5})
    seed(caller.agent, 4, now=now, age_days=40)
    report = run_maintenance(agent=caller.agent, now=now)
    assert report.counts["consolidated"] == 0
    assert llm.requests_to(llm.CHAT_COMPLETIONS) == []


def test_llm_group_threshold_that_would_change_nothing_is_refused(company):
    with pytest.raises(InvalidInputError) as caught:
        company_config_set(
            company=company,
            data={
                "memory": {
                    "consolidation": {
                        "strategy": "llm",
                        "group_threshold": 4,
                        "llm": {"group_threshold": 2},
                    }
                }
            },
        )
    assert caught.value.errors == [
        {
            "field": "memory.consolidation.llm.group_threshold",
            "message": "is below group_threshold (4), which the llm strategy applies too, so it "
            "would change nothing; set it to at least 4 or remove it",
            "code": "config_value_not_offered",
        }
    ]
    company.refresh_from_db()
    assert (company.config, company.config_revision) == ({}, 1)


def _dual(**dual_mode):
    return {
        "strategy": "dual_mode",
        "archival": {
            **OLD,
            "dual_mode": {"enabled": True, "summarization_model": "tiny", **dual_mode},
        },
    }


def test_dual_mode_limits_are_the_companys(caller, now, llm):
    configure(caller.company, **_dual(max_summary_tokens=77, max_facts=1, anchor_length=50))
    seed(caller.agent, 4, now=now, age_days=40, category="semantic", template=DENSE)
    seed(caller.agent, 4, now=now, age_days=40, category="episodic", template=SPARSE)
    report = run_maintenance(agent=caller.agent, now=now)
    assert report.status == "succeeded", report.errors
    (request,) = llm.requests_to(llm.CHAT_COMPLETIONS)
    assert request.json()["max_tokens"] == 77
    lines = Memory.objects.get(category="semantic", source="consolidation").content.splitlines()
    assert lines[0].startswith("[extractive] 1 key facts, 3 anchors of ")
    assert (lines[1], lines[3]) == ("Key facts:", "Anchors:")  # exactly one fact
    anchors = [line.split("] ", 1)[1] for line in lines[4:]]
    assert [line.split("] ", 1)[0] for line in lines[4:]] == ["[start", "[mid", "[end"]
    assert max(len(a) for a in anchors) == 50


@pytest.mark.parametrize(("threshold", "modes"), [(0.5, {"extractive"}), (1.0, {"abstractive"})])
def test_dual_mode_dense_threshold_routes_the_group(threshold, modes, caller, now, llm):
    configure(caller.company, **_dual(dense_threshold=threshold))
    seed(caller.agent, 4, now=now, age_days=40, category="semantic", template=DENSE)
    run_maintenance(agent=caller.agent, now=now)
    assert set(ArchivedMemory.objects.values_list("mode", flat=True)) == modes
    assert len(llm.requests_to(llm.CHAT_COMPLETIONS)) == (1 if "abstractive" in modes else 0)


@pytest.mark.parametrize(
    ("consolidation", "field", "message"),
    [
        (
            {"llm": {"temperature": 0.9}},
            "memory.consolidation.llm.temperature",
            LLM_ONLY,
        ),
        (
            {"strategy": "dual_mode", "llm": {"max_summary_tokens": 900}, **_dual()},
            "memory.consolidation.llm.max_summary_tokens",
            LLM_ONLY,
        ),
        (
            {"archival": {"dual_mode": {"max_facts": 5}}},
            "memory.consolidation.archival.dual_mode.max_facts",
            DUAL_MODE_ONLY,
        ),
        (
            {
                "strategy": "simple",
                "archival": {"dual_mode": {"enabled": True, "summarization_model": "m"}},
            },
            "memory.consolidation.archival.dual_mode.enabled",
            DUAL_MODE_ENABLED_CONFLICT.format(strategy="simple"),
        ),
    ],
)
def test_a_strategys_knob_under_another_strategy_is_refused(company, consolidation, field, message):
    """Under the default ``simple`` strategy the llm and dual-mode knobs would change
    nothing: refused at load, naming the setting they need (issue 33)."""
    with pytest.raises(InvalidInputError) as caught:
        company_config_set(company=company, data={"memory": {"consolidation": consolidation}})
    assert caught.value.errors == [
        {"field": field, "message": message, "code": "config_value_not_offered"}
    ]
    company.refresh_from_db()
    assert (company.config, company.config_revision) == ({}, 1)


def test_dual_mode_enabled_alone_selects_the_dual_mode_strategy(caller, now, llm):
    """The seeds' own example sets only ``archival.dual_mode.enabled: true``: that is the
    dual-mode strategy, which asks the summarisation model (before: plain concatenation,
    no LLM call)."""
    dual = _dual()
    dual.pop("strategy")
    company_config_set(company=caller.company, data={"memory": {"consolidation": dual}})
    assert company_config(caller.company).memory.consolidation.strategy == "dual_mode"
    seed(caller.agent, 4, now=now, age_days=40, category="episodic", template=SPARSE)
    report = run_maintenance(agent=caller.agent, now=now)
    assert report.status == "succeeded", report.errors
    assert len(llm.requests_to(llm.CHAT_COMPLETIONS)) == 1
    assert set(ArchivedMemory.objects.values_list("mode", flat=True)) == {"abstractive"}
    summary = Memory.objects.get(agent=caller.agent, source="consolidation").content
    assert SUMMARY in summary
