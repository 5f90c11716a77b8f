"""Crash-safe writes: temp then rename, all-or-nothing groups, permissions from the umask, and output checks."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest

from spacy_bertram import fileio
from spacy_bertram.fileio import atomic_directory, current_umask, staged_files, write_bytes_atomic, write_json_atomic


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask():
    """Set a umask for one test and put the old one back."""
    old = os.umask(0o022)
    os.umask(old)

    def set_(value: int) -> None:
        os.umask(value)

    yield set_
    os.umask(old)


@pytest.mark.parametrize("value", [0o022, 0o027, 0o002])
def test_atomic_files_and_directories_follow_the_umask(tmp_path, umask, value):
    umask(value)
    assert current_umask() == value
    write_json_atomic(tmp_path / "a.json", {"x": 1})
    write_bytes_atomic(tmp_path / "b.bin", b"x")
    with atomic_directory(tmp_path / "dir", ["inner.json"]) as tmp:
        write_json_atomic(tmp / "inner.json", [])
    with staged_files() as files:
        files.stage(tmp_path / "staged", b"y")
    for name in ("a.json", "b.bin", "dir/inner.json", "staged"):
        assert mode(tmp_path / name) == 0o666 & ~value, name
    assert mode(tmp_path / "dir") == 0o777 & ~value


def test_model_and_training_outputs_follow_the_umask(tmp_path, umask, tiny_bert_path):
    from spacy_bertram import create_bertram, save_bertram
    from spacy_bertram.model.inputs import NgramVocab
    from spacy_bertram.training.prepare import prepare

    umask(0o002)
    network = create_bertram(tiny_bert_path, NgramVocab.from_words(["kumquat"], min_count=1), max_seq_length=32)
    model = save_bertram(network, tmp_path / "model")
    (tmp_path / "corpus.txt").write_text("the kumquat is a fruit\nthe fruit is sweet\n", encoding="utf8")
    prepared = tmp_path / "prepared"
    prepare([tmp_path / "corpus.txt"], prepared, min_count=1, progress=False)
    assert mode(model) == 0o775 and mode(prepared) == 0o775
    for path in [*model.iterdir(), *prepared.iterdir()]:
        assert mode(path) == 0o664, path.name  # was 0600 (model) and a forced 0644 (prepare)


def test_a_failed_group_write_keeps_the_old_files(tmp_path, monkeypatch):
    for name in ("a", "b", "manifest"):
        (tmp_path / name).write_bytes(b"old " + name.encode())
    written = []

    def fail_on_b(path, data):
        if Path(path).name.startswith(".b."):
            Path(path).write_bytes(data[:2])  # half a file, then the disk is full
            raise OSError(27, "File too large")
        written.append(path)
        Path(path).write_bytes(data)

    monkeypatch.setattr(fileio, "write_file", fail_on_b)
    with pytest.raises(OSError, match="too large"):
        with staged_files() as files:
            for name in ("a", "b", "manifest"):
                files.stage(tmp_path / name, b"new " + name.encode())
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == {
        "a": b"old a",
        "b": b"old b",
        "manifest": b"old manifest",
    }  # and no temp files left
    assert written


def test_an_output_directory_with_files_a_command_did_not_write_is_refused(tmp_path):
    from spacy_bertram.fileio import check_output_dir

    out = tmp_path / "out"
    check_output_dir(out, ["pipeline"], command="assemble", replaces=True)  # missing: fine
    out.mkdir()
    (out / ".pipeline.abc.tmp").mkdir()  # a killed run's temp entry does not count
    check_output_dir(out, ["pipeline"], command="assemble", replaces=True)
    (out / "notes.txt").write_text("mine")
    (out / "sub").mkdir()
    with pytest.raises(
        ValueError,
        match=r"\[E007\] assemble: "
        r".* holds nothing assemble wrote \(notes.txt, sub\).*--force",
    ):
        check_output_dir(out, ["pipeline", "code.py"], command="assemble", replaces=True)
    check_output_dir(out, ["pipeline"], command="assemble", replaces=True, force=True)
    (out / "stage1-form").mkdir()  # one of train's: a run of it wrote here; notes.txt beside it stays
    check_output_dir(out, ["progress.json", "stage*"], command="train")
    (out / "pipeline").mkdir()  # one of assemble's: it replaces that and keeps the rest
    check_output_dir(out, ["pipeline", "code.py"], command="assemble", replaces=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match=r"\[E006\].*is a file"):
        check_output_dir(tmp_path / "file", ["pipeline"], command="assemble")


def test_a_name_the_writer_writes_holding_a_file_it_did_not_write_is_refused(tmp_path):
    """Where a writer records what it wrote (a digest list), a file at one of its names that the record does not
    vouch for would be overwritten: refused, named, unless forced."""
    from spacy_bertram.fileio import check_output_dir

    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("mine")
    owned = ["config.json", "digests.json"]
    with pytest.raises(
        ValueError,
        match=r"\[E007\] save_bertram: .*holds config.json \(not written by save_bertram, "
        r"or changed since\), which save_bertram would overwrite.*force=True to",
    ):
        check_output_dir(tmp_path, owned, command="save_bertram", written=[], force_hint="force=True")
    check_output_dir(tmp_path, owned, command="save_bertram", written=["config.json"])
    check_output_dir(tmp_path, owned, command="save_bertram", written=[], force=True)


def test_a_replaced_directory_keeps_every_entry_its_writer_did_not_write(tmp_path, umask):
    """Only the writer's entries go with the old directory; the others are carried over unchanged: same inode
    (a hard link), same mode, nested directories and symbolic links too."""
    umask(0o077)
    target = tmp_path / "model"
    target.mkdir()
    (target / "config.json").write_text("old")
    (target / "stale-part").write_text("old")  # the writer's, no longer written: gone
    (target / "notes.txt").write_text("mine")
    os.chmod(target / "notes.txt", 0o640)
    (target / "drafts").mkdir()
    (target / "drafts" / "a.txt").write_text("draft")
    os.symlink("notes.txt", target / "link")
    inode = (target / "notes.txt").stat().st_ino
    with atomic_directory(target, ["config.json", "stale-*"]) as tmp:
        (tmp / "config.json").write_text("new")
    assert sorted(p.name for p in target.iterdir()) == ["config.json", "drafts", "link", "notes.txt"]
    assert (target / "config.json").read_text() == "new" and (target / "notes.txt").read_text() == "mine"
    assert (target / "notes.txt").stat().st_ino == inode and mode(target / "notes.txt") == 0o640
    assert (target / "drafts" / "a.txt").read_text() == "draft" and os.readlink(target / "link") == "notes.txt"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # no temp directory left


def test_removing_what_a_writer_wrote_leaves_the_rest_and_its_directory(tmp_path):
    from spacy_bertram.fileio import remove_written

    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "states-1.npy").write_bytes(b"x")
    (tmp_path / "cache" / ".states-2.npy.tmp").write_bytes(b"x")
    remove_written(tmp_path / "cache", ["states-*"])
    assert not (tmp_path / "cache").exists()  # nothing else in it: gone
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "states-1.npy").write_bytes(b"x")
    (tmp_path / "cache" / "mine.txt").write_text("mine")
    remove_written(tmp_path / "cache", ["states-*"])
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["mine.txt"]
    remove_written(tmp_path / "missing", ["states-*"])  # nothing to do
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "progress.json").write_text("{}")
    remove_written(tmp_path / "run", ["progress.json"], keep_directory=True)  # an output it goes on writing
    assert (tmp_path / "run").is_dir() and not any((tmp_path / "run").iterdir())


def test_stale_temps_are_removed_and_a_half_swapped_directory_is_put_back(tmp_path):
    from spacy_bertram.fileio import clean_stale_temps

    (tmp_path / "checkpoints" / ".stage1-context.x1.tmp").mkdir(parents=True)
    (tmp_path / "checkpoints" / ".stage1-context.x1.tmp" / "state.safetensors").write_bytes(b"half")
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / ".states-1.npy.tmp").write_bytes(b"half")
    (tmp_path / ".model.old").mkdir()  # killed between the two renames of a swap: model is missing
    (tmp_path / ".model.old" / "config.json").write_text("{}")
    (tmp_path / "keep.txt").write_text("mine")
    touched = clean_stale_temps(tmp_path)
    assert len(touched) == 3
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == [
        "cache",
        "checkpoints",
        "keep.txt",
        "model",
        "model/config.json",
    ]


def test_a_directory_is_replaced_without_a_moment_missing(tmp_path, monkeypatch):
    """Where the OS swaps two paths in one call, atomic_directory never renames the target away."""
    if not fileio._exchange(tmp_path, tmp_path):  # renameat2 is Linux-only (and file-system dependent)
        pytest.skip("no renameat2 RENAME_EXCHANGE here")
    target = tmp_path / "model"
    target.mkdir()
    (target / "a").write_text("old")
    renamed = []
    real = os.replace
    monkeypatch.setattr(fileio.os, "replace", lambda a, b: renamed.append((a, b)) or real(a, b))
    with atomic_directory(target, ["a"]) as tmp:
        (tmp / "a").write_text("new")
    assert renamed == [] and (target / "a").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_an_output_file_is_replaced_only_where_its_command_wrote_it(tmp_path):
    """The file says who wrote it: a JSON key, a text file's first line, an SQLite store's format."""
    import sqlite3

    from spacy_bertram.fileio import check_output_file, mark_json, output_mark, text_mark

    out = tmp_path / "m.json"
    check_output_file(out, command="similarity")  # missing: fine
    out.write_text('{"results": 1}')
    with pytest.raises(ValueError, match=r"\[E071\] similarity: .*m.json' exists and carries no mark.*--force"):
        check_output_file(out, command="similarity")
    write_json_atomic(out, mark_json({"results": 1}, "intrinsic"), overwrite=True)  # intrinsic's, with --force
    with pytest.raises(ValueError, match=r"\[E071\].* is marked 'intrinsic', not 'similarity'"):
        check_output_file(out, command="similarity")
    check_output_file(out, command="intrinsic")  # its own: replaced
    check_output_file(out, command="similarity", force=True)
    (tmp_path / "r.md").write_text(text_mark("report") + "\n# A report\n")
    assert output_mark(tmp_path / "r.md") == "report" and output_mark(tmp_path / "m.json") == "intrinsic"
    check_output_file(tmp_path / "r.md", command="report")
    conn = sqlite3.connect(tmp_path / "s.sqlite")
    conn.executescript("CREATE TABLE meta (key TEXT, value TEXT); INSERT INTO meta VALUES ('format', 'a-store');")
    conn.commit()
    conn.close()
    assert output_mark(tmp_path / "s.sqlite") == "a-store"
    check_output_file(tmp_path / "s.sqlite", command="dictionary", mark="a-store")
    with pytest.raises(ValueError, match=r"\[E071\].* is marked 'a-store', not 'b-store'"):
        check_output_file(tmp_path / "s.sqlite", command="dictionary", mark="b-store")
    with pytest.raises(ValueError, match=r"\[E072\] report: .* is a directory"):
        check_output_file(tmp_path, command="report", force=True)


def test_a_file_another_command_wrote_makes_a_directory_not_the_commands(tmp_path):
    """metrics.json names its writer: evaluate-originals does not overwrite evaluate's (nor a user's)."""
    from spacy_bertram.fileio import check_output_dir, mark_json

    out = tmp_path / "out"
    out.mkdir()
    owned = ["metrics.json", "predictions.jsonl"]
    write_json_atomic(out / "metrics.json", mark_json({"n_items": 3}, "evaluate"))
    (out / "predictions.jsonl").write_text("")
    with pytest.raises(
        ValueError,
        match=r"\[E007\] evaluate-originals: .*holds metrics.json \(written by evaluate\), "
        r"which evaluate-originals would overwrite.*--force",
    ):
        check_output_dir(out, owned, command="evaluate-originals", marked=["metrics.json"])
    check_output_dir(out, owned, command="evaluate", marked=["metrics.json"])  # its own run: redone
    check_output_dir(out, owned, command="evaluate-originals", marked=["metrics.json"], force=True)
    write_json_atomic(out / "metrics.json", {"n_items": 3}, overwrite=True)
    with pytest.raises(ValueError, match=r"metrics.json \(not marked as written by evaluate\)"):
        check_output_dir(out, owned, command="evaluate", marked=["metrics.json"])


def test_an_unwritable_output_is_refused_and_nothing_is_left(unwritable_dir):
    from spacy_bertram.fileio import check_output_dir, check_output_file

    where = re.escape(repr(str(unwritable_dir)))
    for check in (
        lambda: check_output_dir(unwritable_dir / "out", ["a"], command="split"),
        lambda: check_output_dir(unwritable_dir, ["a"], command="vectors", replaces=True, force=True),
        lambda: check_output_file(unwritable_dir / "r.md", command="report"),
    ):
        with pytest.raises(ValueError, match=rf"\[E070\] .*: cannot write .*: {where} is not writable"):
            check()
    assert list(unwritable_dir.iterdir()) == []


#: The only places outside fileio.py that remove or rename files, each its writer's own: a temp file it made,
#: or a file at a name it writes that the output rule has let it replace.
OWN_REMOVALS = {
    "spacy_bertram/training/state_cache.py": "its temp .npy renamed into place",
    "scripts/registry_data.py": "the corpus parts it built, in its own asset folders",
    "benchmarks/train_scaling.py": "its own temp corpus",
}


def test_no_writer_removes_files_but_through_the_output_rule():
    """Removing and replacing go through fileio (atomic_directory, remove_written), which keep what a writer
    did not write; a new rmtree elsewhere is a file of a user's waiting to be lost."""
    root = Path(__file__).resolve().parents[1]
    pattern = re.compile(r"\b(shutil\.rmtree|os\.remove|os\.unlink|os\.replace|os\.rename)\(|\.unlink\(|\.rmdir\(")
    found = set()
    for folder in ("spacy_bertram", "bertram_experiments", "scripts", "benchmarks"):
        for path in (root / folder).rglob("*.py"):
            name = path.relative_to(root).as_posix()
            if name != "spacy_bertram/fileio.py" and pattern.search(path.read_text(encoding="utf8")):
                found.add(name)
    assert found == set(OWN_REMOVALS)


