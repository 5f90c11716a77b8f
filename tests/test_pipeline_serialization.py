"""pipeline/serialization.py: checked parts on their own, and the component saved and loaded through them,
all parts checked, failures loud."""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path
from typing import Optional

import pytest
import spacy
import srsly
from spacy import util
from spacy.lang.en import English

import spacy_bertram.pipeline.component  # noqa: F401  (registers the factory until the entry point is installed)
from spacy_bertram.pipeline.serialization import SAVED_PARTS
from spacy_bertram.pipeline.serialization import CFG, digest, read_file, read_parts, seal, staged_parts, unpack
from spacy_bertram.model.layers import get_bertram_network

from tests.util import TEXT, context_store_of, make_bertram_dir, make_nlp, same_vectors


# -- checked parts on their own: dicts of writers and readers through spaCy's util, no component ---------

READERS = {"a": bytes.decode, "b": bytes.decode}


def _writers(**parts: Optional[bytes]):
    return {name: (lambda data=data: data) for name, data in parts.items()}


def _names(directory: Path) -> list:
    return sorted(f.name for f in directory.iterdir())


def write_disk(path: Path, writers, cfg, exclude) -> None:
    """As the component's to_disk: sealed, then staged through util.to_disk."""
    sealed = seal(writers, cfg, set(exclude))
    with staged_parts(path, [*writers, CFG], set(exclude)) as stage:
        util.to_disk(path, {name: partial(stage, data=data) for name, data in sealed.items()}, exclude)


def read_disk(path: Path, readers, exclude):
    found: dict = {}
    util.from_disk(path, {name: partial(read_file, found) for name in [CFG, *readers]}, exclude)
    return read_parts(found.get, readers, exclude, lambda name: repr(str(path / name)))


def read_bytes(data: bytes, readers, exclude, **checks):
    found: dict = {}
    unpack(data, {name: partial(found.__setitem__, name) for name in [CFG, *readers]}, exclude)
    return read_parts(found.get, readers, exclude, lambda name: f"the serialized component's {name!r}", **checks)


def write_bytes(writers, cfg, exclude) -> bytes:
    sealed = seal(writers, cfg, set(exclude))
    return util.to_bytes({name: partial(sealed.__getitem__, name) for name in sealed}, exclude)


def test_checked_parts_round_trip_and_a_save_writes_all_or_nothing(tmp_path):
    cfg = {"model_id": "m1", "other": [1, 2]}
    write_disk(tmp_path / "c", _writers(a=b"alpha", b=None), cfg, exclude=())
    assert _names(tmp_path / "c") == ["a", "cfg"]  # None: nothing to save
    saved, values = read_disk(tmp_path / "c", READERS, ())
    assert values == {"a": "alpha"} and saved == {**cfg, "parts": {"a": digest(b"alpha")}}
    data = write_bytes(_writers(a=b"alpha", b=b"beta"), cfg, ())
    assert read_bytes(data, READERS, ())[1] == {"a": "alpha", "b": "beta"}
    assert data == srsly.msgpack_dumps(seal(_writers(a=b"alpha", b=b"beta"), cfg, ()))  # the layout saves have

    def broken() -> bytes:
        raise RuntimeError("serializer failed")

    before = {f.name: f.read_bytes() for f in (tmp_path / "c").iterdir()}
    with pytest.raises(RuntimeError, match="serializer failed"):
        write_disk(tmp_path / "c", {"a": lambda: b"new", "b": broken}, cfg, exclude=())
    assert {f.name: f.read_bytes() for f in (tmp_path / "c").iterdir()} == before
    write_disk(tmp_path / "c", _writers(a=None, b=b"beta"), cfg, exclude=())  # the old `a` goes
    assert _names(tmp_path / "c") == ["b", "cfg"]
    write_disk(tmp_path / "c", _writers(a=b"new", b=None), cfg, exclude=["b"])  # excluded: left as it is
    assert (tmp_path / "c" / "b").read_bytes() == b"beta"
    assert read_disk(tmp_path / "c", READERS, ())[1] == {"a": "new"}  # `b` is not listed in this cfg: not read

    with pytest.raises(OSError, match="No space left"):  # a failure while writing: nothing renamed, no temp left
        with staged_parts(tmp_path / "c", ["a", "b", CFG], set()) as stage:
            stage(tmp_path / "c" / "a", b"newer")
            raise OSError(28, "No space left on device")
    assert _names(tmp_path / "c") == ["a", "b", "cfg"] and (tmp_path / "c" / "a").read_bytes() == b"new"


