"""BERTRAM training stages (the paper's three for add/shallow/replace, one for inplace), with checkpoints.

1. context: mode "context" (the SHALLOW path without form), trains the
   attentive-mimicking layer and the projection A, b;
2. form: mode "form", trains the n-gram embeddings (and the subword-mean gate);
3. combined: the chosen mode from 1 and 2; for ADD the form part stays frozen,
   so only the context group trains, while SHALLOW/REPLACE train everything.

The "inplace" mode has one stage: the word is spelled in its contexts with
its rare-like pieces and the frozen encoder's states over them are fixed, so
only attentive mimicking and the projection train (on cached states).

Every stage uses Adam with a linear warm-up (10% of its steps) and linear
decay, draws 4..32 contexts per word per step from the word's pool, seeds its
own RNGs (so it depends only on its start weights and the seed), writes a
checkpoint after every epoch and resumes from it bit for bit. Where encoder
states depend on no trained parameter (stage 1; stage 3 for ADD and SHALLOW)
they are computed once (state_cache.py) and reused every epoch.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy
import torch
from torch import Tensor

from ..model.config import MODE_TRAITS, ContextRows, Mode, ModeTraits
from ..errors import Errors
from ..fileio import remove_written, write_json_atomic
from ..model.inputs import InputBuilder, NgramVocab
from ..model.network import BertramNetwork, pad_ids
from ..model.storage import write_model_dir
from .checkpoint import CHECKPOINT_ENTRIES, load_checkpoint, load_weights, save_checkpoint, saved_epoch
from .ota import neighbour_ids
from .pools import ContextPools
from .progress import progress_bar
from .state_cache import StateCache, describe, encode_unpadded
from .settings import CHECKPOINTS_DIR, TrainSettings
from .targets import TargetSet
from .validation import Validator

EpochHook = Callable[[str, int], None]


@dataclass(frozen=True)
class StageSpec:
    index: int
    mode: Mode
    groups: Tuple[str, ...]
    epochs: int
    lr: float
    batch_words: int
    use_subword_mean: bool

    @property
    def name(self) -> str:
        return f"stage{self.index}-{self.mode}"

    @property
    def trains_form(self) -> bool:
        return "form" in self.groups

    @property
    def traits(self) -> ModeTraits:
        return MODE_TRAITS[self.mode]

    @property
    def states_fixed(self) -> bool:
        """Encoder states depend on no trained parameter (so they can be cached): no form vector in
        the rows, or ADD's prefix slot while the form is not trained."""
        return not self.traits.fills_slot or (self.traits.prefix_slot and not self.trains_form)


def plan_stages(settings: TrainSettings, use_subword_mean: Optional[bool] = None) -> List[StageSpec]:
    mode = settings.network.mode
    traits = MODE_TRAITS[mode]
    sub = settings.network.use_subword_mean if use_subword_mean is None else use_subword_mean
    e, lr, b = settings.epochs, settings.lr, settings.batch_words
    if traits.one_stage:
        return [StageSpec(1, mode, ("context",), e[0], lr[0], b[0], sub)]
    stages = [
        StageSpec(1, "context", ("context",), e[0], lr[0], b[0], sub),
        StageSpec(2, "form", ("form",), e[1], lr[1], b[1], sub),
    ]
    if traits.combined_groups:
        stages.append(StageSpec(3, mode, traits.combined_groups, e[2], lr[2], b[2], sub))
    return stages


def lr_factor(step: int, total: int, warmup: float) -> float:
    """Linear warm-up over the first `warmup` fraction of steps, then linear decay to 0."""
    warm = max(1, int(round(warmup * total))) if warmup > 0 else 0
    if step < warm:
        return (step + 1) / warm
    return max(0.0, (total - step) / max(1, total - warm))


def group_keys(network: BertramNetwork, groups: Sequence[str]) -> List[str]:
    names = {id(p): n for n, p in network.named_parameters()}
    table = network.parameter_groups()
    return [names[id(p)] for g in groups for p in table[g]]


