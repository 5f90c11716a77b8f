"""training/text_cleaning.py: wikitext stripping and the articles of a dump."""

from __future__ import annotations

from spacy_bertram.training.text_cleaning import strip_wikitext, wikipedia_articles

from tests.util import WIKI_ARTICLE, wiki_dump


def test_strip_wikitext():
    paragraphs = strip_wikitext(WIKI_ARTICLE)
    assert paragraphs == [
        "Kumquats are small citrus fruits grown in China. They taste sweet & sour.",
        "The fruit was described by Robert Fortune in the 1840s in detail.",
    ]


def test_wikipedia_articles_skip_redirects_and_other_namespaces():
    assert [title for title, _ in wikipedia_articles(wiki_dump())] == ["Kumquat"]