def test_no_part_is_read_before_every_part_is_checked(tmp_path):
    calls: list = []
    readers = {"a": calls.append, "b": calls.append}
    write_disk(tmp_path, _writers(a=b"alpha", b=b"beta"), {}, ())
    (tmp_path / "b").write_bytes(b"edited")
    with pytest.raises(ValueError, match=r"\[E146\] '.*/b' does not match '.*/cfg' \(digest differs\)"):
        read_disk(tmp_path, readers, ())
    (tmp_path / "b").unlink()
    with pytest.raises(ValueError, match=r"\[E145\] '.*/b' is missing, but .* needs it \('.*/cfg' lists it\)"):
        read_disk(tmp_path, readers, ())
    assert calls == []

    def bad(data: bytes) -> None:
        raise KeyError("no such field")

    with pytest.raises(ValueError, match=r"\[E147\] Cannot load the serialized component's 'a': 'no such field'"):
        read_bytes(write_bytes(_writers(a=b"x"), {}, ()), {"a": bad}, ())


def test_a_cfg_without_its_list_of_parts_and_bad_maps():
    for parts, message in [
        ({"cfg": b'{"model_id": null}', "a": b"alpha"}, r"\[E142\].*'parts' must map .* to digests, got None"),
        ({"a": b"alpha"}, r"\[E144\] the serialized component's 'cfg' is missing"),
        ({"cfg": b'{"model_id": 3}'}, r"\[E141\].*'model_id' must be a string or null, got 3"),
        ({"cfg": b'{"parts": {"c": "x"}}'}, r"\[E142\].*'parts' must map \['a', 'b'\] to digests"),
        ({"cfg": b'{"parts": {}}', "a": "text"}, r"\[E143\].*component's 'a' holds str, not bytes"),
    ]:
        with pytest.raises(ValueError, match=message):
            read_bytes(srsly.msgpack_dumps(parts), READERS, (), strings=["model_id"])
    with pytest.raises(ValueError, match=r"\[E148\] The serialized component is not msgpack"):
        read_bytes(b"not msgpack at all", READERS, ())
    with pytest.raises(ValueError, match=r"\[E149\] The serialized component must be a map of parts"):
        read_bytes(srsly.msgpack_dumps([1, 2]), READERS, ())


# -- the component's parts ---------------------------------------------------------------------


def test_the_saved_layout_keeps_its_part_names_and_cfg_keys(encoder_bertram_dir, tiny_encoder_path, tmp_path):  # noqa: F811
    """The files and the cfg keys a save writes (what save_pipeline replaces, what a load reads)."""
    nlp = make_nlp(encoder_bertram_dir, tiny_encoder_path, save_cache=True)
    nlp(TEXT)
    nlp.to_disk(tmp_path / "p")
    assert _names(tmp_path / "p" / "bertram") == ["cache", "cfg", "model"]
    cfg = json.loads((tmp_path / "p" / "bertram" / "cfg").read_text(encoding="utf8"))
    assert sorted(cfg) == [
        "model_id",
        "model_source",
        "parts",
        "spacy_transformers_version",
        "subword_share",
        "subword_share_config",
        "transformers_version",
    ]
    assert sorted(cfg["parts"]) == ["cache", "model"]
    assert tuple(nlp.get_pipe("bertram")._parts()[0]) == SAVED_PARTS  # what save_pipeline replaces
    assert cfg["model_id"] == nlp.get_pipe("bertram").cfg["model_id"] and cfg["model_source"] == encoder_bertram_dir