@dataclass
class StageResult:
    spec: StageSpec
    network: BertramNetwork
    metrics: Dict[str, Any] = field(default_factory=dict)


class TrainingRun:
    """Shared data for all stages of one run: targets, pools, caches, validation."""

    def __init__(
        self,
        targets: TargetSet,
        contexts: Sequence[Sequence[str]],
        encoder,
        tokenizer,
        settings: TrainSettings,
        output_dir: Optional[Path] = None,
        device: Optional[torch.device] = None,
        progress: bool = True,
        on_epoch_end: Optional[EpochHook] = None,
        log: Callable[[str], None] = print,
        client: Any = None,
    ) -> None:
        self.targets, self.settings = targets, settings
        self.client = client  # a Dask client: the state cache is encoded on its workers
        self.encoder, self.tokenizer = encoder, tokenizer
        self.output_dir = Path(output_dir) if output_dir is not None else None
        self.device = device or torch.device("cpu")
        self.progress, self.on_epoch_end, self.log = progress, on_epoch_end, log
        self.contexts = [list(c) for c in contexts]
        targets.check_width(int(encoder.get_input_embeddings().weight.shape[1]))
        self.train_ids = targets.indices(held_out=False)
        lowercase = InputBuilder(tokenizer, "form", 16).normalize("A") == "a"
        train_words = [targets.words[i] for i in self.train_ids]
        self.ngrams = NgramVocab.from_words(
            train_words, min_count=settings.ngram_min_count, lowercase=lowercase, style=settings.ngram_style
        )
        # Id tables and targets go to the device once, not every step.
        self.ngram_ids = pad_ids([self.ngrams.encode(w) for w in targets.words], self.ngrams.pad_id).to(self.device)
        self.subword_ids = pad_ids(targets.rare_like, -1).to(self.device)
        self.vectors = targets.vectors.float().to(self.device)
        self.ranking = (
            RankingTerm.build(encoder, tokenizer, self.vectors, settings) if settings.rank_weight > 0 else None
        )
        self._pools: Dict[Optional[ContextRows], ContextPools] = {}
        self.validator: Optional[Validator] = None
        self.progress_file = self.output_dir / "progress.json" if self.output_dir else None
        self.record: Dict[str, Any] = {"settings": settings.to_dict(), "stages": {}}
        if self.progress_file is not None and self.progress_file.is_file():
            self.record = json.loads(self.progress_file.read_text(encoding="utf8"))

    # -- building blocks ----------------------------------------------------------

    def network(self, mode: Mode, use_subword_mean: bool, seed_offset: int) -> BertramNetwork:
        """The network of one stage: the settings' network in the stage's mode and form variant
        (the paper's modes read the last layer: `read_layer` is the inplace mode's)."""
        torch.manual_seed(self.settings.seed * 1000 + seed_offset)
        network_settings = self.settings.network
        config = replace(
            network_settings,
            mode=mode,
            use_subword_mean=use_subword_mean,
            read_layer=network_settings.read_layer if MODE_TRAITS[mode].one_stage else -1,
        )
        network = BertramNetwork(config, self.ngrams, self.encoder, self.tokenizer).to(self.device)
        if self.validator is None:
            self.validator = Validator(network, self.targets, self.contexts)
        return network

    def pools(self, network: BertramNetwork) -> ContextPools:
        key = network.config.traits.rows  # rows differ in prefix / slot / spelling
        if key not in self._pools:
            held = set(self.targets.indices(held_out=True))
            contexts = [[] if i in held else c for i, c in enumerate(self.contexts)]  # never train on held-out
            spelled_rows = network.config.traits.spelled
            spelled = self.targets.rare_like if spelled_rows else None
            masked = self.settings.inplace_mask_fraction if spelled_rows else 0.0
            pools = ContextPools.build(
                network.inputs,
                self.targets.words,
                contexts,
                self.settings.pool_contexts,
                spelled,
                masked,
                self.settings.seed,
            )
            self._pools[key] = pools
        return self._pools[key]

    def context_word_ids(self, network: BertramNetwork) -> List[int]:
        sizes = self.pools(network).sizes()
        return [i for i in self.train_ids if sizes[i] > 0]

    def _cache(self, network: BertramNetwork, spec: StageSpec) -> Optional[StateCache]:
        if not (spec.traits.reads_contexts and spec.states_fixed and self.settings.reuse_states):
            return None
        slots = None
        if spec.traits.prefix_slot:
            with torch.no_grad():
                network.eval()
                slots = network.form_vectors(self.ngram_ids, self.subword_ids)
        directory = self.output_dir / "cache" if self.output_dir else None
        return StateCache.build(
            network,
            self.pools(network).rows,
            slots,
            directory,
            self.settings.cache_memory_mb,
            self.settings.token_budget,
            self.progress,
            self.client,
        )

    def _loss(
        self,
        network: BertramNetwork,
        spec: StageSpec,
        batch: numpy.ndarray,
        rng: numpy.random.Generator,
        cache: Optional[StateCache],
        progress: float,
    ) -> Tensor:
        """The loss of one step, `progress` (0 to 1) of the way through its stage."""
        index = torch.from_numpy(batch).to(self.device)  # one small copy per step
        ngram_ids, subword_ids = self.ngram_ids[index], self.subword_ids[index]
        if not spec.traits.reads_contexts:
            return self._objective(network.form_vectors(ngram_ids, subword_ids), index, rng)
        pools = self.pools(network)
        s = self.settings
        path_mix = s.path_mix_at(progress) if spec.traits.spelled else None
        row_ids, local = pools.sample(batch.tolist(), rng, s.min_contexts, s.network.max_contexts, path_mix)
        with torch.set_grad_enabled(spec.trains_form):
            v_form = network.form_vectors(ngram_ids, subword_ids)
        if cache is not None:
            states = cache.get(row_ids)
        else:
            slots = v_form if spec.traits.fills_slot else None
            with torch.set_grad_enabled(slots is not None and spec.trains_form):
                states = encode_unpadded(network, pools.rows_for(row_ids, local), slots, s.token_budget)
        vectors, _ = network.combine(states, local, v_form)
        return self._objective(vectors, index, rng)

    def _objective(self, vectors: Tensor, index: Tensor, rng: numpy.random.Generator) -> Tensor:
        """Mimicking (mean squared error to the targets), plus the ranking term where it is asked for."""
        loss = torch.nn.functional.mse_loss(vectors, self.vectors[index])
        if self.ranking is None:
            return loss
        return loss + self.settings.rank_weight * self.ranking.loss(vectors, index, rng)

    # -- one stage ----------------------------------------------------------------

    def _directory(self, name: str) -> Optional[Path]:
        return self.output_dir / name if self.output_dir else None

    def _finished(self, name: str) -> bool:
        """A stage an earlier run with these settings finished and saved: it is loaded, not trained."""
        done = self._directory(name)
        return done is not None and name in self.record["stages"] and done.is_dir()

    def resumed(self) -> List[str]:
        """What this run takes over from a killed one with its settings, for the one line `train` logs:
        the finished stages it loads, and each stage it continues from its checkpoint (none: a fresh start)."""
        if self.output_dir is None:
            return []
        finished = [name for name in self.record["stages"] if self._finished(name)]
        parts = [f"finished stages loaded: {', '.join(finished)}"] if finished else []
        checkpoints = self.output_dir / CHECKPOINTS_DIR
        for path in sorted(checkpoints.iterdir()) if checkpoints.is_dir() else []:
            epoch = saved_epoch(path)
            if epoch is not None:
                parts.append(f"{path.name} from epoch {epoch + 1} (its checkpoint after epoch {epoch})")
        return parts

    def stage(
        self, spec: StageSpec, init: Optional[Dict[str, Tensor]] = None, prefix: str = "", validate: bool = True
    ) -> StageResult:
        """Train one stage (or load it if a previous run finished it), then validate it."""
        name = prefix + spec.name
        network = self.network(spec.mode, spec.use_subword_mean, spec.index)
        if init is not None:
            network.load_state_dict(init, strict=False)
        done = self._directory(name)
        if self._finished(name):
            load_weights(network, done)
            return StageResult(spec, network, self.record["stages"][name])
        metrics = self._train(network, spec, name)
        if not validate:
            return StageResult(spec, network, metrics)
        assert self.validator is not None
        metrics["validation"] = self.validator.evaluate(network)
        self.log(
            f"{name}: held-out cosine {metrics['validation']['cosine']:.4f} MRR {metrics['validation']['mrr']:.4f}"
            f"  (subword-mean baseline cosine {self.baseline()['cosine']:.4f} MRR {self.baseline()['mrr']:.4f})"
        )
        if done is not None:
            write_model_dir(network, done)  # checked with train's output (settings.check_train_output)
            self.record["stages"][name] = metrics
            write_json_atomic(self.progress_file, self.record, overwrite=True)
            remove_written(self.output_dir / CHECKPOINTS_DIR / name, CHECKPOINT_ENTRIES)
        return StageResult(spec, network, metrics)

    def baseline(self) -> Dict[str, float]:
        assert self.validator is not None
        return self.validator.baseline()

    def _train(
        self,
        network: BertramNetwork,
        spec: StageSpec,
        name: str,
        words: Optional[List[int]] = None,
        checkpoints: bool = True,
    ) -> Dict[str, Any]:
        s = self.settings
        trainable = {id(p) for g in spec.groups for p in network.parameter_groups()[g]}
        params = [p for p in network.parameters() if id(p) in trainable]
        for p in network.parameters():
            p.requires_grad_(id(p) in trainable)
        optimizer = torch.optim.Adam(params, lr=spec.lr)
        if words is None:
            words = self.context_word_ids(network) if spec.traits.reads_contexts else list(self.train_ids)
        if not words:
            raise ValueError(Errors.E241.format(name=name))
        steps_per_epoch = math.ceil(len(words) / spec.batch_words)
        total = steps_per_epoch * spec.epochs
        checkpoint = self.output_dir / "checkpoints" / name if self.output_dir and checkpoints else None
        history: List[Dict[str, float]] = []
        first_epoch = 0
        started = time.perf_counter()
        cache = self._cache(network, spec)
        cache_seconds = time.perf_counter() - started
        rng = numpy.random.default_rng([s.seed, spec.index])
        torch.manual_seed(s.seed * 1000 + 100 + spec.index)
        if checkpoint is not None and checkpoint.is_dir():
            info = load_checkpoint(checkpoint, network, optimizer, rng)
            first_epoch, history = int(info["epoch"]), list(info["history"])  # `resumed` said so
        for epoch in range(first_epoch, spec.epochs):
            tick = time.perf_counter()
            network.train()
            if not spec.trains_form:
                network.ngram_form.eval()  # frozen form: no dropout, fixed slot vectors
            order = rng.permutation(numpy.asarray(words, dtype=numpy.int64))
            losses: List[Tensor] = []  # on the device: no host sync per step
            bar = progress_bar(
                progress=self.progress,
                total=steps_per_epoch,
                desc=f"{name} epoch {epoch + 1}/{spec.epochs}",
                leave=False,
            )
            for step in range(steps_per_epoch):
                global_step = epoch * steps_per_epoch + step
                factor = lr_factor(global_step, total, s.warmup)
                for group in optimizer.param_groups:
                    group["lr"] = spec.lr * factor
                batch = order[step * spec.batch_words : (step + 1) * spec.batch_words]
                loss = self._loss(network, spec, batch, rng, cache, global_step / max(total, 1))
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                losses.append(loss.detach())
                bar.update(1)
                if not bar.disable and (step + 1) % 50 == 0:  # the running mean costs a sync: now and then
                    bar.set_postfix(loss=f"{float(torch.stack(losses).double().mean()):.6f}")
            bar.close()
            epoch_losses = torch.stack(losses).tolist()  # one sync per epoch; summed as before
            seconds = time.perf_counter() - tick
            history.append({"epoch": epoch + 1, "loss": sum(epoch_losses) / len(epoch_losses), "seconds": seconds})
            if not checkpoints:
                continue
            self.log(f"{name} epoch {epoch + 1}/{spec.epochs}: loss {history[-1]['loss']:.6f} ({seconds:.1f}s)")
            if checkpoint is not None:
                save_checkpoint(checkpoint, network, optimizer, rng, {"epoch": epoch + 1, "history": history})
            if self.on_epoch_end is not None:
                self.on_epoch_end(name, epoch + 1)
        for p in network.parameters():
            p.requires_grad_(False)
        return {
            "epochs": history,
            "words": len(words),
            "trained_groups": list(spec.groups),
            "cache": ({**describe(cache), "seconds": cache_seconds} if cache is not None else None),
        }


