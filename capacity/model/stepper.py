"""One step's time for scalar inputs, fast: what the step simulator calls once per engine step.

`step_parts` (capacity/model/steptime.py) is the model of a step and broadcasts over arrays; a call costs
~100 µs whatever the size, which is fine for closed forms over grids and far too slow for a loop
over 10⁵ steps. `Stepper` folds the constants of one (model, GPU, precision, parallelism, calibration)
into per-token coefficients once, so that one step costs a few float operations. The expressions are
the same operator rooflines term by term; `tests/test_simulate.py` holds them equal to `step_parts`
on random steps of every catalog model, so the two cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from capacity.calibration import Efficiency
from capacity.model.formulas import compiled
from capacity.model.kv import attended_tokens_decode
from capacity.model.steptime import (StepCosts, eager_added_s, eager_floor_s, experts_read_per_gpu, fixed_overhead_s, host_token_s,
                                     moe_share, pipeline_hops_s, sequence_overhead_s)


@dataclass(frozen=True)
class Stepper:
    """Scalar step time of one engine-on-hardware context (what a step of d decodes and p prefill tokens costs)."""

    costs: StepCosts
    ideal: bool
    # linear layers: FLOPs per token (dense) and per sampled position (LM head); bytes per step
    lin_flops_per_token: float
    head_flops_per_logit: float
    lin_bytes: float
    flops_per_s: float  # achieved linear FLOP/s (peak × matmul efficiency)
    weight_bytes_per_s: float  # achieved weight-streaming bandwidth
    expert_flops_per_token: float
    expert_bytes_per_touched: float  # bytes of one touched expert over all MoE layers
    moe_flops_per_s: float
    attn_flops_per_key: float
    attn_flops_per_s: float
    kv_bytes_per_key: float  # bytes one cached token-layer costs to read
    kv_bytes_per_s: float
    kv_write_bytes_per_token: float  # a prefill token writes its KV in every layer
    prefill_kv_bytes_per_s: float
    comm_s_per_token: float  # TP all-reduce bandwidth term per token (2 per layer)
    comm_s_fixed: float  # TP all-reduce latency per step
    overhead_fixed_s: float
    overhead_per_sequence_s: float
    host_per_sequence_s: float
    launch_floor_s: float  # the dense layers' op-by-op launch, a floor under an eager step
    launch_added_s: float  # the fused-MoE path's, added to it
    max_graph_tokens: float
    max_prefill_graph_tokens: float  # steps with a prompt chunk (StepCosts.prefill_graph_limit)
    _touched: dict = field(default_factory=dict, compare=False, repr=False)
    _pricers: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def build(cls, c: StepCosts, eff: Efficiency, ideal: bool = False) -> Stepper:
        one = 1.0 if ideal else None  # the ideal roofline runs every unit at its peak
        peak, bw = c.peak_flops_per_s, c.bandwidth_bytes_per_s
        lin = float(compiled("linear_flops")(c.dense_params, 1.0))
        head = float(compiled("linear_flops")(c.head_params, 1.0))
        if c.moe_layers:
            exp_flops = 2 * c.experts_per_token * c.expert_params * c.moe_layers / c.ep
        else:
            exp_flops = 0.0
        if c.tp > 1:
            per_token = 2 * c.num_layers * (float(compiled("allreduce_time_s")(0.0, c.tp, c.hidden_size * 2.0,
                                                                                c.link_bytes_per_s, eff.link)))
            fixed = 2 * c.num_layers * eff.link_latency_s
        else:
            per_token = fixed = 0.0
        if c.pp > 1:  # the stage-to-stage sends (steptime.pipeline_hops_s), latency and bytes per token apart
            latency = float(pipeline_hops_s(c, eff, 0.0))
            fixed += latency
            per_token += float(pipeline_hops_s(c, eff, 1.0)) - latency
        host = host_token_s(c, eff)
        return cls(
            costs=c, ideal=ideal,
            lin_flops_per_token=lin, head_flops_per_logit=head, lin_bytes=c.dense_weight_bytes,
            flops_per_s=peak * (one or eff.matmul), weight_bytes_per_s=bw * (one or eff.weight_bandwidth),
            expert_flops_per_token=exp_flops, expert_bytes_per_touched=c.expert_weight_bytes * c.moe_layers,
            moe_flops_per_s=peak * (one or moe_share(c, eff)),
            attn_flops_per_key=c.attention_flops_per_key,
            attn_flops_per_s=c.attention_peak_flops_per_s * (one or eff.attention_matmul),
            kv_bytes_per_key=c.kv_bytes_per_token_layer, kv_bytes_per_s=bw * (one or eff.kv_bandwidth),
            kv_write_bytes_per_token=c.num_layers * c.kv_bytes_per_token_layer,
            prefill_kv_bytes_per_s=bw * (one or eff.weight_bandwidth),
            comm_s_per_token=per_token, comm_s_fixed=fixed,
            overhead_fixed_s=0.0 if ideal else fixed_overhead_s(c, eff),
            # async scheduling off (c.serial_host): the host's per-sequence work adds to the step instead of flooring it
            overhead_per_sequence_s=0.0 if ideal else sequence_overhead_s(c, eff) + (host if c.serial_host else 0.0),
            host_per_sequence_s=0.0 if ideal or c.serial_host else host,
            launch_floor_s=0.0 if ideal else eager_floor_s(c, eff),
            launch_added_s=0.0 if ideal else eager_added_s(c, eff),
            # each attention-DP rank replays its own graph over its share of the batch (steptime.graph_limit)
            max_graph_tokens=c.max_cudagraph_tokens * c.dp_ranks,
            max_prefill_graph_tokens=c.prefill_graph_limit * c.dp_ranks,
        )

    def decode_keys(self, context: float) -> float:
        """Token-layers one decoding sequence of `context` tokens reads (sliding windows included): kv.cached_tokens
        for one float, without numpy's per-call cost (tests/test_simulate.py holds the two equal)."""
        m = self.costs.arch
        if not m.num_sliding_layers:
            return m.num_full_layers * context
        return m.num_full_layers * context + m.num_sliding_layers * min(context, m.sliding_window or 0)

    def prefill_keys(self, tokens: float, prefix: float) -> float:
        """Mean keys per token, summed over layers, of a chunk of `tokens` after `prefix` computed tokens:
        kv.attended_tokens_prefill for one chunk in plain floats, the same operations in the same order
        (tests/test_simulate.py holds the two equal bit for bit)."""
        full_layers, sliding_layers, window = self._layers
        n = max(float(tokens), 1.0)
        p = float(prefix)
        full = p + (n + 1) / 2
        w = float(window or 0)
        if sliding_layers and w > 0:
            lo, top = p + 1, min(p + n, w)
            below = max(top - lo + 1, 0.0)
            mean_below = (lo + top) / 2 if below > 0 else 0.0
            sliding = (below * mean_below + (n - below) * w) / n
        else:
            sliding = full * 0
        return full_layers * full + sliding_layers * sliding

    @cached_property
    def decode_key_s(self) -> float:
        """Seconds a decoding sequence spends per cached token-layer it reads: the larger of that key's attention
        FLOPs and its KV bytes, each at its achieved rate (off the roofline; the ideal prices FLOPs and bytes whole)."""
        return max(self.attn_flops_per_key / self.attn_flops_per_s, self.kv_bytes_per_key / self.kv_bytes_per_s)

    @cached_property
    def _layers(self) -> tuple[int, int, int | None]:
        """(full-attention layers, sliding-window layers, window), asked once per prefill chunk."""
        m = self.costs.arch
        return m.num_full_layers, m.num_sliding_layers, m.sliding_window

    def experts_touched(self, tokens: float) -> float:
        """Distinct experts of one GPU a step of `tokens` loads (memoized: steps repeat token counts)."""
        cache = self._touched
        hit = cache.get(tokens)
        if hit is None:
            hit = cache[tokens] = float(experts_read_per_gpu(self.costs, tokens, straggler=not self.ideal))
        return hit

    def _parts(self, d: float, decode_keys_per_seq: float, p: float, prefill_keys_per_token: float):
        """(GPU busy time with overheads, floor: the host and an eager step's dense launch, added launch) of one step."""
        tokens = d + p
        sampled = d + min(p, 1.0)
        lin_f = self.lin_flops_per_token * tokens + self.head_flops_per_logit * sampled
        exp_f = self.expert_flops_per_token * tokens
        exp_b = self.experts_touched(tokens) * self.expert_bytes_per_touched if self.expert_flops_per_token else 0.0
        dec_f = d * decode_keys_per_seq * self.attn_flops_per_key
        dec_b = d * decode_keys_per_seq * self.kv_bytes_per_key
        pre_f = p * prefill_keys_per_token * self.attn_flops_per_key
        pre_b = p * self.kv_write_bytes_per_token
        comm = (self.comm_s_fixed + self.comm_s_per_token * tokens) if self.comm_s_per_token else 0.0
        if self.ideal:
            flops = lin_f + exp_f + dec_f + pre_f
            by = self.lin_bytes + exp_b + dec_b + pre_b
            return max(flops / self.flops_per_s, by / self.weight_bytes_per_s) + comm, 0.0, 0.0
        gpu = (max(lin_f / self.flops_per_s, self.lin_bytes / self.weight_bytes_per_s)
               + (max(exp_f / self.moe_flops_per_s, exp_b / self.weight_bytes_per_s) if exp_f else 0.0)
               + max(dec_f / self.attn_flops_per_s, dec_b / self.kv_bytes_per_s)
               + max(pre_f / self.attn_flops_per_s, pre_b / self.prefill_kv_bytes_per_s)
               + comm)
        busy = gpu + self.overhead_fixed_s + self.overhead_per_sequence_s * sampled
        limit = self.max_prefill_graph_tokens if p > 0 else self.max_graph_tokens
        host = self.host_per_sequence_s * sampled
        if tokens > limit:  # op by op: the dense launch floors the step with the host, the MoE launch adds to it
            return busy, (host if host >= self.launch_floor_s else self.launch_floor_s), self.launch_added_s
        return busy, host, 0.0

    def time_s(self, decode_seqs: float, decode_keys_per_seq: float, prefill_tokens: float,
               prefill_keys_per_token: float) -> float:
        """Seconds of one step: `decode_seqs` sequences each reading `decode_keys_per_seq` token-layers
        (`decode_keys` of their mean context) and `prefill_tokens` attending `prefill_keys_per_token` each."""
        busy, host, launch = self._parts(decode_seqs, decode_keys_per_seq, prefill_tokens, prefill_keys_per_token)
        return max(busy, host) + launch

    def decode_run_s(self, decode_seqs: int, contexts: np.ndarray) -> np.ndarray:
        """Times of decode-only steps of `decode_seqs` sequences at these mean contexts (one per step)."""
        keys = np.asarray(attended_tokens_decode(self.costs.arch, contexts), dtype=float)
        d = float(decode_seqs)
        if self.ideal:
            c = self
            exp_b = self.experts_touched(d) * self.expert_bytes_per_touched if self.expert_flops_per_token else 0.0
            flops = (c.lin_flops_per_token + c.head_flops_per_logit + c.expert_flops_per_token) * d + d * keys * c.attn_flops_per_key
            by = c.lin_bytes + exp_b + d * keys * c.kv_bytes_per_key
            comm = (self.comm_s_fixed + self.comm_s_per_token * d) if self.comm_s_per_token else 0.0
            return np.maximum(flops / c.flops_per_s, by / c.weight_bytes_per_s) + comm
        busy0, host, launch = self._parts(d, 0.0, 0.0, 0.0)
        per_key = d * self.decode_key_s
        return np.maximum(busy0 + per_key * keys, host) + launch

    def decode_pricer(self, decode_seqs: int):
        """`decode_run_s` one step at a time: a function of the mean context giving the seconds of one decode-only
        step of `decode_seqs` sequences, in plain floats with the same operations in the same order (so the same
        bits; tests/test_simulate.py holds them equal). Built once per batch size."""
        price = self._pricers.get(decode_seqs)
        if price is None:
            price = self._pricers[decode_seqs] = self._decode_pricer(float(decode_seqs))
        return price

    def _decode_pricer(self, d: float):
        full, sliding, window = self._layers
        window = window or 0

        def keys(ctx: float) -> float:  # kv.cached_tokens of one context
            return full * ctx + sliding * min(ctx, window)

        if self.ideal:
            exp_b = self.experts_touched(d) * self.expert_bytes_per_touched if self.expert_flops_per_token else 0.0
            flops0 = (self.lin_flops_per_token + self.head_flops_per_logit + self.expert_flops_per_token) * d
            bytes0 = self.lin_bytes + exp_b
            comm = (self.comm_s_fixed + self.comm_s_per_token * d) if self.comm_s_per_token else 0.0
            f_key, b_key, fps, bps = self.attn_flops_per_key, self.kv_bytes_per_key, self.flops_per_s, self.weight_bytes_per_s

            def ideal_step(ctx: float) -> float:
                k = keys(ctx)
                return max((flops0 + d * k * f_key) / fps, (bytes0 + d * k * b_key) / bps) + comm

            return ideal_step
        busy0, host, launch = self._parts(d, 0.0, 0.0, 0.0)
        per_key = d * self.decode_key_s
        if not sliding:  # keys = full × ctx (+ 0 × …), inlined: this runs once per simulated decode step

            def full_step(ctx: float) -> float:
                busy = busy0 + per_key * (full * ctx)
                return (busy if busy >= host else host) + launch  # max(busy, host), without the call

            return full_step

        def step(ctx: float) -> float:
            return max(busy0 + per_key * keys(ctx), host) + launch

        return step