def test_a_saved_pipeline_never_reads_its_model_path_again(tiny_encoder_path, tmp_path):
    model = make_bertram_dir(tmp_path / "m", tiny_encoder_path, counts={"the": 40, "kumquat": 2}, seed=7)
    nlp = make_nlp(model, tiny_encoder_path)
    doc = nlp(TEXT)
    nlp.to_disk(tmp_path / "p")
    data = nlp.to_bytes()
    (tmp_path / "m").rename(tmp_path / "moved")
    loaded = spacy.load(tmp_path / "p")
    assert loaded.config["components"]["bertram"]["model"]["model_path"] == model  # still named, never read
    assert same_vectors(loaded(TEXT), doc)
    loaded.initialize()  # the weights came from the pipeline: init does not reload them
    from_bytes = English.from_config(nlp.config).from_bytes(data)
    for other in (loaded, from_bytes):
        pipe = other.get_pipe("bertram")
        assert pipe.cfg["model_id"] == nlp.get_pipe("bertram").cfg["model_id"]
        # the counts come with the weights, and weigh the network's context mean as load_bertram's do
        assert get_bertram_network(pipe.model).context_word_counts.counts == {"the": 40, "kumquat": 2}
        pipe.cache.clear()
        assert same_vectors(other(TEXT), doc)


def test_round_trips_give_identical_vectors_and_predictions(nlp_full, tmp_path):
    texts = [TEXT, "A zorbing quokka.", "", "   ", "the cat"]
    nlp_full.get_pipe("bertram").cache.clear()
    docs = list(nlp_full.pipe(texts))
    nlp_full.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.get_pipe("bertram").cache.stats()["size"] == len(nlp_full.get_pipe("bertram").cache)
    from_bytes = English.from_config(nlp_full.config).from_bytes(nlp_full.to_bytes())
    for other in (loaded, from_bytes):
        for a, b in zip(docs, other.pipe(texts)):
            assert same_vectors(a, b) and a.cats == b.cats
    # Without the cache and the original model directory, vectors are recomputed identically.
    loaded = spacy.load(tmp_path / "pipeline", config={"components.bertram.model.model_path": "/nowhere"})
    loaded.get_pipe("bertram").cache.clear()
    assert all(same_vectors(a, b) for a, b in zip(docs, loaded.pipe(texts)))


def test_a_subword_share_set_on_the_component_round_trips(encoder_bertram_dir, tiny_encoder_path, tmp_path):  # noqa: F811
    """Saved with the component, as a loaded setting: unless the config at load says otherwise."""
    nlp = make_nlp(encoder_bertram_dir, tiny_encoder_path, save_cache=True)
    nlp.get_pipe("bertram").subword_share = 0.8
    doc = nlp(TEXT)
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    from_disk = English.from_config(nlp.config).from_disk(tmp_path / "p")
    from_bytes = English.from_config(nlp.config).from_bytes(nlp.to_bytes())
    for other in (loaded, from_disk, from_bytes):
        pipe = other.get_pipe("bertram")
        assert pipe.subword_share == 0.8 and len(pipe.cache) == 1  # its cache holds vectors of this share
        assert same_vectors(other(TEXT), doc) and pipe.cache.hits == 1
        pipe.cache.clear()
        assert same_vectors(other(TEXT), doc)
    overridden = spacy.load(tmp_path / "p", config={"components.bertram.subword_share": 0.5})
    assert overridden.get_pipe("bertram").subword_share == 0.5
    assert not same_vectors(overridden(TEXT), doc) and overridden.get_pipe("bertram").cache.hits == 0
    nlp.get_pipe("bertram").subword_share = None  # the model's own again
    nlp.to_disk(tmp_path / "p")
    assert json.loads((tmp_path / "p" / "bertram" / "cfg").read_text(encoding="utf8"))["subword_share"] is None
    assert spacy.load(tmp_path / "p").get_pipe("bertram").subword_share is None