#: Random whole-word negatives per step of the ranking term, beside each word's nearest ones.
RANDOM_NEGATIVES = 1024


class RankingTerm:
    """Puts each word's target first among whole-word embeddings: a softmax over cosines against
    the target's nearest whole words (the neighbours hits@10 is decided by) and random ones.

    Mimicking alone pulls a vector toward its target on average, which raises the cosine but hardly
    the rank; this term asks for the target to be nearer than its neighbours."""

    def __init__(self, vocabulary: Tensor, unit_targets: Tensor, nearest: Tensor, temperature: float) -> None:
        self.vocabulary, self.unit_targets, self.nearest = vocabulary, unit_targets, nearest
        self.temperature = temperature

    @classmethod
    def build(cls, encoder, tokenizer, targets: Tensor, settings: "TrainSettings", block: int = 1024) -> "RankingTerm":
        table = encoder.get_input_embeddings().weight.detach().float()
        ids = neighbour_ids(tokenizer).to(table.device)
        vocabulary = torch.nn.functional.normalize(table[ids], dim=-1).to(targets.device)
        unit_targets = torch.nn.functional.normalize(targets, dim=-1)
        k = min(settings.rank_negatives + 1, vocabulary.shape[0])  # + the target's own row, masked in `loss`
        nearest = torch.cat(
            [
                (unit_targets[i : i + block] @ vocabulary.T).topk(k, dim=1).indices
                for i in range(0, len(unit_targets), block)
            ]
        )
        return cls(vocabulary, unit_targets, nearest, settings.rank_temperature)

    def loss(self, vectors: Tensor, index: Tensor, rng: numpy.random.Generator) -> Tensor:
        random = torch.from_numpy(rng.integers(self.vocabulary.shape[0], size=RANDOM_NEGATIVES))
        candidates = torch.unique(torch.cat([self.nearest[index].flatten(), random.to(self.nearest.device)]))
        negatives = self.vocabulary[candidates]
        predicted = torch.nn.functional.normalize(vectors, dim=-1)
        targets = self.unit_targets[index]
        positive = (predicted * targets).sum(dim=-1, keepdim=True)
        # A one-piece word's own row is its target: not a negative.
        against = (predicted @ negatives.T).masked_fill(targets @ negatives.T > 0.999, float("-inf"))
        logits = torch.cat([positive, against], dim=1) / self.temperature
        first = torch.zeros(len(index), dtype=torch.long, device=logits.device)  # the target is column 0
        return torch.nn.functional.cross_entropy(logits, first)


def combined_init(stage1: StageResult, stage2: StageResult) -> Dict[str, Tensor]:
    """Stage 3 starts from stage 1's context part and stage 2's form part."""
    state = dict(stage1.network.bertram_state_dict())
    form = stage2.network.bertram_state_dict()
    for key in group_keys(stage2.network, ("form",)):
        state[key] = form[key]
    return state
