from memory.core.retrieval.filtering import (
    NON_INFERABLE_TAG,
    TagBasedMemoryFilter,
    apply_filter,
)

ITEMS = [("a", ("non-inferable", "x")), ("b", ("x",)), ("c", ("Non-Inferable",))]


def tags(item):
    return item[1]


def test_tag_filter_keeps_only_non_inferable_in_order():
    kept, failed = apply_filter(TagBasedMemoryFilter(), ITEMS, tags)
    assert [k for k, _ in kept] == ["a", "c"] and failed is False
    assert NON_INFERABLE_TAG == "non-inferable"


class Broken:
    strategy_name = "broken"

    def filter_for_injection(self, items, tags):
        raise RuntimeError("classifier down")


def test_a_failing_filter_fails_closed():
    assert apply_filter(Broken(), ITEMS, tags) == ([], True)