@dataclass(frozen=True)
class SpecStepper:
    """A Stepper for an engine that verifies k drafted tokens per decoding sequence each step (speculative decoding):
    every decode step carries d × k verification queries on top of the d decoding tokens. They are priced as the closed
    forms price them (`workload._decode_step`): as extra tokens of the step that attend their sequence's context in
    every layer and write their KV. The drafts cost nothing of their own (n-gram prompt lookup), `draft_cost` of a
    plain decode step per drafted token, or a draft model's k forwards after each verification (`draft`, as
    `steptime.draft_forwards_s` prices them: the first over the `draft_first_tokens` (τ) each sequence just gained plus
    the step's prompt chunk, the other k − 1 over one token per sequence, each lasting at least the CPU's op-by-op
    launch `draft_cpu_s`). The draft reads its sequences' keys over its own layers: the target's keys ×
    `draft_key_ratio` (layers of the draft / layers of the target, as the closed forms scale them). Same methods as
    Stepper, so the simulator takes either."""

    inner: Stepper
    draft_tokens: int
    draft_cost: float = 0.0
    draft: Stepper | None = None
    draft_first_tokens: float = 1.0
    draft_cpu_s: float = 0.0
    draft_key_ratio: float = 1.0

    def _draft_s(self, decode_seqs: float, decode_keys_per_seq: float, prefill_tokens: float,
                 prefill_keys_per_token: float) -> float:
        """The draft model's k forwards after one verification step."""
        r = self.draft_key_ratio
        first = self.draft._parts(decode_seqs * self.draft_first_tokens, decode_keys_per_seq * r, prefill_tokens,
                                  prefill_keys_per_token * r)[0]
        rest = self.draft._parts(decode_seqs, decode_keys_per_seq * r, 0.0, 0.0)[0]
        cpu = self.draft_cpu_s
        return max(first, cpu) + (self.draft_tokens - 1) * max(rest, cpu)

    def decode_keys(self, context: float) -> float:
        return self.inner.decode_keys(context)

    def prefill_keys(self, tokens: float, prefix: float) -> float:
        return self.inner.prefill_keys(tokens, prefix)

    def time_s(self, decode_seqs: float, decode_keys_per_seq: float, prefill_tokens: float,
               prefill_keys_per_token: float) -> float:
        if not decode_seqs:  # a prompt chunk alone: nothing to verify; a draft model still runs over it and drafts
            t = self.inner.time_s(0.0, 0.0, prefill_tokens, prefill_keys_per_token)
            if self.draft is not None and prefill_tokens:
                t += self._draft_s(0.0, 0.0, prefill_tokens, prefill_keys_per_token)
            return t
        q = decode_seqs * self.draft_tokens  # verification queries, each attending its sequence's keys
        p = prefill_tokens + q
        keys = (prefill_tokens * prefill_keys_per_token + q * decode_keys_per_seq) / p
        t = self.inner.time_s(decode_seqs, decode_keys_per_seq, p, keys)
        if self.draft is not None:
            t += self._draft_s(decode_seqs, decode_keys_per_seq, prefill_tokens, prefill_keys_per_token)
        elif self.draft_cost:
            t += self.draft_cost * self.draft_tokens * self.inner.time_s(decode_seqs, decode_keys_per_seq, 0.0, 0.0)
        return t

    def decode_pricer(self, decode_seqs: int):
        keys = self.inner.decode_keys

        def step(ctx: float) -> float:
            return self.time_s(decode_seqs, keys(ctx), 0.0, 0.0)

        return step

    def decode_run_s(self, decode_seqs: int, contexts: np.ndarray) -> np.ndarray:
        """`decode_pricer` over many contexts at once. Off the roofline, the step's parts that depend on the keys
        are the decodes' attention (linear in the keys) and the verification queries' (the larger of their FLOPs,
        linear in the keys, and their KV write, fixed): the rest is one call of the scalar model."""
        ctx = np.asarray(contexts, dtype=float)
        c = self.inner
        d = float(decode_seqs)
        if c.ideal or not d:
            price = self.decode_pricer(decode_seqs)
            return np.array([price(float(x)) for x in ctx])
        keys = np.asarray(attended_tokens_decode(c.costs.arch, ctx), dtype=float)
        q = d * self.draft_tokens
        busy0, host, launch = c._parts(d, 0.0, q, 0.0)
        write_s = q * c.kv_write_bytes_per_token / c.prefill_kv_bytes_per_s  # the queries' part at zero keys
        per_key = d * c.decode_key_s
        queries = np.maximum(q * keys * c.attn_flops_per_key / c.attn_flops_per_s, write_s)
        t = np.maximum(busy0 - write_s + per_key * keys + queries, host) + launch
        if self.draft is not None:
            t = t + self._draft_run_s(d, keys)
        elif self.draft_cost:
            t = t + self.draft_cost * self.draft_tokens * c.decode_run_s(decode_seqs, ctx)
        return t

    def _draft_run_s(self, d: float, keys: np.ndarray) -> np.ndarray:
        """`_draft_s` of decode-only steps over many target key counts: each forward's busy time is linear in the
        keys (the draft's decode attention), floored by the CPU launch."""
        dr, r, cpu = self.draft, self.draft_key_ratio, self.draft_cpu_s

        def forward(seqs: float) -> np.ndarray:
            return np.maximum(dr._parts(seqs, 0.0, 0.0, 0.0)[0] + seqs * dr.decode_key_s * r * keys, cpu)

        return forward(d * self.draft_first_tokens) + (self.draft_tokens - 1) * forward(d)
