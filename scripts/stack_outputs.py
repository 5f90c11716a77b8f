"""The same work on two library stacks, compared (docs/packaging.md#the-stacks-it-runs-on).

Run `write` in each stack's venv, then `compare` in either:

    VENV_A/bin/python scripts/stack_outputs.py write OUT_A --model training/bertram/model
    VENV_B/bin/python scripts/stack_outputs.py write OUT_B --model training/bertram/model
    VENV_B/bin/python scripts/stack_outputs.py compare OUT_A OUT_B

`write` runs the README's Python block (`load_bertram(...).infer`, a blank pipeline with `bertram` and an
injecting transformer) and one `spacy train` of configs/textcat_minilm_bertram.cfg (a few steps on a
few labelled texts, seed 0), and saves the arrays they give, the trained pipeline and the versions.
`compare` prints the largest difference per array, then loads the other stack's trained pipeline in
this one and compares its predictions: a pipeline moves between the stacks, or is refused with the
coded error that names both. It ends with one JSON line of the figures.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Dict

import numpy

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "configs" / "textcat_minilm_bertram.cfg"
PACKAGES = ("torch", "spacy", "spacy-transformers", "thinc", "transformers", "tokenizers")
TEXTS = [
    "The kumquat harvest was poor this year.",
    "A quokka smiled at the tourists near the ferry.",
    "Shares fell after the merger talks collapsed.",
    "The striker scored twice in the second half.",
]
LABELED = [
    ("The minister announced a new budget for schools.", "POLITICS"),
    ("Parliament voted on the tax reform late on Tuesday.", "POLITICS"),
    ("The senator resigned after the inquiry into kickbacks.", "POLITICS"),
    ("Voters queued for hours at the polling stations.", "POLITICS"),
    ("The goalkeeper saved a penalty in the final minute.", "SPORT"),
    ("She won the marathon in record time despite the heat.", "SPORT"),
    ("The team's quarterback threw three touchdowns.", "SPORT"),
    ("A late equaliser kept the champions unbeaten.", "SPORT"),
]


def write(out: Path, model: str, steps: int) -> None:
    import spacy
    from spacy.tokens import DocBin

    from spacy_bertram import load_bertram

    if out.exists():
        raise SystemExit(f"error: {out} exists: give a new directory (the outputs of one run go in one)")
    out.mkdir(parents=True)
    arrays: Dict[str, numpy.ndarray] = {}
    bertram = load_bertram(model)
    arrays["infer"] = numpy.asarray(bertram.infer([("kumquat", ["She peeled a kumquat and ate it whole."])]))
    nlp = spacy.blank("en")
    nlp.add_pipe("bertram", config={"model": {"model_path": model}})
    transformer = {"@architectures": "spacy-bertram.TransformerModel.v1", "name": "default", "injection": "recentre"}
    nlp.add_pipe("transformer", config={"model": transformer})
    nlp.initialize()
    for i, doc in enumerate(nlp.pipe(TEXTS)):
        for token_i, vector in sorted((doc._.bertram or {}).items()):
            arrays[f"doc{i}_vector{token_i}"] = numpy.asarray(vector)
        arrays[f"doc{i}_tensor"] = numpy.asarray(doc._.trf_data.tensors[0])
    blank = spacy.blank("en")
    labels = sorted({label for _, label in LABELED})
    bin_ = DocBin()
    for text, label in LABELED:
        doc = blank.make_doc(text)
        doc.cats = {name: float(name == label) for name in labels}
        bin_.add(doc)
    bin_.to_disk(out / "train.spacy")
    overrides = [
        f"--paths.train={out / 'train.spacy'}",
        f"--paths.dev={out / 'train.spacy'}",
        f"--paths.bertram={model}",
        f"--training.max_steps={steps}",
        f"--training.eval_frequency={steps}",
    ]
    command = [sys.executable, "-m", "spacy", "train", str(CONFIG), "--output", str(out / "train"), *overrides]
    subprocess.run(command, check=True, capture_output=True, text=True)
    trained = spacy.load(out / "train" / "model-last")
    for i, doc in enumerate(trained.pipe(TEXTS)):
        arrays[f"trained_doc{i}_cats"] = numpy.array([doc.cats[name] for name in labels])
        for token_i, vector in sorted((doc._.bertram or {}).items()):
            arrays[f"trained_doc{i}_vector{token_i}"] = numpy.asarray(vector)
    numpy.savez(out / "outputs.npz", **arrays)
    (out / "versions.json").write_text(json.dumps({name: version(name) for name in PACKAGES}, indent=2) + "\n")
    print(f"wrote {len(arrays)} arrays to {out / 'outputs.npz'}")


def compare(first: Path, second: Path) -> None:
    import spacy

    a, b = numpy.load(first / "outputs.npz"), numpy.load(second / "outputs.npz")
    if sorted(a.files) != sorted(b.files):
        raise SystemExit(f"the runs wrote different arrays: {sorted(set(a.files) ^ set(b.files))}")
    versions = {str(path): json.loads((path / "versions.json").read_text()) for path in (first, second)}
    print(json.dumps(versions, indent=2))
    diffs = {name: float(numpy.abs(a[name] - b[name]).max(initial=0.0)) for name in sorted(a.files)}
    groups: Dict[str, float] = {}
    for name, diff in diffs.items():
        group = (
            "trained cats"
            if name.endswith("_cats")
            else "vectors"
            if "vector" in name or name == "infer"
            else "tensors"
        )
        groups[group] = max(groups.get(group, 0.0), diff)
    for group, diff in groups.items():
        print(f"{group}: largest difference {diff:.2e}")
    here = version("spacy-transformers")
    results = {"max_diff": groups}
    for path, other in ((first, a), (second, b)):
        try:
            loaded = spacy.load(path / "train" / "model-last")
        except ValueError as err:
            print(f"{path}'s trained pipeline on spacy-transformers {here}: refused: {str(err)[:300]}")
            results[f"load {path.name}"] = "refused: " + str(err).split("]")[0].split("[")[-1]
            continue
        labels = sorted(loaded.get_pipe("textcat").labels)
        cats = numpy.array([[doc.cats[name] for name in labels] for doc in loaded.pipe(TEXTS)])
        saved = numpy.array([other[f"trained_doc{i}_cats"] for i in range(len(TEXTS))])
        diff = float(numpy.abs(cats - saved).max())
        print(f"{path}'s trained pipeline on spacy-transformers {here}: loads, cats differ by {diff:.2e}")
        results[f"load {path.name}"] = diff
    print(json.dumps(results))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    writer = commands.add_parser("write", help="run the work in this stack and save what it gives")
    writer.add_argument("out", type=Path, help="a new directory for the outputs")
    writer.add_argument("--model", required=True, help="a trained BERTRAM model directory (for the default MiniLM)")
    writer.add_argument("--steps", type=int, default=20, help="spacy train's max_steps (default 20)")
    comparer = commands.add_parser("compare", help="the two stacks' outputs side by side, and each pipeline here")
    comparer.add_argument("first", type=Path)
    comparer.add_argument("second", type=Path)
    args = parser.parse_args()
    if args.command == "write":
        write(args.out, args.model, args.steps)
    else:
        compare(args.first, args.second)


if __name__ == "__main__":
    main()