def test_a_new_file_is_linked_into_place_never_over_one_and_leaves_nothing_else(tmp_path):
    from spacy_bertram.fileio import new_file

    target = tmp_path / "memory.sqlite"
    with new_file(target) as temp:
        temp.write_bytes(b"mine")
        (tmp_path / f"{temp.name}-wal").write_bytes(b"sidecar")
    assert target.read_bytes() == b"mine" and sorted(p.name for p in tmp_path.iterdir()) == ["memory.sqlite"]
    with new_file(target) as temp:  # another process made it meanwhile: that one is kept
        temp.write_bytes(b"late")
    assert target.read_bytes() == b"mine" and sorted(p.name for p in tmp_path.iterdir()) == ["memory.sqlite"]
    with pytest.raises(RuntimeError), new_file(tmp_path / "other.sqlite") as temp:
        temp.write_bytes(b"half")
        raise RuntimeError
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.sqlite"]


def test_an_atomic_file_replaces_its_target_and_leaves_nothing_of_its_temp(tmp_path):
    """`atomic_path` and `new_file` share one temp: what a writer made beside it (a database's `-wal`) goes too,
    on success and on failure, and the user's file beside the target is never touched."""
    from spacy_bertram.fileio import atomic_path

    target = tmp_path / "store.sqlite"
    target.write_bytes(b"old")
    (tmp_path / "notes.txt").write_text("mine", encoding="utf8")
    with atomic_path(target, overwrite=True) as temp:  # a store its writer's output rule let it replace
        temp.write_bytes(b"new")
        (tmp_path / f"{temp.name}-wal").write_bytes(b"sidecar")
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "store.sqlite"]
    with pytest.raises(RuntimeError), atomic_path(target, overwrite=True) as temp:
        temp.write_bytes(b"half")
        (tmp_path / f"{temp.name}-journal").write_bytes(b"sidecar")
        raise RuntimeError
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "store.sqlite"]


