"""A context store of the user's own texts (no labels), built and grown in place: `texts-store`.

`prepare` samples contexts for training words from a corpus, in two passes; a user who wants a rare
word of their own domain to read their own sentences has a few files of texts, and more later. This
module reads those texts as spaCy users keep them (`read_texts`: .txt, .jsonl, .spacy DocBins,
compressed .txt/.jsonl, directories of them, stdin) and adds them to a store (`add_texts`) in one
pass: every word gets its count and a uniform sample of up to `max_contexts` distinct contexts of
all its occurrences so far, whichever add they came in. The parts of a hyphen-joined word are words
too ("twinkly" of "twinkly-eyed", in its context): spaCy's tokenizer cuts them apart, so the component
meets them, and `vectors --rare-only`, as tokens of their own (`corpus.hyphen_parts`).

The sample is Algorithm R, resumed: the store's `words.count` is exactly how many occurrences the
sampler has seen, and its contexts are the reservoir (their digests are read back for the words a new
text holds), so adding texts later gives the sample that one pass over all of them would have given
in distribution. The file is the read side's (`context_store.py`: same schema, format and version,
so `ContextStore.open` and the component's `spacy-bertram.store_contexts.v1` read it); its meta
records `source = texts` and `max_contexts`, which later adds must keep, like `window` and casing.

An add works on a copy beside the store and renames it into place at the end (`fileio.atomic_path`):
an interrupted add leaves the old store as it was. One writer at a time: two adds running together
each copy the old store, and the later rename wins.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import sys
import time
import warnings
from pathlib import Path
from typing import IO, Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Union

from ..context_store import DEFAULT_WINDOW, FORMAT_NAME, FORMAT_VERSION, SCHEMA, ContextStore, DamagedFileError
from ..bounds import check_count
from ..errors import Errors, Warnings
from ..fileio import atomic_path, check_output_file, check_writable, output_mark
from ..types import PathLike
from .corpus import check_corpus_paths, decoded, expand_paths, file_texts, hyphen_parts, text_kind, tokenize_spans
from .progress import progress_bar
from .store_builder import _GrowingReservoirs, context_digest

#: The command that writes these stores, and the mark its meta table carries (`source`).
COMMAND = "texts-store"
SOURCE = "texts"
#: Contexts kept per word in a new store (the component reads `contexts_per_word`, 8 by default, of them).
DEFAULT_TEXT_MAX_CONTEXTS = 16
#: The meta entry that says which parts of a word a store counts as words too: those of hyphen-joined words.
PARTS_KEY = "word_parts"
HYPHEN_PARTS = "hyphens"
#: The one text that means "read the texts from stdin", as `cat -` does.
STDIN = "-"
#: The kinds of text file read (`corpus.text_kind`), as messages name them.
KINDS = '.txt (one text per line), .jsonl (a "text" field per line), .spacy (DocBin), .txt/.jsonl + .gz/.bz2/.xz'

TextSource = Union[Path, str]


# -- reading the texts ---------------------------------------------------------------------------


def text_files(paths: Union[PathLike, Iterable[PathLike]]) -> List[TextSource]:
    """The inputs, each checked before any text is read: files as given (a missing one is E209, an unknown
    kind E082), directories as their files of the kinds read (sorted, recursively, hidden ones left out;
    the others skipped with W019), and "-" for stdin."""
    given = [paths] if isinstance(paths, (str, Path)) else list(paths)
    sources: List[TextSource] = []
    for raw in given:
        if str(raw) == STDIN:
            sources.append(STDIN)
            continue
        path = check_corpus_paths([raw])[0]
        if path.is_dir():
            files = expand_paths([path])
            skipped = [f for f in files if text_kind(f) is None]
            if skipped:
                shown = ", ".join(str(f.relative_to(path)) for f in skipped[:5])
                shown += f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""
                warnings.warn(Warnings.W019.format(n=len(skipped), directory=path, kinds=KINDS, files=shown))
            sources.extend(f for f in files if text_kind(f) is not None)
        elif text_kind(path) is None:
            suffix = "".join(path.suffixes) or "no suffix"
            raise ValueError(Errors.E082.format(path=path, suffix=suffix, kinds=KINDS))
        else:
            sources.append(path)
    return sources


class TextStream:
    """The texts of some inputs, read when iterated; `paths` names the inputs in messages (E088)."""

    def __init__(self, sources: Sequence[TextSource], paths: str) -> None:
        self.sources = list(sources)
        self.paths = paths

    def __iter__(self) -> Iterator[str]:
        for source in self.sources:
            yield from _stdin_texts() if source == STDIN else file_texts(Path(source))


def read_texts(paths: Union[PathLike, Iterable[PathLike]]) -> TextStream:
    """The texts of `paths`, one at a time, blank ones left out: the lines of a .txt file, the "text" field of
    each line of a .jsonl file, the text of each doc of a .spacy DocBin, stdin's lines for "-". The paths are
    checked at the call (`text_files`); a bad line or file raises a ValueError naming it when it is read."""
    given = [paths] if isinstance(paths, (str, Path)) else list(paths)
    return TextStream(text_files(given), ", ".join(str(p) for p in given))


def _stdin_texts() -> Iterator[str]:
    stream: IO[Any] = getattr(sys.stdin, "buffer", sys.stdin)
    for number, line in enumerate(stream, 1):
        text = decoded(line, "stdin", number)
        if text.strip():
            yield text.rstrip("\r\n")


# -- the store's settings --------------------------------------------------------------------------


def store_settings(path: PathLike) -> Dict[str, str]:
    """The meta of a store texts can be added to: E084 if `path` is no context store, E086 if `prepare` built it."""
    path = Path(path)
    try:
        with ContextStore.open(path) as store:
            meta = dict(store.meta)
    except DamagedFileError:  # names the file and the fix (copy or build it again)
        raise
    except ValueError as err:
        raise ValueError(Errors.E084.format(path=path, err=str(err).rstrip("."))) from None
    if meta.get("source") != SOURCE:
        raise ValueError(Errors.E086.format(path=path, source=meta.get("source", "prepare")))
    return meta


def check_store_output(path: PathLike, *, add: bool, force: bool = False) -> None:
    """The one output rule for `texts-store`, before any text is read: with `add`, a store of texts that can be
    written; else a new file, or with `force` any file (a store of texts is refused without it, E087: the texts
    added to it may be gone), never a directory (E072), nor a file another wrote without `force` (E071)."""
    target = Path(path)
    if add:
        store_settings(target)
        check_writable(target, command=COMMAND)
        return
    if not force and target.is_file() and output_mark(target) == FORMAT_NAME:
        try:
            store_settings(target)
        except ValueError:
            pass  # a store `prepare` wrote, or a damaged one: refused below by its mark
        else:
            raise ValueError(Errors.E087.format(target=str(target)))
    check_output_file(target, command=COMMAND, force=force)


def _checked_setting(path: Path, name: str, stored: Any, asked: Any, shown: Callable[[Any], str] = str) -> Any:
    if asked is not None and asked != stored:
        raise ValueError(Errors.E085.format(path=path, setting=name, stored=shown(stored), asked=shown(asked)))
    return stored


def _casing(lowercase: bool) -> str:
    return "lowercased" if lowercase else "cased (--cased)"


# -- adding texts ----------------------------------------------------------------------------------


class _Adder:
    """One add: the words the new texts hold, each resumed from the store (its count, its stored contexts'
    digests) the first time a text holds it, sampled with `_GrowingReservoirs` and written back at the end."""

    def __init__(
        self, conn: sqlite3.Connection, cap: int, window: int, lowercase: bool, seed: int, parts: bool = True
    ) -> None:
        self.conn = conn
        self.cap = cap
        self.window = window
        self.lowercase = lowercase
        self.parts = parts
        self.sample = _GrowingReservoirs(conn, seed, batch_size=20_000)
        self.index: Dict[str, int] = {}  # word -> its index in `sample`
        self.words: List[str] = []
        self.next_id = conn.execute("SELECT COALESCE(MAX(id), -1) + 1 FROM words").fetchone()[0]
        self.new_words = 0
        self.tokens = 0
        self.texts = 0

    def _take(self, word: str) -> int:
        row = self.conn.execute("SELECT id, count, n_contexts FROM words WHERE word = ?", (word,)).fetchone()
        if row is None:
            word_id, seen, digests = self.next_id, 0, []
            self.next_id += 1
            self.new_words += 1
        else:
            word_id, seen, _ = row
            texts = self.conn.execute("SELECT text FROM contexts WHERE word_id = ? ORDER BY slot", (word_id,))
            digests = [context_digest(text) for (text,) in texts]
        k = self.sample.add_word(word_id, max(self.cap, len(digests)), seen, digests)
        self.index[word] = k
        self.words.append(word)
        return k

    def add(self, text: str) -> None:
        if not text.strip():
            return  # a blank text is no text: it counts nowhere
        spans = tokenize_spans(text, self.lowercase)
        index, sample, window = self.index, self.sample, self.window
        for i, span in enumerate(spans):
            # The word, then the parts of a hyphen-joined one, each an occurrence in the word's context.
            for occurrence in [span, *hyphen_parts(span)] if self.parts else [span]:
                k = index.get(occurrence[0])
                if k is None:
                    k = self._take(occurrence[0])
                sample.offer(k, text, spans, i, window, occurrence)
                self.tokens += 1
        self.texts += 1

    def finish(self) -> None:
        """The sampled contexts, then each word's count and number of contexts (words and contexts agree)."""
        self.sample.flush()
        sample = self.sample
        rows = ((sample.word_ids[k], word, sample.seen[k], sample.stored[k]) for k, word in enumerate(self.words))
        self.conn.executemany(
            "INSERT INTO words (id, word, count, n_contexts) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET count = excluded.count, n_contexts = excluded.n_contexts",
            rows,
        )


