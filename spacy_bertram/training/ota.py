"""One-token approximation (OTA, Schick & Schuetze AAAI 2020) for multi-wordpiece words.

A frequent word that the tokenizer splits into several wordpieces has no
input-embedding row to mimic. OTA finds one vector e such that the frozen
encoder, reading `[CLS] left e right [SEP]`, produces (in every layer) the
same hidden states at the neighbour positions as it does for
`[CLS] left p1..pm right [SEP]`. Neighbours are random whole-word tokens,
redrawn every step, so e fits the word rather than one context.

Many words are optimised at once: each word's vector only affects its own
rows and the loss is a sum over words, so the batch is just parallelism. Each
chunk of words draws its own neighbours (`chunk_seed`), so chunks can also run
as Dask tasks (`ota_on_dask`, each worker loading the encoder once) and give the
vectors of one process.
"""

from __future__ import annotations

from dataclasses import dataclass
import json
import uuid
from typing import Any, List, Optional, Sequence, Tuple

import numpy

import torch
from torch import Tensor

from ..model.encoder import load_encoder, word_start_tokens
from ..errors import Errors
from .distributed import local_threads, run_tasks
from .progress import progress_bar
from .settings import OTASettings
from .worker_objects import once_per_process


@dataclass
class OTAResult:
    vectors: Tensor  # [n_words, width], float32, CPU
    loss_before: float  # mean per-word loss of the initial (subword-mean) vectors
    loss_after: float  # the same, for the optimised vectors (same neighbour draws)


def neighbour_ids(tokenizer) -> Tensor:
    """Alphabetic whole-word tokens (`word_start_tokens`): plausible left/right neighbours of a word."""
    ids = [index for index, word in word_start_tokens(tokenizer).items() if word.isalpha()]
    if not ids:
        raise ValueError(Errors.E224)
    return torch.as_tensor(sorted(ids), dtype=torch.long)


class OneTokenApproximation:
    """Batched OTA against one frozen encoder."""

    def __init__(self, encoder, tokenizer, settings: OTASettings, device: Optional[torch.device] = None) -> None:
        self.encoder = encoder
        self.settings = settings
        self.device = device or encoder.get_input_embeddings().weight.device
        self.table = encoder.get_input_embeddings().weight.detach()
        self.neighbours = neighbour_ids(tokenizer)
        cls_id = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
        sep_id = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
        self.cls_id, self.sep_id = int(cls_id), int(sep_id)
        self.pad_id = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0)

    def initial(self, pieces: Sequence[Sequence[int]]) -> Tensor:
        """Mean of each word's subword embeddings: OTA's starting point."""
        return torch.stack([self.table[torch.as_tensor(list(p), device=self.table.device)].mean(0) for p in pieces])

    def _draw(self, n_words: int, generator: torch.Generator) -> Tuple[Tensor, Tensor]:
        k = self.settings.neighbours
        picks = torch.randint(len(self.neighbours), (n_words, 2 * k), generator=generator)
        ids = self.neighbours[picks]
        return ids[:, :k], ids[:, k:]

    def _hidden(self, embeds: Tensor, attention: Tensor) -> Tuple[Tensor, ...]:
        out = self.encoder(inputs_embeds=embeds, attention_mask=attention, output_hidden_states=True)
        return out.hidden_states[1:]  # layer 0 differs by position embeddings only

    @torch.no_grad()
    def _reference(self, pieces: Sequence[Sequence[int]], left: Tensor, right: Tensor) -> List[Tensor]:
        """Hidden states at the neighbour positions around the real wordpieces, per layer."""
        k = left.shape[1]
        rows = [[self.cls_id, *left[i].tolist(), *p, *right[i].tolist(), self.sep_id] for i, p in enumerate(pieces)]
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        positions = torch.zeros((len(rows), 2 * k), dtype=torch.long)
        for i, (row, p) in enumerate(zip(rows, pieces)):
            ids[i, : len(row)] = torch.as_tensor(row)
            attention[i, : len(row)] = 1
            positions[i] = torch.as_tensor([*range(1, k + 1), *range(k + 1 + len(p), 2 * k + 1 + len(p))])
        ids, attention, positions = ids.to(self.device), attention.to(self.device), positions.to(self.device)
        states = self._hidden(self.table[ids], attention)
        index = positions.unsqueeze(-1).expand(-1, -1, states[0].shape[-1])
        return [layer.gather(1, index) for layer in states]

    def _approx_states(self, vectors: Tensor, left: Tensor, right: Tensor) -> List[Tensor]:
        n, k = left.shape
        ids = torch.cat(
            [
                torch.full((n, 1), self.cls_id),
                left,
                torch.full((n, 1), self.pad_id),
                right,
                torch.full((n, 1), self.sep_id),
            ],
            dim=1,
        ).to(self.device)
        embeds = self.table[ids]
        slot = torch.zeros(ids.shape[1], 1, dtype=torch.bool, device=self.device)
        slot[k + 1] = True
        embeds = torch.where(slot, vectors.unsqueeze(1).to(embeds.dtype), embeds)
        states = self._hidden(embeds, torch.ones_like(ids))
        keep = [*range(1, k + 1), *range(k + 2, 2 * k + 2)]
        return [layer[:, keep] for layer in states]

    def _loss(self, vectors: Tensor, reference: List[Tensor], left: Tensor, right: Tensor) -> Tensor:
        """Per-word loss: MSE over neighbour positions and width, summed over layers."""
        approx = self._approx_states(vectors, left, right)
        return sum(((a - r) ** 2).mean(dim=(1, 2)) for a, r in zip(approx, reference))

    @torch.no_grad()
    def evaluate(self, pieces: Sequence[Sequence[int]], vectors: Tensor, seed: int) -> float:
        """Mean per-word loss on fixed neighbour draws (comparable across vectors)."""
        generator = torch.Generator().manual_seed(seed)
        total = 0.0
        for _ in range(self.settings.eval_draws):
            left, right = self._draw(len(pieces), generator)
            reference = self._reference(pieces, left, right)
            total += float(self._loss(vectors.to(self.device), reference, left, right).mean())
        return total / self.settings.eval_draws

    def optimise(self, pieces: Sequence[Sequence[int]], generator: torch.Generator) -> Tensor:
        """Adam on one vector per word, from the subword mean, fresh neighbours each step."""
        vectors = self.initial(pieces).clone().float().to(self.device).requires_grad_(True)
        optimizer = torch.optim.Adam([vectors], lr=self.settings.lr)
        for _ in range(self.settings.steps):
            left, right = self._draw(len(pieces), generator)
            reference = self._reference(pieces, left, right)
            loss = self._loss(vectors, reference, left, right).sum()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        return vectors.detach().float().cpu()


