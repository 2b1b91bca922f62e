"""Namespace templates (seed 004 D6): validation and rendering, hand-checked."""

import pytest

from synthorg.company_config import CompanyConfigError, parse_company_config
from synthorg.company_config.namespaces import (
    DEFAULT_TEMPLATES,
    NamespaceError,
    NamespaceTemplate,
    render_namespace,
)

BOUND = {"company": "acme", "agent": "alpha"}


def render(value, templates=DEFAULT_TEMPLATES, bound=BOUND):
    return render_namespace(value, templates=templates, bound=bound)


def test_defaults_render_the_seeds_examples():
    assert render(("org", "acme", "alpha")) == "org/acme/alpha"
    assert render(["user", "u-123"]) == "user/u-123"
    assert render("default") == "default"  # flat strings as they are
    assert render("org/any/thing") == "org/any/thing"


@pytest.mark.parametrize(
    ("value", "code", "message"),
    [
        ((), "namespace_empty", "a namespace tuple needs at least its scope type"),
        (
            ("team", "x"),
            "namespace_scope_unknown",
            "no namespace template has the scope type 'team' (known: 'org', 'user')",
        ),
        (
            ("org", "acme"),
            "namespace_arity",
            "a 'org' namespace has 3 parts ((org, {company}, {agent})); got 2",
        ),
        (
            ("org", "globex", "alpha"),
            "namespace_bound_mismatch",
            "part 1 ({company}) must be your company 'acme'; got 'globex'",
        ),
        (
            ("org", "acme", "beta"),
            "namespace_bound_mismatch",
            "part 2 ({agent}) must be your agent 'alpha'; got 'beta'",
        ),
        (
            ("user", "u/1"),
            "namespace_part_invalid",
            "part 1 'u/1' is not a valid namespace value (1–64 letters, digits, '_', '.', ':', "
            "'@' or '-', starting with a letter or digit)",
        ),
        (("user", 7), "namespace_part_invalid", "every part of a namespace tuple must be a string"),
    ],
)
def test_bad_tuples_are_refused_with_a_code(value, code, message):
    with pytest.raises(NamespaceError) as refused:
        render(value)
    assert (refused.value.code, refused.value.message) == (code, message)


def test_literals_and_length():
    templates = (NamespaceTemplate(parts=("proj", "shared", "{name}")),)
    assert render(("proj", "shared", "x"), templates) == "proj/shared/x"
    with pytest.raises(NamespaceError) as literal:
        render(("proj", "private", "x"), templates)
    assert literal.value.code == "namespace_literal_mismatch"
    long = (NamespaceTemplate(parts=("p", "{a}", "{b}")),)
    with pytest.raises(NamespaceError) as too_long:
        render(("p", "a" * 60, "b" * 60), long)
    assert too_long.value.code == "namespace_too_long"


def test_config_accepts_lists_and_refuses_bad_templates():
    config = parse_company_config({"memory": {"namespace_templates": [["team", "{team}"]]}})
    assert config.memory.namespace_templates == (NamespaceTemplate(parts=("team", "{team}")),)
    assert parse_company_config(config.model_dump(mode="json")) == config  # stored dumps reload
    assert parse_company_config({}).memory.namespace_templates == DEFAULT_TEMPLATES
    for bad, message in (
        ([["{team}"]], "the first part must be a literal scope type; got '{team}'"),
        ([["t", "a b"]], "'a b' is neither a literal nor a {placeholder}"),
        ([["t", "{x}", "{x}"]], "names a placeholder twice"),
        ([["t", "{x}"], ["t"]], "two templates have the scope type 't'"),
    ):
        with pytest.raises(CompanyConfigError) as refused:
            parse_company_config({"memory": {"namespace_templates": bad}})
        assert refused.value.errors[0]["message"] == message
