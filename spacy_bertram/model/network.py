"""The BERTRAM torch module: form, context modes, attentive mimicking, projection.

Only the small BERTRAM parts are trainable; the encoder is frozen and shared.
A forward pass takes a `PreparedBatch` (see `prepare`) so that tokenising,
which needs no gradients, stays outside the autograd graph and can be cached.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

import numpy
import torch
from torch import Tensor, nn

from .config import BertramConfig, check_read_layer
from .encoder import (
    describe_encoder,
    encoder_device,
    encoder_on,
    encoder_up_to,
    int8_encoder,
    layer_count,
    word_start_tokens,
)
from ..errors import Errors, Warnings
from .inputs import (
    CALL_COST_POSITIONS,
    PAD_ID,
    EncodedContext,
    InputBuilder,
    NgramVocab,
    batch_by_token_budget,
    split_items,
    validate_word,
)
from ..types import DEFAULT_TOKEN_BUDGET

if TYPE_CHECKING:
    from ..rarity.frequencies import CountTable

#: Encoder tokens per call per device type: on a 2-core CPU 8192 measured fastest
#: (benchmarks/infer.py --sweep 2048,4096,8192); on an H100 every budget from 4096 to 131072
#: gave the same words/s within the spread between runs, and 16384 keeps the memory peak small.
TOKEN_BUDGETS = {"cpu": 8192, "cuda": 16384}


def input_key(row: EncodedContext) -> Tuple:
    """What the encoder's states for `row` depend on: its ids, and its slot's word (whose vector fills it)."""
    return (row.input_ids, row.slot_position, row.word_index if row.slot_position >= 0 else -1)


def default_token_budget(device: "torch.device | str") -> int:
    """The token budget for encoder calls on `device` (CPU and GPU want different sizes)."""
    return TOKEN_BUDGETS.get(torch.device(device).type, DEFAULT_TOKEN_BUDGET)


@dataclass
class PreparedBatch:
    """Tensors and encoder rows for a batch of words, ready for the network."""

    words: List[str]
    ngram_ids: Tensor  # [n_words, max_ngrams], padded with the n-gram table's pad id
    subword_ids: Tensor  # [n_words, max_pieces], -1 padded
    rows: List[EncodedContext] = field(default_factory=list)
    has_contexts: Optional[Tensor] = None  # [n_words] bool: a row from a context (not the bare pieces)

    def __len__(self) -> int:
        return len(self.words)


def pad_ids(sequences: Sequence[Sequence[int]], pad: int) -> Tensor:
    width = max((len(s) for s in sequences), default=0) or 1
    out = torch.full((len(sequences), width), pad, dtype=torch.long)
    for i, seq in enumerate(sequences):
        if seq:
            out[i, : len(seq)] = torch.as_tensor(list(seq), dtype=torch.long)
    return out


class NgramForm(nn.Module):
    """Mean of learned character n-gram embeddings, with n-gram dropout in training."""

    def __init__(self, n_ngrams: int, width: int, dropout: float, pad_id: int = PAD_ID) -> None:
        super().__init__()
        self.dropout = dropout
        self.pad_id = pad_id
        self.embeddings = nn.Embedding(n_ngrams, width, padding_idx=pad_id)
        nn.init.normal_(self.embeddings.weight, std=0.02)
        with torch.no_grad():
            self.embeddings.weight[pad_id].zero_()

    def forward(self, ngram_ids: Tensor) -> Tensor:
        present = ngram_ids != self.pad_id
        keep = present
        if self.training and self.dropout > 0:
            keep = present & (torch.rand(ngram_ids.shape, device=ngram_ids.device) >= self.dropout)
            # Never drop every n-gram of a word: fall back to all of them.
            keep = torch.where(keep.any(dim=1, keepdim=True), keep, present)
        weights = keep.to(self.embeddings.weight.dtype).unsqueeze(-1)
        summed = (self.embeddings(ngram_ids) * weights).sum(dim=1)
        return summed / weights.sum(dim=1).clamp(min=1.0)


class AttentiveMimicking(nn.Module):
    """Weights each context by its agreement with the other contexts of the word.

    q_i = M h_i + m0, s_ij = q_i . q_j / sqrt(d). `formula` "softmax" (the default): a
    context's score is the sum of s_ij over the word's other contexts, and the weights rho
    are a softmax of the scores over the word's contexts (positive, summing to 1, never
    overflowing). "linear" (the reference implementation's `ReliabilityMeasure`): r_i sums
    s_ij over every context, j = i included, and rho_i = r_i / (sum_k r_k + 1e-12), which
    may be negative or large when the similarities nearly cancel.
    """

    def __init__(self, width: int, formula: str = "softmax") -> None:
        super().__init__()
        self.formula = formula
        self.query = nn.Linear(width, width)
        nn.init.eye_(self.query.weight)
        nn.init.zeros_(self.query.bias)

    def forward(self, states: Tensor, mask: Tensor) -> Tensor:
        """states [words, contexts, width], mask [words, contexts] -> rho [words, contexts]."""
        q = self.query(states)
        scores = q @ q.transpose(1, 2) / math.sqrt(states.shape[-1])
        pair = mask.unsqueeze(1) & mask.unsqueeze(2)
        if self.formula == "linear":
            summed = scores.masked_fill(~pair, 0.0).sum(dim=2)
            return summed / (summed.sum(dim=1, keepdim=True) + 1e-12)
        eye = torch.eye(mask.shape[1], dtype=torch.bool, device=mask.device).unsqueeze(0)
        summed = scores.masked_fill(~pair | eye, 0.0).sum(dim=2)
        summed = summed.masked_fill(~mask, float("-inf"))
        empty = ~mask.any(dim=1, keepdim=True)
        rho = torch.softmax(summed.masked_fill(empty, 0.0), dim=1)
        return rho.masked_fill(~mask, 0.0)


class BertramNetwork(nn.Module):
    """Infers input embeddings for words in the space of a frozen encoder."""

    def __init__(self, config: BertramConfig, ngram_vocab: NgramVocab, encoder, tokenizer) -> None:
        """`config` stays the caller's: the network keeps a copy that records the encoder's widths."""
        super().__init__()
        info = describe_encoder(config.base_model, encoder, tokenizer)
        check_encoder_matches(config, info.embedding_width, info.hidden_width, info.vocab_size)
        check_read_layer(config.read_layer, layer_count(encoder.config), config.base_model, "the BERTRAM config")
        config = replace(
            config,
            encoder_embedding_width=info.embedding_width,
            encoder_hidden_width=info.hidden_width,
            encoder_vocab_size=info.vocab_size,
            extra=dict(config.extra),
        )
        self.config = config
        self.ngram_vocab = ngram_vocab
        self.tokenizer = tokenizer
        self.inputs = InputBuilder(
            tokenizer,
            config.mode,
            config.max_seq_length,
            config.max_word_pieces,
            context_rows=config.context_rows,
            add_quotes=config.add_quotes,
            prefix_tokens=config.prefix_tokens,
        )
        # Not a submodule: the frozen encoder is shared between networks, so `.to()`,
        # `.cuda()` and `state_dict()` see only BERTRAM's own weights, and `encoder`
        # gives the copy on this network's device (`encoder_on`, one per device).
        object.__setattr__(self, "_base_encoder", encoder)
        # Exact shortcuts of `encode_contexts` (equal vectors to float rounding; off only to
        # measure them against the plain path, as benchmarks/pipeline.py --compare-paths does):
        # rows with one input encoded once, no layer above the read layer, calls of similar lengths.
        self.share_equal_rows = True
        self.stop_at_read_layer = True
        self.length_grouped_calls = True
        # Not exact: the context encoder's linear layers in int8 on the CPU (`encoder.int8_encoder`),
        # set by the layer's `int8_encoder`; off unless asked for.
        self.int8_encoder = False
        # The word counts of the model's training corpus (its counts.tsv), which weigh the context mean's
        # words (`context_piece_weights`); set by whoever loads the model with its counts.
        self.context_word_counts: Optional["CountTable"] = None
        self._piece_weights: Optional[Tuple[tuple, Tensor]] = None  # (what they were computed from, weights)
        self._said_no_counts = False
        width, hidden = info.embedding_width, info.hidden_width
        self.width = width
        self.ngram_form = NgramForm(len(ngram_vocab), width, config.ngram_dropout, ngram_vocab.pad_id)
        self.form_gate = nn.Linear(2 * width, 1)
        nn.init.zeros_(self.form_gate.weight)
        nn.init.zeros_(self.form_gate.bias)
        self.mimicking = AttentiveMimicking(hidden, config.mimicking)
        self.projection = nn.Linear(hidden, width)
        if hidden == width:
            nn.init.eye_(self.projection.weight)
        nn.init.zeros_(self.projection.bias)
        self.context_gate = nn.Linear(width + hidden, 1)
        nn.init.zeros_(self.context_gate.weight)
        nn.init.zeros_(self.context_gate.bias)
        # The reference's shallow gate, once after attentive mimicking: [v_ctx; v_form] -> a.
        gate_after = config.traits.gate_per_context and config.shallow_gate == "after"
        self.shallow_combination = nn.Linear(2 * width, 1) if gate_after else None
        if self.shallow_combination is not None:
            nn.init.zeros_(self.shallow_combination.weight)
            nn.init.zeros_(self.shallow_combination.bias)
        encoder.eval()
        # The network lives where the encoder it was given lives (initialised on the CPU first,
        # so a seed gives the same weights on every device).
        device = encoder_device(encoder)
        if device.type != "cpu":
            self.to(device)

    @property
    def encoder(self):
        """The frozen encoder on this network's device (its int8 copy where `int8_encoder` is set, on a CPU)."""
        encoder = encoder_on(self._base_encoder, self.device)
        if self.int8_encoder and self.device.type == "cpu":
            return int8_encoder(encoder)
        return encoder

    # -- parameter groups, one per training stage ------------------------------------

    def parameter_groups(self) -> Dict[str, List[nn.Parameter]]:
        """The parameters each training stage trains: "context" (stage 1: attentive
        mimicking and projection), "form" (stage 2: n-gram embeddings and the
        subword-mean gate) and "gate" (SHALLOW's form/context gate, stage 3)."""
        return {
            "form": [*self.ngram_form.parameters(), *self.form_gate.parameters()],
            "context": [*self.mimicking.parameters(), *self.projection.parameters()],
            "gate": [
                *self.context_gate.parameters(),
                *(self.shallow_combination.parameters() if self.shallow_combination is not None else ()),
            ],
        }

    def bertram_state_dict(self) -> Dict[str, Tensor]:
        """Trainable weights only: the encoder is referenced by name, never copied (nor a submodule)."""
        return {k: v for k, v in self.state_dict().items() if not k.startswith("encoder.")}

    def train(self, mode: bool = True) -> "BertramNetwork":
        super().train(mode)
        self.encoder.eval()  # frozen: no dropout inside the encoder, ever
        return self

    @property
    def device(self) -> torch.device:
        """Where the network's weights are, and so its encoder (`encoder`)."""
        return self.projection.weight.device

    def embedding_matrix(self) -> Tensor:
        return self.encoder.get_input_embeddings().weight

    # -- preparation (no gradients) --------------------------------------------------

    def prepare(
        self,
        words: Sequence[str],
        contexts: Optional[Sequence[Sequence[str]]] = None,
        subword_ids: Optional[Sequence[Sequence[int]]] = None,
        use_form: bool = True,
    ) -> PreparedBatch:
        """Tokenise words and contexts. `subword_ids` overrides the word's wordpieces.

        `use_form=False` (contexts only): in the inplace mode the word is spelled
        as the mask token and a word without a usable context gets no row.
        """
        clean = [validate_word(word) for word in words]
        ngram_ids = pad_ids([self.ngram_vocab.encode(w) for w in clean], self.ngram_vocab.pad_id)
        if subword_ids is None:
            subword_ids = [self.inputs.word_pieces(w) for w in clean]
        assert len(subword_ids) == len(clean), f"{len(subword_ids)} subword lists for {len(clean)} words"
        pieces = pad_ids(subword_ids, -1)
        rows: List[EncodedContext] = []
        inplace = self.config.traits.spelled
        if self.config.uses_contexts and contexts is not None:
            assert len(contexts) == len(clean), f"{len(contexts)} context lists for {len(clean)} words"
            spelled = (subword_ids if use_form else [[self.inputs.mask_id]] * len(clean)) if inplace else None
            rows = self.inputs.encode_many(clean, contexts, self.config.max_contexts, spelled)
        has_contexts = torch.zeros(len(clean), dtype=torch.bool)
        has_contexts[[r.word_index for r in rows]] = True
        if inplace and use_form:  # every word is also read from its pieces alone
            rows += [self.inputs.bare(i, subword_ids[i]) for i in range(len(clean))]
            rows.sort(key=lambda r: r.word_index)
        return PreparedBatch(clean, ngram_ids, pieces, rows, has_contexts)

    # -- the network -------------------------------------------------------------------

    def subword_mean(self, subword_ids: Tensor) -> Tensor:
        present = subword_ids >= 0
        table = self.embedding_matrix().detach()
        vectors = table[subword_ids.clamp(min=0)] * present.unsqueeze(-1).to(table.dtype)
        return vectors.sum(dim=1) / present.sum(dim=1, keepdim=True).clamp(min=1).to(table.dtype)

    def form_vectors(self, ngram_ids: Tensor, subword_ids: Tensor) -> Tensor:
        ngram_ids = ngram_ids.to(self.device)
        v_ngram = self.ngram_form(ngram_ids)
        if not self.config.use_subword_mean:
            return v_ngram
        v_sub = self.subword_mean(subword_ids.to(self.device))
        gate = torch.sigmoid(self.form_gate(torch.cat([v_ngram, v_sub], dim=-1)))
        return gate * v_ngram + (1.0 - gate) * v_sub

    def encode_contexts(
        self,
        rows: Sequence[EncodedContext],
        slot_vectors: Optional[Tensor] = None,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
    ) -> Tensor:
        """Hidden state at each row's mask position: [len(rows), hidden].

        `slot_vectors[word_index]` replaces the input embedding at each row's
        slot (ADD prefix or REPLACE mask); rows of many words share a call.
        Rows with the same encoder input (two rare words of one sentence, spelled
        inplace) are encoded once and read at each row's own span: the states are
        the same, and so are the vectors, to float rounding.
        """
        hidden = int(self.config.encoder_hidden_width or self.width)
        out = torch.zeros(len(rows), hidden, device=self.device, dtype=self.projection.weight.dtype)
        table = self.embedding_matrix()
        pad = self.inputs.pad_id
        readers: Dict[Tuple, List[int]] = {}
        for i, row in enumerate(rows):
            readers.setdefault(input_key(row) if self.share_equal_rows else (i,), []).append(i)
        unique = [rows[group[0]] for group in readers.values()]
        groups = list(readers.values())
        call_cost = CALL_COST_POSITIONS if self.length_grouped_calls else None
        for batch in batch_by_token_budget(unique, token_budget, call_cost):
            batch_rows = [unique[i] for i in batch]
            ids = pad_ids([r.input_ids for r in batch_rows], pad).to(self.device)
            attention = pad_ids([[1] * len(r) for r in batch_rows], 0).to(self.device)
            embeds = table[ids]
            if slot_vectors is not None:
                slotted = [(i, r.slot_position, r.word_index) for i, r in enumerate(batch_rows) if r.slot_position >= 0]
                if slotted:
                    row_idx, slot_idx, word_idx = (torch.as_tensor(x, device=self.device) for x in zip(*slotted))
                    embeds = embeds.index_put((row_idx, slot_idx), slot_vectors[word_idx].to(embeds.dtype))
            states = self._run_encoder(embeds, attention)
            owners = [(k, i) for k, u in enumerate(batch) for i in groups[u]]
            picked = self._read_spans(states, [k for k, _ in owners], [rows[i] for _, i in owners])
            index = torch.as_tensor([i for _, i in owners], device=self.device)
            out = out.index_copy(0, index, picked.to(out.dtype))
        return out

    def _run_encoder(self, embeds: Tensor, attention: Tensor) -> Tensor:
        """States at `read_layer` for a padded batch, running no layer above it where the encoder allows."""
        layer = int(self.config.read_layer)
        if layer == -1:
            return self.encoder(inputs_embeds=embeds, attention_mask=attention).last_hidden_state
        n_layers = layer_count(self.encoder.config)
        view = encoder_up_to(self.encoder, layer % (n_layers + 1)) if self.stop_at_read_layer and n_layers else None
        if view is not None:
            return view(inputs_embeds=embeds, attention_mask=attention).last_hidden_state
        output = self.encoder(inputs_embeds=embeds, attention_mask=attention, output_hidden_states=True)
        return output.hidden_states[layer]

    def _read_spans(self, states: Tensor, batch_rows: Sequence[int], rows: Sequence[EncodedContext]) -> Tensor:
        """Each row's state, from batch row `batch_rows[i]`: its mask position, or the mean over its span."""
        source = torch.as_tensor(batch_rows, device=self.device)
        if all(r.span == 1 for r in rows):
            positions = torch.as_tensor([r.mask_position for r in rows], device=self.device)
            return states[source, positions]
        weights = torch.zeros(len(rows), states.shape[1], device=self.device, dtype=states.dtype)
        for i, r in enumerate(rows):
            weights[i, r.mask_position : r.mask_position + r.span] = 1.0 / r.span
        return torch.bmm(weights.unsqueeze(1), states[source]).squeeze(1)

    def mix_subword_mean(self, vectors: Tensor, subword_ids: Tensor, share: Optional[float] = None) -> Tensor:
        """(1 - s) unit(v) + s unit(subword mean), scaled to the subword mean's norm (s = `share`, None: the
        config's subword_share; the mix is inference's, so a caller may ask for another)."""
        share = float(self.config.subword_share if share is None else share)
        if share <= 0.0:
            return vectors
        sub = self.subword_mean(subword_ids.to(self.device)).to(vectors.dtype)
        unit = torch.nn.functional.normalize
        return sub.norm(dim=-1, keepdim=True) * ((1.0 - share) * unit(vectors, dim=-1) + share * unit(sub, dim=-1))

    def context_mean(self, batch: PreparedBatch, use_form: bool = True) -> Tensor:
        """Each word's mean input embedding of its context words ([n_words, width]; zero without any),
        weighted by `context_piece_weights` (the plain mean, a la carte's additive vector, without them),
        from the ids of the batch's rows (`InputBuilder.context_ids`: no special token, prefix or
        occurrence of the word), pooled over all of a word's contexts."""
        if not batch.words:
            return torch.zeros(0, self.width, device=self.device, dtype=self.embedding_matrix().dtype)
        spell = self.config.traits.spelled and use_form
        pieces = [[int(i) for i in row if i >= 0] for row in batch.subword_ids.tolist()] if spell else None
        bags: List[List[int]] = [[] for _ in batch.words]
        for row in batch.rows:
            bags[row.word_index] += self.inputs.context_ids(row, pieces[row.word_index] if pieces else ())
        table = self.embedding_matrix().detach()
        flat = torch.as_tensor([i for bag in bags for i in bag], dtype=torch.long, device=self.device)
        lengths = torch.as_tensor([len(bag) for bag in bags], dtype=torch.long)
        offsets = (torch.cumsum(lengths, 0) - lengths).to(self.device)
        weights = self.context_piece_weights()
        if weights is None:
            return nn.functional.embedding_bag(flat, table, offsets, mode="mean")
        weight = weights[flat].to(table.dtype)
        sums = nn.functional.embedding_bag(flat, table, offsets, mode="sum", per_sample_weights=weight)
        bag_of = torch.repeat_interleave(torch.arange(len(bags), device=self.device), lengths.to(self.device))
        totals = torch.zeros(len(bags), device=self.device, dtype=table.dtype).index_add_(0, bag_of, weight)
        return sums / totals.clamp_min(torch.finfo(table.dtype).tiny).unsqueeze(-1)

    def context_piece_weights(self) -> Optional[Tensor]:
        """Each vocabulary row's weight in the context mean: a / (a + p), a the config's
        `context_mean_smoothing` and p the share of the training counts of the word the row spells
        (`word_start_tokens`; a continuation piece or an uncounted word weighs 1). None: the plain mean
        (smoothing 0, or no counts: W020 says so once). Frequent words say least about an unknown one."""
        smoothing = float(self.config.context_mean_smoothing)
        counts = self.context_word_counts
        if smoothing <= 0.0:
            return None
        if counts is None:
            if not self._said_no_counts:
                warnings.warn(Warnings.W020.format(smoothing=smoothing))
                self._said_no_counts = True
            return None
        key = (id(counts), counts.total, len(counts.counts), smoothing, str(self.device))
        if self._piece_weights is None or self._piece_weights[0] != key:
            rows = self.embedding_matrix().shape[0]
            share = numpy.zeros(rows, dtype=numpy.float64)
            for index, word in word_start_tokens(self.tokenizer).items():
                if index < rows:
                    share[index] = counts.count(word) / counts.total
            weights = torch.as_tensor(smoothing / (smoothing + share), dtype=torch.float32, device=self.device)
            self._piece_weights = (key, weights)
        return self._piece_weights[1]

    def context_mean_share_for(self, use_form: bool) -> float:
        """The config's share of the context mean for a word with contexts, on this path."""
        return float(self.config.context_mean_share_with_form if use_form else self.config.context_mean_share)

    def mix_context_mean(
        self, vectors: Tensor, batch: PreparedBatch, use_form: bool = True, share: Optional[float] = None
    ) -> Tensor:
        """(1 - s) unit(v) + s unit(context mean), scaled to v's norm, for each word with context words
        (s = `share`, None: the config's for the path, `context_mean_share_for`). Words without contexts
        keep `vectors` as they are, and s = 0 returns them untouched: the mix is inference's, as the
        subword mean's is, so a trained model's share can be changed without training again."""
        share = self.context_mean_share_for(use_form) if share is None else float(share)
        if share <= 0.0 or batch.has_contexts is None or not bool(batch.has_contexts.any()):
            return vectors
        mean = self.context_mean(batch, use_form).to(vectors.dtype)
        unit = torch.nn.functional.normalize
        mixed = vectors.norm(dim=-1, keepdim=True) * (
            (1.0 - share) * unit(vectors, dim=-1) + share * unit(mean, dim=-1)
        )
        chosen = batch.has_contexts.to(self.device).unsqueeze(-1) & (mean.norm(dim=-1, keepdim=True) > 0)
        return torch.where(chosen, mixed, vectors)

    def combine(self, states: Tensor, word_index: Tensor, v_form: Tensor) -> Tuple[Tensor, Tensor]:
        """Attentive mimicking over each word's contexts. Returns (vectors, rho)."""
        n_words = v_form.shape[0]
        if states.shape[0] == 0:
            empty = torch.zeros(n_words, 0, device=v_form.device, dtype=v_form.dtype)
            return v_form, empty
        # The layout (which context goes where) is integer bookkeeping: done on the CPU, where
        # the word index comes from, and moved once, so a GPU never waits on `counts.max()`.
        word_index = word_index.cpu()
        counts = torch.bincount(word_index, minlength=n_words)
        order = torch.argsort(word_index, stable=True)
        sorted_words = word_index[order]
        starts = torch.cumsum(counts, 0) - counts
        slots = torch.arange(len(order)) - starts[sorted_words]
        m = int(counts.max())
        order, sorted_words, slots = (t.to(self.device) for t in (order, sorted_words, slots))
        grid = torch.zeros(n_words, m, states.shape[1], device=self.device, dtype=states.dtype)
        grid = grid.index_put((sorted_words, slots), states[order])
        mask = torch.zeros(n_words, m, dtype=torch.bool, device=self.device)
        mask[sorted_words, slots] = True
        rho = self.mimicking(grid, mask)
        gate_per_context = self.config.traits.gate_per_context and self.shallow_combination is None
        if self.config.mimicking == "linear" and not gate_per_context:
            # As the reference computes it: the weighted states, then one projection (its weights
            # need not sum to 1, so the order matters).
            v_ctx = self.projection((rho.unsqueeze(-1) * grid).sum(dim=1))
        else:
            per_context = self.projection(grid)
            if gate_per_context:
                form = v_form.unsqueeze(1).expand(-1, m, -1)
                alpha = torch.sigmoid(self.context_gate(torch.cat([form, grid], dim=-1)))
                per_context = alpha * per_context + (1.0 - alpha) * form
            v_ctx = (rho.unsqueeze(-1) * per_context).sum(dim=1)
        if self.shallow_combination is not None:
            alpha = torch.sigmoid(self.shallow_combination(torch.cat([v_ctx, v_form], dim=-1)))
            v_ctx = alpha * v_ctx + (1.0 - alpha) * v_form
        has_context = (counts > 0).unsqueeze(-1).to(self.device)
        return torch.where(has_context, v_ctx, v_form), rho

    def forward(
        self,
        batch: PreparedBatch,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        use_form: bool = True,
        subword_share: Optional[float] = None,
        context_mean_share: Optional[float] = None,
    ) -> Tensor:
        """One vector per word. `use_form=False` zeroes the form vector (n-gram form
        and subword mean) and skips the output mix with the subword mean: for a
        nonce word whose spelling means nothing, the vector then comes from the
        contexts alone (in ADD mode the zero vector fills the prefix slot; inplace
        rows spell the word as the mask token, see `prepare`; a word without a
        usable context gets the zero vector). `subword_share`: the output mix's
        share instead of the config's (the `bertram` component's setting);
        `context_mean_share`: the context mean's share instead of the config's for
        the path (`mix_context_mean`, applied before the subword mean's mix)."""
        v_form = self.form_vectors(batch.ngram_ids, batch.subword_ids)
        if not use_form:
            v_form = torch.zeros_like(v_form)
        if not self.config.uses_contexts or not batch.rows:
            vectors = v_form
        else:
            slots = v_form if self.config.fills_slot else None
            states = self.encode_contexts(batch.rows, slots, token_budget)
            word_index = torch.as_tensor([r.word_index for r in batch.rows], dtype=torch.long)
            vectors, _ = self.combine(states, word_index, v_form)
            vectors = self.mix_context_mean(vectors, batch, use_form, context_mean_share)
        if not use_form:
            return vectors
        return self.keep_own_embeddings(self.mix_subword_mean(vectors, batch.subword_ids, subword_share), batch)

    def keep_own_embeddings(self, vectors: Tensor, batch: PreparedBatch) -> Tensor:
        """A one-piece word without contexts keeps its own embedding (config.own_embedding_for_one_piece)."""
        if not self.config.own_embedding_for_one_piece or batch.has_contexts is None:
            return vectors
        # Which words: bookkeeping on the CPU, where the batch was prepared, so a GPU never waits on `any()`.
        alone = ((batch.subword_ids.cpu() >= 0).sum(dim=1) == 1) & ~batch.has_contexts.cpu()
        if not bool(alone.any()):
            return vectors
        own = self.subword_mean(batch.subword_ids.to(self.device)).to(vectors.dtype)
        return torch.where(alone.to(self.device).unsqueeze(-1), own, vectors)

    # -- convenience ---------------------------------------------------------------------

    @torch.no_grad()
    def infer(
        self,
        items: Sequence[Tuple[str, Sequence[str]]],
        token_budget: int = 0,
        words_per_batch: int = 512,
        use_form: bool = True,
    ) -> numpy.ndarray:
        """One float32 row per (word, contexts) item, in eval mode (deterministic).

        A word without any context that contains it gets its form vector;
        `token_budget=0` takes the device's default (`TOKEN_BUDGETS`).
        `use_form=False`: contexts only (see `forward`).
        """
        token_budget = token_budget or default_token_budget(self.device)
        was_training = self.training
        self.eval()
        try:
            out = numpy.zeros((len(items), self.width), dtype="float32")
            for start in range(0, len(items), words_per_batch):
                chunk = items[start : start + words_per_batch]
                batch = self.prepare(*split_items(chunk, start), use_form=use_form)
                vectors = self.forward(batch, token_budget, use_form=use_form)
                out[start : start + len(chunk)] = vectors.float().cpu().numpy()
            return out
        finally:
            self.train(was_training)


def check_encoder_matches(config: BertramConfig, embedding_width: int, hidden_width: int, vocab_size: int) -> None:
    """Refuse an encoder other than the one a trained model was made for."""
    expected = (
        ("embedding width", config.encoder_embedding_width, embedding_width),
        ("hidden width", config.encoder_hidden_width, hidden_width),
        ("vocabulary size", config.encoder_vocab_size, vocab_size),
    )
    for what, want, got in expected:
        if want is not None and int(want) != int(got):
            raise ValueError(Errors.E060.format(what=what, want=want, base_model=config.base_model, got=got))
