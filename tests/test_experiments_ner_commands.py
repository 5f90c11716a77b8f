"""The NER commands: ner-folds from an IOB file, a malformed line as a one-line error, missing inputs named."""

from __future__ import annotations

import json

from tests.util import invoke


def test_ner_folds_from_an_iob_file(tmp_path):
    data = tmp_path / "mine.txt"
    data.write_text("".join(f"Paris{i}\tB-geo-loc\nis\tO\n\n" for i in range(6)), encoding="utf8")
    result = invoke("ner-folds", data, tmp_path / "folds", "--folds", 3)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["entities"] == 6
    assert len(json.loads((tmp_path / "folds" / "folds.json").read_text())["parts"]) == 3


def test_ner_folds_refuses_a_directory_of_other_files(tmp_path):
    data = tmp_path / "mine.txt"
    data.write_text("Paris\tB-geo-loc\n\nRome\tB-geo-loc\n", encoding="utf8")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    result = invoke("ner-folds", data, tmp_path / "out")
    assert result.exit_code == 1 and "ner-folds: the output directory" in result.output and "--force" in result.output
    assert invoke("ner-folds", data, tmp_path / "out", "--force").exit_code == 0


def test_a_malformed_line_ends_the_command_with_its_number(tmp_path):
    data = tmp_path / "mine.txt"
    data.write_text("Paris\tB-geo-loc\nis\tO\n\nLondon B-geo-loc\n", encoding="utf8")
    result = invoke("ner-folds", data, tmp_path / "folds")
    assert result.exit_code == 1 and "mine.txt line 4 is not 'token<TAB>tag'" in result.output
    assert not (tmp_path / "folds").exists()


def test_ner_train_and_evaluate_name_what_is_missing(tmp_path):
    result = invoke("ner-train", tmp_path, tmp_path / "t", "--bertram", tmp_path / "none")
    assert result.exit_code == 1 and "has no folds.json: it is the output of `ner-folds`" in result.output
    (tmp_path / "folds").mkdir()
    (tmp_path / "folds" / "folds.json").write_text("{}", encoding="utf8")
    result = invoke("ner-train", tmp_path / "folds", tmp_path / "t", "--bertram", tmp_path / "none")
    assert (
        result.exit_code == 1
        and "[E284] --bertram " in result.output
        and "it is the output of `train`" in result.output
    )
    result = invoke("ner-train", tmp_path / "folds", tmp_path / "t", "--bertram", tmp_path / "none", "--workers", "-1")
    assert result.exit_code == 2 and "Invalid value for '--workers'" in result.output  # refused while parsed
    result = invoke("ner-evaluate", tmp_path, tmp_path / "t", tmp_path / "m")
    assert result.exit_code == 1 and "ner-folds" in result.output