def test_a_pipeline_saved_untrained_loads_the_model_path_given_at_load(
    encoder_bertram_dir, tiny_encoder_path, tmp_path
):  # noqa: F811
    untrained = spacy.blank("en")
    untrained.add_pipe("bertram", config={"model": {"base_model": tiny_encoder_path}})
    untrained.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p", config={"components.bertram.model.model_path": encoder_bertram_dir})
    assert loaded.get_pipe("bertram").cfg["model_id"] is None
    doc = loaded(TEXT)  # the configured model, not the saved untrained weights and not an error
    assert loaded.get_pipe("bertram").cfg["model_id"] and doc._.bertram
    assert same_vectors(doc, make_nlp(encoder_bertram_dir, tiny_encoder_path)(TEXT))
    with pytest.raises(ValueError, match=r"\[E154\].*has no trained BERTRAM model"):
        spacy.load(tmp_path / "p")(TEXT)  # and without a model_path: the named error, as before


# -- 3. a saved pipeline without its weights -----------------------------------------------


def test_a_saved_pipeline_without_its_model_file_is_refused(encoder_bertram_dir, tiny_encoder_path, tmp_path):  # noqa: F811
    nlp = make_nlp(encoder_bertram_dir, tiny_encoder_path)
    nlp.to_disk(tmp_path / "p")
    (tmp_path / "p" / "bertram" / "model").unlink()  # a crash between cfg and model, say
    with pytest.raises(ValueError, match=r"\[E145\].*bertram/model' is missing, but the saved component needs it"):
        spacy.load(tmp_path / "p")


def test_excluding_the_model_never_leaves_the_untrained_network_serving(
    encoder_bertram_dir, tiny_encoder_path, tmp_path
):  # noqa: F811
    make_nlp(encoder_bertram_dir, tiny_encoder_path).to_disk(tmp_path / "p")
    fresh = spacy.blank("en")
    pipe = fresh.add_pipe("bertram", config={"model": {"base_model": tiny_encoder_path}})
    pipe.from_disk(tmp_path / "p" / "bertram", exclude=["model"])
    assert pipe.cfg["model_id"] is None
    with pytest.raises(ValueError, match=r"\[E154\].*has no trained BERTRAM model"):
        fresh("The kumquat grows.")
    trained = make_nlp(encoder_bertram_dir, tiny_encoder_path)  # with a model: exclude keeps it
    doc = trained(TEXT)
    trained.get_pipe("bertram").from_disk(tmp_path / "p" / "bertram", exclude=["model"])
    assert same_vectors(trained(TEXT), doc)


# -- 4. a failed save keeps the previous pipeline -------------------------------------------


@pytest.mark.parametrize("fail_after", [0, 1000, 100_000])
def test_a_save_that_fails_midway_leaves_the_previous_pipeline(
    encoder_bertram_dir,
    tiny_encoder_path,
    tmp_path,  # noqa: F811
    monkeypatch,
    fail_after,
):
    from spacy_bertram import fileio

    old = make_nlp(encoder_bertram_dir, tiny_encoder_path, save_cache=True)
    docs = list(old.pipe([TEXT, "A quokka."]))
    old.to_disk(tmp_path / "p")
    before = {f.name: f.read_bytes() for f in (tmp_path / "p" / "bertram").iterdir()}
    new = make_nlp(make_bertram_dir(tmp_path / "other", tiny_encoder_path, seed=1), tiny_encoder_path, save_cache=True)
    new(TEXT)
    written = {"n": 0}

    def disk_full(path, data):  # writes until `fail_after` bytes in all, then fails like a full disk
        room = max(0, fail_after - written["n"])
        with open(path, "wb") as file_:
            file_.write(data[:room])
        written["n"] += min(room, len(data))
        if room < len(data):
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(fileio, "write_file", disk_full)
    with pytest.raises(OSError, match="No space left"):
        new.to_disk(tmp_path / "p")
    after = {f.name: f.read_bytes() for f in (tmp_path / "p" / "bertram").iterdir()}
    assert after == before  # every old part intact, no temp file left
    monkeypatch.undo()
    loaded = spacy.load(tmp_path / "p")
    assert all(same_vectors(a, b) for a, b in zip(docs, loaded.pipe([TEXT, "A quokka."])))


# -- smaller ---------------------------------------------------------------------------------


