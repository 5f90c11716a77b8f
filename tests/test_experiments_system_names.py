"""bertram_experiments/system_names.py: titles read off the system names."""

from bertram_experiments.downstream.downstream import SYSTEMS
from bertram_experiments.system_names import system_title


def test_every_system_has_a_readable_title():
    assert system_title("bertram_slash_doc") == "+BERTRAM (slash, doc contexts)"
    assert system_title("bertram_recentre_form") == "+BERTRAM (recentre, form only)"
    assert system_title("oracle_replace") == "oracle (original words' embeddings, replace)"
    assert system_title("original") == "original texts (ceiling)"
    assert system_title("my_system") == "my_system"
    assert all(system_title(name) != name for name in SYSTEMS)
