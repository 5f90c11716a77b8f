"""The `contexts` setting: sources, order, limits, and named errors."""
from __future__ import annotations

import pytest

from spacy_bertram.pipeline.context_sources import Source, canonical, chain_contexts, check_settings, parse_contexts


def test_none_means_the_form_alone():
    assert parse_contexts("none") == () and canonical(()) == "none"


def test_sources_keep_the_order_written_with_their_limits():
    assert parse_contexts("dictionary:2+doc") == (Source("dictionary", 2), Source("doc"))
    assert canonical(parse_contexts(" store:4 + dictionary ")) == "store:4+dictionary"
    assert canonical(parse_contexts("both")) == "doc+store"


@pytest.mark.parametrize("spec,message", [
    ("web", "unknown source 'web'"), ("", "must name sources"), ("doc+doc", "names 'doc' twice"),
    ("dictionary:0", "at least 1, got '0'"), ("store:x", "got 'x'"),
])
def test_bad_settings_are_named(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_contexts(spec)


def test_each_source_needs_its_path():
    check_settings(parse_contexts("doc"), {})
    with pytest.raises(ValueError, match=r"\[E109\].*'store', which needs a context_store path"):
        check_settings(parse_contexts("store+dictionary"), {"dictionary_store": "d.sqlite"})
    with pytest.raises(ValueError, match=r"\[E108\].*frequencies='store' needs a context_store path"):
        check_settings(parse_contexts("doc"), {}, store_frequencies=True)


def test_chained_contexts_take_each_group_up_to_its_limit_distinct_and_up_to_the_total():
    groups = [(["a", "b", "c"], 2), (["b", "d", "e", "f"], None), (["g"], 1)]
    assert chain_contexts(groups) == ["a", "b", "d", "e", "f", "g"]
    assert chain_contexts(groups, total=4) == ["a", "b", "d", "e"]
    assert chain_contexts([(["a", "a", "b"], 2)]) == ["a", "b"]  # a repeat takes no place of the limit

    def never():
        raise AssertionError("a source after the cap was asked")
        yield

    assert chain_contexts(iter([(["a", "b"], None), (never(), None)]), total=2) == ["a", "b"]