def _store(tmp_path):
    return context_store_of(tmp_path, [f"the farmer {i} sold a kumquat at the market" for i in range(200)])


def _assert_load_fails(pipeline: Path, damaged: Path, data: Optional[bytes], message: str) -> None:
    """Overwrite `damaged` with `data` (remove it for None): loading `pipeline` must raise, naming the problem."""
    if data is None:
        damaged.unlink()
    else:
        damaged.write_bytes(data)
    with pytest.raises(ValueError, match=message):
        spacy.load(pipeline)


def test_a_bad_context_store_fails_at_load_not_at_the_first_doc(encoder_bertram_dir, tiny_encoder_path, tmp_path):  # noqa: F811
    store = _store(tmp_path)
    nlp = make_nlp(encoder_bertram_dir, tiny_encoder_path, contexts="store", context_store=str(store))
    nlp.to_disk(tmp_path / "p")
    data = store.read_bytes()
    for damage, message in [
        (data[: len(data) // 2], "c.sqlite.*truncated"),  # a copy cut short
        (b"not a database at all" * 10, "not an SQLite file"),
        (None, "not found"),
    ]:
        _assert_load_fails(tmp_path / "p", store, damage, r"\[E153\] Cannot open the context store .*" + message)


def test_the_cache_is_not_saved_unless_asked(encoder_bertram_dir, tiny_encoder_path, tmp_path):  # noqa: F811
    private = "zorbing"  # a rare word of a doc processed before saving (training data, say)
    nlp = make_nlp(encoder_bertram_dir, tiny_encoder_path, save_cache=True)
    nlp(f"The {private} quokka.")
    nlp.to_disk(tmp_path / "p")
    assert private.encode() in (tmp_path / "p" / "bertram" / "cache").read_bytes()
    default = make_nlp(encoder_bertram_dir, tiny_encoder_path)
    assert default.get_pipe("bertram").save_cache is False
    default(f"The {private} quokka.")
    default.to_disk(tmp_path / "p")  # over the pipeline that had a cache: the old one goes too
    assert sorted(f.name for f in (tmp_path / "p" / "bertram").iterdir()) == ["cfg", "model"]
    assert not any(private.encode() in f.read_bytes() for f in (tmp_path / "p" / "bertram").iterdir())
    assert spacy.load(tmp_path / "p").get_pipe("bertram").cache.stats()["size"] == 0


def test_junk_cfg_names_the_file(encoder_bertram_dir, tiny_encoder_path, tmp_path):  # noqa: F811
    make_nlp(encoder_bertram_dir, tiny_encoder_path).to_disk(tmp_path / "p")
    cfg = tmp_path / "p" / "bertram" / "cfg"
    for junk, code, message in [
        (b"\x00\xffjunk", "E139", "is not the component's cfg"),
        (b"[1, 2]", "E140", "must hold a JSON object"),
        (b'{"model_id": 5}', "E141", "'model_id' must be a string or null"),
    ]:
        pattern = rf"\[{code}\] " + re.escape(repr(str(cfg))) + ".*" + re.escape(message)
        _assert_load_fails(tmp_path / "p", cfg, junk, pattern)
    _assert_load_fails(tmp_path / "p", cfg, None, r"\[E144\].*bertram/cfg' is missing")


def test_corrupt_saved_pipeline(encoder_bertram_dir, tiny_encoder_path, tmp_path):  # noqa: F811
    nlp = make_nlp(encoder_bertram_dir, tiny_encoder_path, save_cache=True)
    nlp("a kumquat")
    for part in ("cache", "model"):
        nlp.to_disk(tmp_path / "p")
        (tmp_path / "p" / "bertram" / part).write_bytes(b"\x81\xa3bad\xa1x")
        with pytest.raises(ValueError, match=rf"\[E146\].*bertram/{part}' does not match .*bertram/cfg"):
            spacy.load(tmp_path / "p")
    # Bad bytes whose digest cfg vouches for: the part's own reader names what is wrong.
    nlp.to_disk(tmp_path / "p")
    cfg = json.loads((tmp_path / "p" / "bertram" / "cfg").read_text(encoding="utf8"))
    cfg["parts"]["cache"] = digest(b"not msgpack at all")
    (tmp_path / "p" / "bertram" / "cfg").write_text(json.dumps(cfg), encoding="utf8")
    (tmp_path / "p" / "bertram" / "cache").write_bytes(b"not msgpack at all")
    with pytest.raises(ValueError, match=r"\[E147\] Cannot load '.*bertram/cache'.*Corrupt BERTRAM vector cache"):
        spacy.load(tmp_path / "p")
    # A cfg without its list of parts vouches for none of them.
    del cfg["parts"]
    (tmp_path / "p" / "bertram" / "cfg").write_text(json.dumps(cfg), encoding="utf8")
    with pytest.raises(ValueError, match=r"\[E142\] '.*bertram/cfg': 'parts' must map"):
        spacy.load(tmp_path / "p")


# -- where the context store is, and saving the whole pipeline at once ----------------------


def test_a_pipeline_moved_with_its_store_finds_it_relative_to_itself(encoder_bertram_dir, tiny_encoder_path, tmp_path):  # noqa: F811
    import shutil

    (tmp_path / "a").mkdir()
    store = _store(tmp_path / "a")  # a/c.sqlite beside the pipeline a/p, configured by its absolute path
    nlp = make_nlp(encoder_bertram_dir, tiny_encoder_path, contexts="store", context_store=str(store))
    docs = list(nlp.pipe([TEXT, "A kumquat."]))
    nlp.to_disk(tmp_path / "a" / "p")
    shutil.move(str(tmp_path / "a"), str(tmp_path / "b"))
    loaded = spacy.load(tmp_path / "b" / "p")
    assert loaded.get_pipe("bertram").word_sources.context_store == str((tmp_path / "b" / "c.sqlite").resolve())
    assert all(same_vectors(a, b) for a, b in zip(docs, loaded.pipe([TEXT, "A kumquat."])))


def test_a_pipeline_moved_without_its_store_says_how_to_point_it_there(
    encoder_bertram_dir, tiny_encoder_path, tmp_path
):  # noqa: F811
    import shutil

    (tmp_path / "a").mkdir()
    store = _store(tmp_path / "a")
    nlp = make_nlp(encoder_bertram_dir, tiny_encoder_path, contexts="store", context_store=str(store))
    nlp.to_disk(tmp_path / "a" / "p")
    shutil.move(str(tmp_path / "a" / "p"), str(tmp_path / "p"))
    shutil.move(str(store), str(tmp_path / "elsewhere.sqlite"))
    with pytest.raises(ValueError, match=r"\[E153\].*relative to the pipeline.*context_store"):
        spacy.load(tmp_path / "p")
    elsewhere = {"components": {"bertram": {"context_store": str(tmp_path / "elsewhere.sqlite")}}}
    pointed = spacy.load(tmp_path / "p", config=elsewhere)
    assert pointed("A kumquat.")._.bertram
    dotted = spacy.load(tmp_path / "p", config={"components.bertram.context_store": str(tmp_path / "elsewhere.sqlite")})
    assert dotted("A kumquat.")._.bertram  # the form the message writes


KILLED_SAVE = """
import pathlib, sys, time
import spacy, thinc.model
from spacy_bertram import save_pipeline

source, target, started, how = sys.argv[1:5]
nlp = spacy.load(source)

def stuck(self, path, *, exclude=()):  # spacy-transformers' transformer/model: opened, then the kill
    pathlib.Path(path).open("wb").close()
    pathlib.Path(started).touch()
    time.sleep(600)

thinc.model.Model.to_disk = stuck
save_pipeline(nlp, target) if how == "save_pipeline" else nlp.to_disk(target)
"""


def _killed_save(source: Path, target: Path, how: str, tmp_path: Path) -> None:
    """Save `source` over `target` in a subprocess, SIGKILLed while spacy-transformers writes its model."""
    import os
    import subprocess
    import sys
    import time

    started = tmp_path / f"started-{how}"
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", KILLED_SAVE, str(source), str(target), str(started), how], env=env)
    try:
        deadline = time.time() + 300
        while not started.exists():
            assert proc.poll() is None and time.time() < deadline, "the save ended before it was killed"
            time.sleep(0.1)
    finally:
        proc.kill()
        proc.wait()


def test_save_pipeline_killed_midway_leaves_the_old_pipeline_and_to_disk_does_not(
    bertram_dir,
    tiny_bert_path,  # noqa: F811
    tmp_path,
):
    from spacy_bertram import save_pipeline
    from spacy_bertram.fileio import clean_stale_temps

    texts = [TEXT, "A quokka."]
    old = make_nlp(bertram_dir, tiny_bert_path, transformer=tiny_bert_path)
    old_docs = list(old.pipe(texts))
    new = make_nlp(
        make_bertram_dir(tmp_path / "m1", tiny_bert_path, seed=1), tiny_bert_path, transformer=tiny_bert_path
    )
    new.to_disk(tmp_path / "new")
    for name in ("atomic", "plain"):
        save_pipeline(old, tmp_path / name)
    _killed_save(tmp_path / "new", tmp_path / "atomic", "save_pipeline", tmp_path)
    assert list((tmp_path).glob(".atomic.*.tmp"))  # the killed save's temp directory, beside the pipeline
    loaded = spacy.load(tmp_path / "atomic")
    assert all(same_vectors(a, b) for a, b in zip(old_docs, loaded.pipe(texts)))
    # The limit save_pipeline works around: nlp.to_disk writes spacy-transformers' model in place.
    _killed_save(tmp_path / "new", tmp_path / "plain", "to_disk", tmp_path)
    assert (tmp_path / "plain" / "transformer" / "model").stat().st_size == 0
    with pytest.raises(Exception):
        spacy.load(tmp_path / "plain")
    save_pipeline(spacy.load(tmp_path / "new"), tmp_path / "atomic")  # the next save clears the temp directory
    assert not list(tmp_path.glob(".atomic.*")) and not clean_stale_temps(tmp_path, target="atomic")
    new_docs = list(new.pipe(texts))
    assert all(same_vectors(a, b) for a, b in zip(new_docs, spacy.load(tmp_path / "atomic").pipe(texts)))


def test_save_pipeline_replaces_only_a_previous_pipeline_save(tmp_path):
    """The rename replaces a previous save's files and keeps every other file in the directory; a directory
    holding no save, or a file at a name a save writes, or a file in place of the directory, is refused (nothing
    written, nothing renamed) unless overwrite=True, which still keeps the files a save does not write."""
    from spacy_bertram import save_pipeline

    nlp = English()
    nlp.add_pipe("sentencizer")  # writes sentencizer.json, not a directory
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "notes.txt").write_text("mine")
    (tmp_path / "file").write_text("mine too")
    save_pipeline(nlp, tmp_path / "saved")
    save_pipeline(nlp, tmp_path / "saved")  # a previous save: replaced
    (tmp_path / "saved-too").mkdir()
    save_pipeline(nlp, tmp_path / "saved-too")  # an empty directory
    (tmp_path / "saved-too" / "notes.txt").write_text("added by hand")
    save_pipeline(nlp, tmp_path / "saved-too")  # a previous save: replaced, the user's file beside it kept
    assert (tmp_path / "saved-too" / "notes.txt").read_text() == "added by hand"
    (tmp_path / "fake").mkdir()
    (tmp_path / "fake" / "config.cfg").write_text("mine")  # one of the names a save writes, but no save
    before = sorted(p.name for p in tmp_path.iterdir())
    for target, why in (
        ("precious", r"is not empty and holds nothing save_pipeline wrote \(notes.txt\)"),
        ("fake", r"holds config.cfg \(not written by save_pipeline, or changed since\), which save_pipeline"),
        ("file", "is a file, not a directory"),
    ):
        with pytest.raises(ValueError, match=rf"\[E00[67]\] save_pipeline: .*{target}' {why}"):
            save_pipeline(nlp, tmp_path / target)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no temp directory, no .file.old
    assert (tmp_path / "file").read_text() == "mine too" and (tmp_path / "precious" / "notes.txt").read_text() == "mine"
    for target in ("precious", "file", "fake"):
        save_pipeline(nlp, tmp_path / target, overwrite=True)
        assert spacy.load(tmp_path / target).pipe_names == ["sentencizer"]
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # the file's .file.old is gone too
    assert (tmp_path / "precious" / "notes.txt").read_text() == "mine"  # overwrite replaces only the save's files


def _files(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_save_pipeline_keeps_a_users_files_inside_the_component_directories_as_to_disk_does(
    encoder_bertram_dir,
    tiny_encoder_path,
    tmp_path,  # noqa: F811
):
    """A user's file inside a component's directory (bertram/, transformer/, vocab/) stays through every
    save_pipeline, with overwrite=True too, exactly as nlp.to_disk over the same directory keeps it; the parts a
    save no longer writes (the cache once save_cache is off) go, as the component's own to_disk removes them."""
    from spacy_bertram import save_pipeline

    nlp = make_nlp(encoder_bertram_dir, tiny_encoder_path, transformer=tiny_encoder_path, save_cache=True)
    nlp(TEXT)
    routes = {
        "saved": lambda path, **kw: save_pipeline(nlp, path, **kw),
        "to_disk": lambda path, **kw: nlp.to_disk(path),
    }
    for name, save in routes.items():
        save(tmp_path / name)
        for inner in ("bertram/inner_notes.txt", "transformer/inner_notes.txt", "vocab/mine/notes.txt", "notes.txt"):
            (tmp_path / name / inner).parent.mkdir(exist_ok=True)
            (tmp_path / name / inner).write_text(f"mine: {inner}", encoding="utf8")
    assert (tmp_path / "saved" / "bertram" / "cache").is_file()
    nlp.get_pipe("bertram").save_cache = False
    for overwrite in (False, True):
        for name, save in routes.items():
            save(tmp_path / name, overwrite=overwrite)
    saved, plain = _files(tmp_path / "saved"), _files(tmp_path / "to_disk")
    assert saved.keys() == plain.keys() and "bertram/cache" not in saved
    for inner in ("bertram/inner_notes.txt", "transformer/inner_notes.txt", "vocab/mine/notes.txt", "notes.txt"):
        assert saved[inner] == plain[inner] == f"mine: {inner}".encode()
    loaded = spacy.load(tmp_path / "saved")
    assert same_vectors(nlp(TEXT), loaded(TEXT))


def test_the_components_own_save_refuses_a_file_and_keeps_others(encoder_bertram_dir, tiny_encoder_path, tmp_path):  # noqa: F811
    """to_disk at a file is a coded error (it was a raw FileExistsError); a file at a part's name that no save
    listed is refused unless overwrite=True; a user's file beside the parts stays."""
    nlp = make_nlp(encoder_bertram_dir, tiny_encoder_path, save_cache=True)
    nlp(TEXT)
    pipe = nlp.get_pipe("bertram")
    (tmp_path / "file").write_text("mine", encoding="utf8")
    for overwrite in ({}, {"overwrite": True}):
        with pytest.raises(ValueError, match=r"\[E006\] bertram.to_disk: the output '.*file' is a file"):
            pipe.to_disk(tmp_path / "file", **overwrite)
    assert (tmp_path / "file").read_text() == "mine"
    out = tmp_path / "component"
    out.mkdir()
    (out / "cache").write_text("mine: a cache of my own", encoding="utf8")
    (out / "notes.txt").write_text("mine", encoding="utf8")
    with pytest.raises(ValueError, match=r"\[E007\] bertram.to_disk: .*holds cache \(not written by .*overwrite=True"):
        pipe.to_disk(out)
    assert sorted(p.name for p in out.iterdir()) == ["cache", "notes.txt"]
    pipe.to_disk(out, overwrite=True)
    pipe.to_disk(out)  # its own save now: cfg lists the parts
    assert sorted(p.name for p in out.iterdir()) == ["cache", "cfg", "model", "notes.txt"]
    assert (out / "notes.txt").read_text() == "mine"