def chunk_seed(seed: int, index: int) -> int:
    """The seed of chunk `index`'s neighbour draws: each chunk draws its own, so chunks can run anywhere, in
    any order (one process, or Dask workers), and give the same vectors."""
    return seed * 1_000_003 + index


def optimise_chunk(
    ota: OneTokenApproximation, chunk: Sequence[Sequence[int]], index: int
) -> Tuple[Tensor, float, float]:
    """One chunk's vectors, and its summed loss before and after (on fixed draws, comparable across chunks)."""
    vectors = ota.optimise(chunk, torch.Generator().manual_seed(chunk_seed(ota.settings.seed, index)))
    before = ota.evaluate(chunk, ota.initial(chunk), ota.settings.seed + 1) * len(chunk)
    after = ota.evaluate(chunk, vectors, ota.settings.seed + 1) * len(chunk)
    return vectors, before, after


def one_token_approximation(
    encoder,
    tokenizer,
    pieces: Sequence[Sequence[int]],
    settings: Optional[OTASettings] = None,
    device: Optional[torch.device] = None,
    progress: bool = True,
    client: Any = None,
    base_model: Optional[str] = None,
) -> OTAResult:
    """One vector per word (given by its wordpiece ids), in the encoder's input space.

    With a Dask `client`, the chunks of `settings.batch_words` words run on its workers (each loads
    `base_model`, which must be the encoder given here, at the same path) and give this process's vectors.
    """
    settings = settings or OTASettings()
    width = int(encoder.get_input_embeddings().weight.shape[1])
    if not pieces:
        return OTAResult(torch.zeros(0, width), 0.0, 0.0)
    assert all(pieces), "OTA needs at least one wordpiece per word (targets.py drops words without)"
    chunks = [list(pieces[i : i + settings.batch_words]) for i in range(0, len(pieces), settings.batch_words)]
    if client is not None:
        results = ota_on_dask(client, base_model, settings, chunks, progress)
    else:
        ota = OneTokenApproximation(encoder, tokenizer, settings, device)
        bar = progress_bar(chunks, progress=progress, desc="one-token approximation", unit="batch")
        results = [optimise_chunk(ota, chunk, index) for index, chunk in enumerate(bar)]
    vectors = torch.cat([chunk_vectors.float().cpu() for chunk_vectors, _, _ in results])
    before = sum(result[1] for result in results) / len(pieces)
    after = sum(result[2] for result in results) / len(pieces)
    return OTAResult(vectors, before, after)


# -- on a Dask cluster ------------------------------------------------------------------------------


def ota_task(
    base_model: str, settings: OTASettings, chunk: List[List[int]], index: int, threads: int
) -> Tuple[numpy.ndarray, float, float]:
    """A Dask task: one chunk's vectors and summed losses (the encoder loaded once per worker process)."""

    def make() -> OneTokenApproximation:
        return OneTokenApproximation(*load_encoder(base_model), settings, torch.device("cpu"))

    ota = once_per_process(("ota", base_model, json.dumps(vars(settings), sort_keys=True)), make, threads)
    vectors, before, after = optimise_chunk(ota, chunk, index)
    return vectors.numpy(), before, after


def ota_on_dask(
    client: Any,
    base_model: Optional[str],
    settings: OTASettings,
    chunks: Sequence[List[List[int]]],
    progress: bool = True,
) -> List[Tuple[Tensor, float, float]]:
    """Every chunk's (vectors, before, after) from the cluster's workers, in chunk order (the encoder named
    `base_model` must be at the same path on every worker)."""
    assert base_model, "OTA on Dask names the encoder its workers load"
    threads, run_id = local_threads(client), uuid.uuid4().hex[:12]
    results: List[Any] = [None] * len(chunks)

    def keep(position: int, result: Tuple[numpy.ndarray, float, float]) -> None:
        results[position] = (torch.from_numpy(result[0]), result[1], result[2])

    run_tasks(
        client,
        ota_task,
        [(base_model, settings, chunk, index, threads) for index, chunk in enumerate(chunks)],
        [f"bertram-ota-{run_id}-{index}" for index in range(len(chunks))],
        keep,
        progress,
    )
    return results