def test_the_public_writers_replace_only_a_file_they_wrote_unless_overwrite(tmp_path):
    """write_json_atomic, write_bytes_atomic and atomic_path never replace a user's file silently: a file is theirs
    when it carries the mark of what they write (mark_json, text_mark, `mark`); else E071 names it and the way to
    replace it anyway, and the file is as it was, nothing written beside it."""
    from spacy_bertram.fileio import atomic_path, mark_json, text_mark

    mine = {name: tmp_path / name for name in ("table.json", "notes.md", "data.bin")}
    for path in mine.values():
        path.write_text("mine", encoding="utf8")
    writers = {
        "write_json_atomic": lambda **kw: write_json_atomic(mine["table.json"], {"words": []}, **kw),
        "write_bytes_atomic": lambda **kw: write_bytes_atomic(mine["notes.md"], b"# notes\n", **kw),
        "atomic_path": lambda **kw: atomic_path(mine["data.bin"], **kw).__enter__(),
    }
    for (writer, write), path in zip(writers.items(), mine.values()):
        with pytest.raises(
            ValueError,
            match=rf"\[E071\] {writer}: .*{path.name}' exists and carries no mark .*pass overwrite=True to replace",
        ):
            write()
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {name: "mine" for name in mine}
    write_json_atomic(mine["table.json"], {"words": []}, overwrite=True)
    write_bytes_atomic(mine["notes.md"], b"# notes\n", overwrite=True)
    assert json.loads(mine["table.json"].read_text()) == {"words": []} and mine["notes.md"].read_text() == "# notes\n"
    # Their own marked outputs are replaced: a rerun's file over the previous run's.
    write_json_atomic(tmp_path / "m.json", mark_json({"n": 1}, "pool"))
    write_json_atomic(tmp_path / "m.json", mark_json({"n": 2}, "pool"))
    with pytest.raises(ValueError, match=r"\[E071\] write_json_atomic: .* is marked 'pool', not 'report'"):
        write_json_atomic(tmp_path / "m.json", mark_json({"n": 3}, "report"))
    write_bytes_atomic(tmp_path / "r.md", f"{text_mark('report')}\nold\n".encode())
    write_bytes_atomic(tmp_path / "r.md", f"{text_mark('report')}\nnew\n".encode())
    with atomic_path(tmp_path / "r.md", mark="report") as tmp:
        tmp.write_text(f"{text_mark('report')}\nnewer\n", encoding="utf8")
    assert json.loads((tmp_path / "m.json").read_text())["n"] == 2 and "newer" in (tmp_path / "r.md").read_text()
    (tmp_path / "dir").mkdir()
    for overwrite in (False, True):  # a directory is never replaced by a file
        with pytest.raises(ValueError, match=r"\[E072\] write_json_atomic: .*dir' is a directory"):
            write_json_atomic(tmp_path / "dir", {}, overwrite=overwrite)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.bin", "dir", "m.json", "notes.md", "r.md", "table.json"]


