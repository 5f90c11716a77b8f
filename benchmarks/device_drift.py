"""How far a CUDA device's results drift from the CPU's: BERTRAM vectors and pipeline outputs, same weights.

One process: the same network (seeded, or --bertram) infers the same words and
contexts on the CPU and then on CUDA device --gpu-id; then the same MiniLM
pipeline (bertram + the injecting transformer, slash) runs the same texts on
the CPU and on the device. Printed: the largest absolute difference, the
largest difference relative to the row's norm and the lowest cosine, for the
BERTRAM vectors and for the transformer's last hidden layer (wordpiece rows).
The pipeline's rare tokens are counted on both devices and must be the same.

    python benchmarks/device_drift.py --gpu-id 0            # 500 words x 8 contexts, 500 texts
    python benchmarks/device_drift.py --gpu-id 0 --quick    # 96 words, 100 texts
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

import numpy
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project's experiments (bertram_experiments/)
from spacy_bertram import create_bertram, load_bertram, save_bertram
from spacy_bertram.project_support import (
    DEFAULT_CONTEXTS_PER_WORD,
    NgramVocab,
    resolve_base_model,
    select_device,
    use_device,
)
from bertram_experiments.assets import default_assets_dir

from infer import collect_items  # benchmarks/infer.py (scripts run from this folder)
from pipeline import MissingTexts, build, load_texts

ROOT = Path(__file__).resolve().parents[1]


def drift(cpu: numpy.ndarray, device: numpy.ndarray) -> Dict[str, float]:
    """Largest absolute and norm-relative difference and lowest cosine, row by row."""
    diff = numpy.abs(cpu - device)
    norms = numpy.linalg.norm(cpu, axis=1)
    both = norms * numpy.linalg.norm(device, axis=1)
    # Padding rows are zero on both devices: they agree (cosine 1), as any equal rows do.
    cosine = numpy.where(both > 0, (cpu * device).sum(axis=1) / numpy.maximum(both, 1e-30), 1.0)
    return {
        "max_abs": float(diff.max()),
        "max_rel": float((diff.max(axis=1) / numpy.maximum(norms, 1e-12)).max()),
        "min_cosine": float(cosine.min()),
        "rows": int(cpu.shape[0]),
    }


def pipeline_outputs(nlp, texts: List[str]) -> Dict[str, numpy.ndarray]:
    """BERTRAM vectors (doc order) and the transformer's last hidden layer rows of all docs, on the CPU."""
    vectors, states, rare = [], [], 0
    for doc in nlp.pipe(texts, batch_size=64):
        rare += len(doc._.bertram)
        vectors.extend(numpy.asarray(doc._.bertram[i]) for i in sorted(doc._.bertram))
        last = doc._.trf_data.tensors[0]  # last_hidden_state: [spans, wordpieces, width]
        states.append(nlp.get_pipe("transformer").model.ops.to_numpy(last).reshape(-1, last.shape[-1]))
    return {
        "vectors": numpy.vstack(vectors) if vectors else numpy.zeros((0, 1)),
        "states": numpy.vstack(states),
        "rare": numpy.asarray([rare]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu-id", type=int, required=True, help="the CUDA device to compare with the CPU")
    parser.add_argument("--quick", action="store_true", help="96 words and 100 texts")
    parser.add_argument("--words", type=int, default=500)
    parser.add_argument("--texts", type=int, default=500)
    parser.add_argument("--contexts", type=int, default=DEFAULT_CONTEXTS_PER_WORD)
    parser.add_argument("--bertram", default=None, help="trained BERTRAM directory (default: seeded, untrained)")
    parser.add_argument("--corpus", type=Path, default=ROOT / "assets" / "corpus")
    parser.add_argument("--assets", type=Path, default=None)
    args = parser.parse_args()
    if args.gpu_id < 0:
        sys.exit("--gpu-id must name a CUDA device (0 for the first): the CPU is the reference it is compared with")
    try:  # before any work: a machine without that device is told at once
        device = select_device(args.gpu_id, thinc=False)
    except ValueError as err:
        sys.exit(str(err))
    n_words, n_texts = (96, 100) if args.quick else (args.words, args.texts)
    assets = args.assets or default_assets_dir()
    if not assets.is_absolute() and not assets.exists():
        assets = ROOT / assets

    items = collect_items(args.corpus, n_words, args.contexts)
    if args.bertram:
        network = load_bertram(args.bertram)
    else:
        torch.manual_seed(0)
        network = create_bertram("default", NgramVocab.from_words([w for w, _ in items], min_count=2))
    on_cpu = network.infer(items)
    on_device = network.to(device).infer(items)
    result = {"vectors": drift(on_cpu, on_device), "device": torch.cuda.get_device_name(device)}
    print(f"BERTRAM vectors, {len(items)} words x {args.contexts} contexts: {result['vectors']}")

    try:
        texts = load_texts(assets, "short", n_texts)
    except MissingTexts as err:
        sys.exit(str(err))
    encoder = resolve_base_model("default")
    with tempfile.TemporaryDirectory() as tmp:
        bertram = args.bertram or str(Path(tmp) / "bertram")
        if not args.bertram:
            save_bertram(network.to("cpu"), bertram)
        cpu_outputs = pipeline_outputs(build(encoder, bertram, "default", "doc", None, "slash"), texts)
        use_device(args.gpu_id)
        device_outputs = pipeline_outputs(build(encoder, bertram, "default", "doc", None, "slash"), texts)
    if int(cpu_outputs["rare"][0]) != int(device_outputs["rare"][0]):
        sys.exit(f"The rare tokens differ: {cpu_outputs['rare'][0]} on the CPU, {device_outputs['rare'][0]} on CUDA")
    result["pipeline_vectors"] = drift(cpu_outputs["vectors"], device_outputs["vectors"])
    result["pipeline_states"] = drift(cpu_outputs["states"], device_outputs["states"])
    result["rare_tokens"] = int(cpu_outputs["rare"][0])
    print(
        f"pipeline, {len(texts)} texts, {result['rare_tokens']} rare tokens: bertram vectors "
        f"{result['pipeline_vectors']}; transformer last layer {result['pipeline_states']}"
    )
    print(json.dumps({"benchmark": "device_drift", **result, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