def add_texts(
    store_path: PathLike,
    texts: Iterable[str],
    *,
    max_contexts: Optional[int] = None,
    window: Optional[int] = None,
    lowercase: Optional[bool] = None,
    seed: int = 0,
    progress: bool = True,
    replace: bool = False,
    force: bool = False,
) -> Dict[str, Any]:
    """Add `texts` to the store at `store_path`, creating it if it does not exist; returns what was done.

    Every word of the texts is counted and stored, rare ones included, with a uniform sample of at most
    `max_contexts` distinct contexts (`window` words each side) over all its occurrences in every add so far;
    so is each part of a hyphen-joined word (in a store built before the parts were, an add keeps to words).
    Unset settings are the store's own (a new store: 16, `DEFAULT_WINDOW`, lowercased as `prepare` is); a
    value that differs from an existing store's is error E085. Contexts are distinct by text, so adding the
    same texts twice stores no context twice, but it does count their words twice: counts are occurrences
    added, not distinct texts. `replace`: a new store from these texts alone, in place of the file, which the
    output rule (`check_store_output`) lets it replace only where it is no file yet, or with `force`. An
    existing store that is not one of texts is E084/E086.
    """
    path = Path(store_path)
    check_store_output(path, add=path.exists() and not replace, force=force)
    started = time.perf_counter()
    existing = path.exists() and not replace
    meta: Dict[str, str] = store_settings(path) if existing else {}
    # A hyphen-joined word's parts are words of a new store; one built before keeps its own rule (none).
    parts = not existing or meta.get(PARTS_KEY) == HYPHEN_PARTS
    if existing:
        cap = _checked_setting(path, "max_contexts (--max-contexts)", int(meta["max_contexts"]), max_contexts)
        window = _checked_setting(path, "window (--context-words)", int(meta["window"]), window)
        lowercase = _checked_setting(path, "casing", meta["lowercase"] == "1", lowercase, _casing)
    else:
        cap = DEFAULT_TEXT_MAX_CONTEXTS if max_contexts is None else max_contexts
        window = DEFAULT_WINDOW if window is None else window
        lowercase = True if lowercase is None else lowercase
    if cap < 1:
        raise ValueError(Errors.E246)
    if window < 1:
        raise ValueError(Errors.E248.format(window=window))
    check_count(cap, "max_contexts (--max-contexts)", "contexts")
    check_count(window, "window (--context-words)", "window")
    check_count(seed, "seed (--seed)", "seed")
    before = {key: int(meta.get(key, 0)) for key in ("total_words", "vocab_size", "total_contexts", "texts")}
    # A draw stream of its own per add: the same seed with the store's size so far, so two adds never replay it.
    draws = int.from_bytes(hashlib.blake2b(f"{seed}:{before['total_words']}".encode(), digest_size=8).digest(), "big")
    with atomic_path(path, overwrite=True) as tmp:
        if existing:
            shutil.copyfile(path, tmp)
        conn = sqlite3.connect(str(tmp))
        try:
            conn.execute("PRAGMA journal_mode = OFF")  # a temp copy: a failure discards it whole
            conn.execute("PRAGMA synchronous = OFF")
            conn.execute(f"PRAGMA cache_size = {-64 * 1024}")
            if not existing:
                conn.executescript(SCHEMA)
                conn.execute("CREATE INDEX words_by_count ON words (count)")
            adder = _Adder(conn, cap, window, lowercase, draws, parts)
            for text in progress_bar(texts, progress=progress, desc="Adding texts", unit=" texts"):
                adder.add(text)
            if adder.texts == 0:
                raise ValueError(Errors.E088.format(paths=getattr(texts, "paths", "the texts given")))
            adder.finish()
            total_words, vocab_size, total_contexts, with_contexts = conn.execute(
                "SELECT COALESCE(SUM(count), 0), COUNT(*), COALESCE(SUM(n_contexts), 0), "
                "COALESCE(SUM(n_contexts > 0), 0) FROM words"
            ).fetchone()
            new_meta = {
                **meta,
                "format": FORMAT_NAME,
                "version": FORMAT_VERSION,
                "source": SOURCE,
                "lowercase": int(lowercase),
                "window": window,
                "max_contexts": cap,
                PARTS_KEY: HYPHEN_PARTS if parts else "none",
                "total_words": total_words,
                "vocab_size": vocab_size,
                "words_with_contexts": with_contexts,
                "total_contexts": total_contexts,
                "texts": before["texts"] + adder.texts,
                "adds": int(meta.get("adds", 0)) + 1,
                "seed": meta.get("seed", seed),
            }
            conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", ((k, str(v)) for k, v in new_meta.items()))
            conn.commit()
        finally:
            conn.close()
    return {
        "store": str(path),
        "created": not existing,
        "texts": adder.texts,
        "words": adder.tokens,
        "new_words": adder.new_words,
        "contexts_added": total_contexts - before["total_contexts"],
        "total_texts": before["texts"] + adder.texts,
        "total_words": total_words,
        "vocab_size": vocab_size,
        "total_contexts": total_contexts,
        "seconds": round(time.perf_counter() - started, 2),
    }
