"""GCIDE entries -> definitions: the header, obsolete senses, phrases and markup stay out."""

from __future__ import annotations

from tests.dictd_fixture import TINY_GCIDE

from spacy_bertram.dictionary.gcide import MAX_CHARS, clean, definitions, headword


def test_headword_is_read_as_the_entry_writes_it():
    assert headword(TINY_GCIDE["kumquat"]) == "Kumquat"
    assert headword(TINY_GCIDE["run"]) == "All fours"
    assert headword("no backslash here") is None


def test_senses_without_header_obsolete_senses_phrases_or_citations():
    senses = definitions(TINY_GCIDE["goose"])
    assert [s.text for s in senses] == [
        "(Zool.) Any large web-footed bird of the subfamily Anserinae.",  # the 2-line etymology is header
        "a silly person; a simpleton.",
    ]
    assert [s.wordnet_derived for s in senses] == [False, True]


def test_a_single_sense_entry():
    assert [s.text for s in definitions(TINY_GCIDE["kumquat"])] == [
        "A small oval citrus fruit with thin sweet rind and acid pulp."
    ]


def test_a_header_whose_parenthesis_runs_over_two_lines():
    entry = (
        "A \\A\\ (named [=a] in the English, and\n   other languages).\n"
        "   The first letter of the alphabet.\n   [1913 Webster]\n"
    )
    assert [s.text for s in definitions(entry)] == ["The first letter of the alphabet."]


def test_clean_removes_markup_and_caps_the_length():
    assert clean("   2. Ph[oe]nician {letters}; r[a^]n. --B. Jonson.\n   [1913 Webster]") == "Phoenician letters; ran."
    assert clean('A word. -- Pho`to*syn*thet"ic, a.') == "A word."
    long = clean("word " * 200)
    assert len(long) <= MAX_CHARS and long.endswith("word")


def test_duplicate_senses_and_non_entries_give_nothing_twice():
    entry = "Cat \\Cat\\, n.\n   A small animal.\n\n   A small animal.\n"
    assert [s.text for s in definitions(entry)] == ["A small animal."]
    assert definitions("") == [] and definitions("plain text\n") == []