def test_an_atomic_directory_refuses_a_file_or_others_files_unless_overwrite(tmp_path):
    (tmp_path / "file").write_text("mine")
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "notes.txt").write_text("mine")
    for name, why in (("file", "is a file, not a directory"), ("theirs", "holds nothing .* pass overwrite=True")):
        with pytest.raises(ValueError, match=rf"\[E00[67]\] atomic_directory: .*{name}'.* {why}"):
            with atomic_directory(tmp_path / name, ["a"]) as tmp:
                (tmp / "a").write_text("new")
    assert (tmp_path / "file").read_text() == "mine" and sorted(p.name for p in tmp_path.iterdir()) == [
        "file",
        "theirs",
    ]
    with atomic_directory(tmp_path / "theirs", ["a"], overwrite=True) as tmp:
        (tmp / "a").write_text("new")
    assert sorted(p.name for p in (tmp_path / "theirs").iterdir()) == ["a", "notes.txt"]


def test_a_directory_the_writer_writes_into_keeps_the_files_it_does_not_write(tmp_path):
    """`NAME/` makes NAME a directory the writer writes into, at any depth (as nlp.to_disk writes a component's
    directory): a file it does not write there stays, and so does a directory of a dropped part holding
    anything; `NAME/PART` names the writer's entry inside, which goes once no longer written."""
    from spacy_bertram.fileio import remove_written

    target = tmp_path / "pipeline"
    for path, text in {
        "config.cfg": "old",
        "bertram/cfg": "old",
        "bertram/cache": "old, a stale part",
        "bertram/inner_notes.txt": "mine",
        "vocab/strings.json": "old",
        "vocab/deeper/mine.txt": "mine",
        "dropped/model": "old",
        "beside.txt": "mine",
    }.items():
        (target / path).parent.mkdir(parents=True, exist_ok=True)
        (target / path).write_text(text)
    owned = ["config.cfg", "bertram/", "bertram/cfg", "bertram/cache", "vocab/", "shards/plan.json"]
    with atomic_directory(target, owned) as tmp:
        for path in ("config.cfg", "bertram/cfg", "vocab/strings.json"):
            (tmp / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp / path).write_text("new")
    found = {str(p.relative_to(target)): p.read_text() for p in target.rglob("*") if p.is_file()}
    assert found == {
        "config.cfg": "new",
        "bertram/cfg": "new",
        "bertram/inner_notes.txt": "mine",
        "vocab/strings.json": "new",
        "vocab/deeper/mine.txt": "mine",
        "dropped/model": "old",  # not the writer's: carried whole
        "beside.txt": "mine",
    }
    (target / "shards").mkdir()
    (target / "shards" / "plan.json").write_text("{}")
    (target / "shards" / "mine.txt").write_text("mine")
    remove_written(target, ["shards/plan.json", "bertram/", "bertram/cfg"], keep_directory=True)
    assert sorted(p.name for p in (target / "shards").iterdir()) == ["mine.txt"]
    assert sorted(p.name for p in (target / "bertram").iterdir()) == ["inner_notes.txt"]
    remove_written(target / "shards", ["mine-not.txt"])
    (target / "shards" / "mine.txt").unlink()
    remove_written(target, ["shards/plan.json"], keep_directory=True)  # empty once the writer's entries go
    assert not (target / "shards").exists()
