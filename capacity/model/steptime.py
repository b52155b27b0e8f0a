"""Time of one engine step (one forward pass of a continuous batch), per operator roofline.

A step runs `d` decode sequences (one token each, mean context c) and `p` prefill tokens (each
attending s keys on average, summed over layers). Per GPU, with tensor parallel t:

  linear:    FLOPs 2·N_dense·T / t, bytes W_dense / t                 (T = d + p tokens)
  experts:   FLOPs 2·k·N_expert·T·L_moe, bytes E_touched(T)·W_expert·L_moe (the busiest GPU's under EP)
  attention: decode reads the KV of every sequence; prefill does 4·n_h·d_h·p·s FLOPs
  comms:     2 all-reduces per layer of T·h·2 bytes when t > 1
  overhead:  step + per-layer (more per MoE and per MLA layer) + per-sequence constants
  host:      the engine's host work per sampled token (scheduling, input preparation, detokenizing and
             streaming each sequence's token) is pipelined with the GPU: a step lasts at least
             host_token_s × its sequences. At ~1,000 running sequences this ceiling, not the GPU, sets
             decode throughput (vLLM 0.26 on H200: ~15k tokens/s whatever the model)
  launch:    a step with more tokens than the engine's largest CUDA graph is launched op by op from the CPU,
             and that launch time adds to the step rather than hiding behind it: per-layer launch time × layers
             (per MoE layer far more: vLLM 0.26's fused-MoE path). Qwen3-30B-A3B on one H200: 43 ms per step
             at 640 decoding sequences with graphs to 1,024 (the host floor), 71 ms with the default graphs to
             512; 75 and 93 ms at 1,024 — a constant ~25 ms on top, not a floor — and steps of ~60 decodes plus
             a ~1,000-token prompt chunk (eager) near 55 ms where the GPU work alone is ~30 ms (sitting 7). An
             added cost is what op-by-op launches give when each MoE layer waits for the GPU before launching
             the next (a host–device synchronization per layer), so the GPU idles while the CPU launches

Each operator takes max(FLOPs ÷ achieved FLOP/s, bytes ÷ achieved bandwidth); operators run one
after another, so their times add. With `ideal`, the step is the whole-step roofline
max(ΣFLOPs ÷ peak, Σbytes ÷ bandwidth): a true lower bound on time.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from capacity.model.architecture import ModelArch
from capacity.calibration import Efficiency
from capacity.model.formulas import compiled
from capacity.hardware import Gpu
from capacity.model.kv import attended_tokens_decode, kv_bytes_per_token_per_layer
from capacity.model.params import attention_params_per_gpu, count_params, mlp_params
from capacity.model.weights import WeightBytes


@dataclass(frozen=True)
class StepCosts:
    """Per-GPU constants of one (model, precision, GPU, parallelism): everything step time needs."""

    arch: ModelArch
    tp: int
    ep: int
    dense_params: float  # per GPU, multiplied by every token (LM head excluded)
    head_params: float  # per GPU, LM head: multiplied by sampled positions only
    dense_weight_bytes: float  # per GPU, streamed every step
    expert_params: float  # one expert of one layer, per GPU
    expert_weight_bytes: float
    experts_per_gpu: float
    num_experts: int
    experts_per_token: int
    moe_layers: int
    kv_bytes_per_token_layer: float  # per GPU
    attention_flops_per_key: float  # per query token per key per layer, per GPU: 4·n_h·d_h / t
    peak_flops_per_s: float  # linear layers, compute precision
    attention_peak_flops_per_s: float  # bf16
    bandwidth_bytes_per_s: float
    link_bytes_per_s: float
    hidden_size: int
    num_layers: int
    max_cudagraph_tokens: float = float("inf")
    max_prefill_graph_tokens: float | None = None  # steps with a prompt chunk: their own graph limit (None: the same)
    mla_layers: int = 0  # layers with MLA attention (DeepSeek): their extra kernels cost a fixed time each
    quantized_linears: int = 0  # linear layers per step whose activations are quantized (FP8 / FP4 compute)
    weight_only_fp4_moe_layers: int = 0  # MoE layers whose FP4 experts run weight-only (no FP4 tensor cores)
    exposed_host_s: float = 0.0  # the CPU's per-step work the engine does not overlap with the GPU (async off)
    serial_host: bool = False  # async scheduling off: the per-sequence host work adds to the step, not a floor
    draft: StepCosts | None = None  # a draft_model speculator's own costs (`draft_costs`): its forwards follow each verify
    forward_host_s: float = 0.0  # a draft's per-forward CPU work besides its op-by-op launches (`draft_forwards_s`)
    pp: int = 1  # pipeline stages: the step is a batch's pass through all of them (capacity/model/pipeline.py)
    # attention data parallel: GPUs each running its own executor over its share of the batch, so the per-sequence
    # host and launch work of a step is done by dp_ranks processes side by side (1: one process for the batch)
    dp_ranks: int = 1
    # the host floor per sequence as a share of the one-front-end floor fitted (EngineProfile.host_floor_scale: more
    # front-end processes stream the tokens, down to the engine core's own share)
    host_scale: float = 1.0
    # (FLOP share, reduction length per GPU) of the expert projections: up/gate reduce over the hidden size, down
    # over the expert's width on this GPU (split by TP without EP)
    expert_reductions: tuple[tuple[float, float], ...] = ()

    @property
    def prefill_graph_limit(self) -> float:
        """The most tokens a step carrying a prompt chunk runs graphed: the engine's own prefill graphs where it has
        them (SGLang), else the one graph limit of every step (vLLM)."""
        return self.max_cudagraph_tokens if self.max_prefill_graph_tokens is None else self.max_prefill_graph_tokens


def moe_share(c: StepCosts, eff: Efficiency) -> float:
    """The share of peak the expert GEMMs reach: moe_matmul × the FLOP-weighted K / (K + K0) of their projections
    (the stepper and step_parts both call this, so their expert rates are the same bits)."""
    k0 = eff.moe_reduction_tokens
    if not k0 or not c.expert_reductions:
        return eff.moe_matmul
    return eff.moe_matmul / sum(share * (1.0 + k0 / k) for share, k in c.expert_reductions)


def build_costs(m: ModelArch, w: WeightBytes, gpu: Gpu, compute_precision: str, kv_bytes: float,
                tp: int = 1, ep: int = 1, max_cudagraph_tokens: float = float("inf"),
                async_scheduling: bool = True, exposed_host_s: float = 0.0,
                max_prefill_graph_tokens: float | None = None, weight_format: str = "bf16") -> StepCosts:
    p = count_params(m)
    head = p.lm_head if p.lm_head else p.embedding
    # the MoE router is a replicated linear (its bytes sit whole in weights.py's `other`): its FLOPs are not split
    dense = attention_params_per_gpu(m, tp) + (p.dense_mlp + p.shared_experts) / tp + p.router
    moe = m.moe
    if moe is not None:
        width = moe.expert_intermediate_size / (1 if ep > 1 else tp)
        reductions = ((2 / 3, float(m.hidden_size)), (1 / 3, float(width))) if m.gated_mlp else \
            ((0.5, float(m.hidden_size)), (0.5, float(width)))
    else:
        reductions = ()
    if m.mla is not None:
        a = m.mla
        flops_per_key = (4 * a.kv_lora_rank + 2 * a.qk_rope_head_dim) * m.num_heads / tp
    else:
        flops_per_key = 4 * m.num_heads * m.head_dim / tp
    return StepCosts(
        arch=m,
        tp=tp,
        ep=ep,
        dense_params=dense,
        head_params=head / tp,
        dense_weight_bytes=w.read_per_step_dense,
        expert_params=0.0 if moe is None else mlp_params(m.hidden_size, moe.expert_intermediate_size, m.gated_mlp) / (1 if ep > 1 else tp),
        expert_weight_bytes=w.expert,
        experts_per_gpu=0.0 if moe is None else moe.num_experts / max(ep, 1),
        num_experts=0 if moe is None else moe.num_experts,
        experts_per_token=0 if moe is None else moe.num_experts_per_token,
        moe_layers=m.num_moe_layers,
        kv_bytes_per_token_layer=kv_bytes_per_token_per_layer(m, kv_bytes, tp),
        attention_flops_per_key=flops_per_key,
        peak_flops_per_s=gpu.peak_flops_per_s(compute_precision),
        attention_peak_flops_per_s=gpu.dense_flops_per_s.bf16,
        bandwidth_bytes_per_s=gpu.memory_bandwidth_bytes_per_s,
        link_bytes_per_s=gpu.interconnect_bytes_per_s_per_direction,
        hidden_size=m.hidden_size,
        num_layers=m.num_layers,
        max_cudagraph_tokens=max_cudagraph_tokens,
        max_prefill_graph_tokens=max_prefill_graph_tokens,
        mla_layers=m.num_layers if m.mla is not None else 0,
        quantized_linears=quantized_linears(m) if compute_precision != "bf16" else 0,
        weight_only_fp4_moe_layers=(m.num_moe_layers if weight_format in ("mxfp4", "nvfp4") and compute_precision == "bf16"
                                    else 0),
        exposed_host_s=0.0 if async_scheduling else exposed_host_s,
        serial_host=not async_scheduling,
        expert_reductions=reductions,
    )


def quantized_linears(m: ModelArch) -> int:
    """The linear layers a step runs with quantized activations (W8A8 / W4A4): each gets its own activation
    quantization. Per layer: attention's projections (GQA: fused QKV and the output; MLA: the query (or its two
    low-rank halves), the compressed KV and the output; the absorbed KV up-projection runs in bf16), the MLP's
    fused gate/up and down, and for an MoE layer the routed experts' two grouped GEMMs plus a shared expert's two.
    The LM head stays bf16."""
    if m.mla is not None:
        attention = 3 + (1 if m.mla.q_lora_rank else 0)
    else:
        attention = 2
    shared = 2 if m.moe is not None and m.moe.num_shared_experts else 0
    return m.num_layers * (attention + 2) + m.num_moe_layers * shared


def fixed_overhead_s(c: StepCosts, eff: Efficiency) -> float:
    """A step's fixed host and launch cost whatever its tokens: per step, per layer, per MoE and MLA layer, per
    weight-only FP4 MoE layer, per quantized linear (step_parts and the simulator's Stepper both take it from here).
    Under pipeline parallelism a batch's step is pp stage steps, each with its own fixed cost, and the engine's
    exposed per-step CPU work is done for each of the pp batches in flight by one process: both count pp times."""
    return ((eff.step_overhead_s + c.exposed_host_s) * c.pp + eff.layer_overhead_s * c.num_layers
            + eff.moe_layer_overhead_s * c.moe_layers + eff.mla_layer_overhead_s * c.mla_layers
            + eff.fp4_moe_layer_s * c.weight_only_fp4_moe_layers + eff.quant_linear_s * c.quantized_linears)


def host_token_s(c: StepCosts, eff: Efficiency) -> float:
    """The engine's host work per sequence of a step, as one lane sees it: one process does it for every batch in
    flight, so under pipeline parallelism (pp batches, one per stage) each batch's step waits for pp times as much;
    under attention data parallel each of the dp_ranks processes does it for its own share of the batch; with more
    front-end processes streaming the tokens it falls to the engine core's share (c.host_scale)."""
    return eff.host_token_s * c.host_scale * c.pp / c.dp_ranks


def sequence_overhead_s(c: StepCosts, eff: Efficiency) -> float:
    """A step's non-overlapped cost per running sequence, as one lane sees it: each attention-DP rank pays it for
    its own sequences, side by side with the others."""
    return eff.sequence_overhead_s / c.dp_ranks


def pipeline_hops_s(c: StepCosts, eff: Efficiency, tokens):
    """The pp − 1 sends of a step's hidden states (tokens × hidden × 2 bytes) from each stage to the next, one
    after another on the batch's path: link latency plus bytes over the GPU's link each (0 without a pipeline)."""
    if c.pp <= 1:
        return 0.0
    return (c.pp - 1) * (eff.link_latency_s + np.asarray(tokens, dtype=float) * c.hidden_size * 2.0 / c.link_bytes_per_s)


def graph_limit(c: StepCosts, prefill_tokens: np.ndarray | float) -> np.ndarray | float:
    """The most tokens a step runs graphed: the prefill graphs' limit where it carries a prompt chunk (when the
    engine has its own, SGLang; TensorRT-LLM: none), else the one graph limit (vLLM: every step). Under attention
    data parallel each of the dp_ranks executors replays its own graph over its share of the batch, so the limit
    is per rank: the whole step's limit is dp_ranks times it."""
    if c.max_prefill_graph_tokens is None:  # one limit for every step: no per-step choice to make
        return c.max_cudagraph_tokens * c.dp_ranks
    return np.where(np.asarray(prefill_tokens) > 0, c.prefill_graph_limit, c.max_cudagraph_tokens) * c.dp_ranks


@dataclass(frozen=True)
class StepParts:
    """FLOPs, bytes and seconds of each operator class of a step (arrays broadcast over inputs)."""

    linear_flops: np.ndarray
    linear_bytes: np.ndarray
    expert_flops: np.ndarray
    expert_bytes: np.ndarray
    attention_flops: np.ndarray
    attention_bytes: np.ndarray
    comm_s: np.ndarray
    overhead_s: np.ndarray
    gpu_s: np.ndarray  # operators and communication, without the overheads
    host_s: np.ndarray  # the pipelined host floor (host_token_s × sequences)
    launch_s: np.ndarray  # what op-by-op launch adds to a step larger than the largest CUDA graph (0 when graphed)
    time_s: np.ndarray

    @property
    def flops(self) -> np.ndarray:
        return self.linear_flops + self.expert_flops + self.attention_flops

    @property
    def bytes(self) -> np.ndarray:
        return self.linear_bytes + self.expert_bytes + self.attention_bytes


@functools.cache
def expected_max_of_normals(n: int) -> float:
    """E[max of n independent standard normals] (0 for one): how far the busiest of n GPUs sits above the mean."""
    if n <= 1:
        return 0.0
    x = np.linspace(-8.0, 8.0, 4001)
    pdf = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    return float(np.sum(x * n * pdf * cdf ** (n - 1)) * (x[1] - x[0]))


def experts_read_per_gpu(c: StepCosts, tokens, straggler: bool = True):
    """Distinct experts of one GPU that a step of `tokens` tokens loads, on the GPU the step waits for.

    Each of the E experts is touched with probability p = 1 - (1 - k/E)^T (uniform routing). Without expert
    parallelism every GPU holds a slice of every touched expert: E·p of them. With EP over n GPUs each holds e = E/n
    experts and loads Binomial(e, p) of them; the step ends when the busiest GPU has, which reads about
    e·p + z_n·sqrt(e·p·(1 - p)) experts (z_n the expected maximum of n standard normals: 1.03 at 4 GPUs, 1.42 at 8),
    capped at e. At small decode batches that is up to 1.7× the mean (DeepSeek-R1 at EP 8, 4 sequences); real routing
    is more skewed than uniform, so this is the least the straggler costs. `straggler` False (the ideal bound):
    perfectly balanced GPUs, the mean."""
    t = np.maximum(np.asarray(tokens, dtype=float), 1e-9)
    p = compiled("experts_touched")(c.num_experts, c.experts_per_token, t) / c.num_experts
    e = c.experts_per_gpu
    mean = e * p
    if c.ep > 1 and straggler:
        mean = mean + expected_max_of_normals(c.ep) * np.sqrt(np.maximum(e * p * (1 - p), 0.0))
    return np.minimum(mean, e)


def step_parts(c: StepCosts, eff: Efficiency, decode_seqs, decode_context, prefill_tokens,
               prefill_keys_per_token, ideal: bool = False) -> StepParts:
    roof = compiled("roofline_time_s")
    d = np.asarray(decode_seqs, dtype=float)
    p = np.asarray(prefill_tokens, dtype=float)
    tokens = d + p
    logits_tokens = d + np.minimum(p, 1.0)  # the LM head runs for sampled positions only
    m = c.arch
    linear = compiled("linear_flops")
    lin_flops = linear(c.dense_params, tokens) + linear(c.head_params, logits_tokens)
    lin_bytes = np.full_like(tokens, c.dense_weight_bytes)
    if c.moe_layers:
        touched = experts_read_per_gpu(c, tokens, straggler=not ideal)
        exp_flops = 2 * c.experts_per_token * c.expert_params * tokens * c.moe_layers / c.ep
        exp_bytes = touched * c.expert_weight_bytes * c.moe_layers
    else:
        exp_flops = np.zeros_like(tokens)
        exp_bytes = np.zeros_like(tokens)
    ctx = np.asarray(decode_context, dtype=float)
    dec_keys = attended_tokens_decode(m, ctx)  # token-layers per decoding sequence
    attn_dec_bytes = d * dec_keys * c.kv_bytes_per_token_layer
    attn_dec_flops = d * dec_keys * c.attention_flops_per_key
    s = np.asarray(prefill_keys_per_token, dtype=float)
    attn_pre_flops = p * s * c.attention_flops_per_key
    attn_pre_bytes = p * m.num_layers * c.kv_bytes_per_token_layer  # writing the new KV
    attn_flops = attn_dec_flops + attn_pre_flops
    attn_bytes = attn_dec_bytes + attn_pre_bytes
    if c.tp > 1:
        msg = tokens * c.hidden_size * 2.0
        comm = 2 * c.num_layers * compiled("allreduce_time_s")(eff.link_latency_s, c.tp, msg, c.link_bytes_per_s, eff.link)
    else:
        comm = np.zeros_like(tokens)
    comm = comm + pipeline_hops_s(c, eff, tokens)
    overhead = fixed_overhead_s(c, eff) + sequence_overhead_s(c, eff) * (d + np.minimum(p, 1.0))
    # without a CUDA graph the CPU launches the step op by op: the GPU runs behind the dense layers' launches (a floor
    # under the step), while the fused-MoE path's launches add to it (eager_floor_s, eager_added_s)
    eager = tokens > graph_limit(c, p)
    floor = eager_floor_s(c, eff) * eager
    added = eager_added_s(c, eff) * eager
    if ideal:
        total_flops = lin_flops + exp_flops + attn_flops
        total_bytes = lin_bytes + exp_bytes + attn_bytes
        gpu = roof(total_flops, c.peak_flops_per_s, 1.0, total_bytes, c.bandwidth_bytes_per_s, 1.0) + comm
        host = np.zeros_like(tokens)
        launch = np.zeros_like(tokens)
        time = gpu
    else:
        t_lin = roof(lin_flops, c.peak_flops_per_s, eff.matmul, lin_bytes, c.bandwidth_bytes_per_s, eff.weight_bandwidth)
        t_exp = roof(exp_flops, c.peak_flops_per_s, moe_share(c, eff), exp_bytes, c.bandwidth_bytes_per_s,
                     eff.weight_bandwidth)
        t_dec = roof(attn_dec_flops, c.attention_peak_flops_per_s, eff.attention_matmul, attn_dec_bytes,
                     c.bandwidth_bytes_per_s, eff.kv_bandwidth)
        t_pre = roof(attn_pre_flops, c.attention_peak_flops_per_s, eff.attention_matmul, attn_pre_bytes,
                     c.bandwidth_bytes_per_s, eff.weight_bandwidth)
        gpu = t_lin + t_exp + t_dec + t_pre + comm
        host = host_token_s(c, eff) * (d + np.minimum(p, 1.0))
        base = gpu + overhead + host if c.serial_host else np.maximum(gpu + overhead, host)
        time = np.maximum(base, floor) + added
        launch = time - base  # what op-by-op launch adds to the step (0 when graphed)
    shape = np.broadcast_shapes(tokens.shape, np.shape(gpu), np.shape(time))
    return StepParts(lin_flops, lin_bytes, exp_flops, exp_bytes, attn_flops, attn_bytes,
                     np.broadcast_to(comm, shape), np.broadcast_to(overhead, shape), np.broadcast_to(gpu, shape),
                     np.broadcast_to(host, shape), np.broadcast_to(launch, shape), np.broadcast_to(time, shape))


def step_time_s(c: StepCosts, eff: Efficiency, decode_seqs, decode_context, prefill_tokens=0.0,
                prefill_keys_per_token=0.0, ideal: bool = False) -> np.ndarray:
    return step_parts(c, eff, decode_seqs, decode_context, prefill_tokens, prefill_keys_per_token, ideal).time_s



def draft_costs(m: ModelArch, w: WeightBytes, gpu: Gpu, kv_bytes: float, tp: int = 1,
                forward_host_s: float = 0.0) -> StepCosts:
    """A draft model's step costs on the target's GPUs: bf16 matmuls (vLLM quantizes a draft only when the
    speculative config asks, which this model does not read), the target's TP, and no CUDA graph: vLLM 0.26's V1
    drafter is taken to run its forwards op by op (`draft_forwards_s`); `forward_host_s`: the engine's CPU work per
    draft forward besides the launches (EngineProfile.draft_forward_host_s)."""
    c = build_costs(m, w, gpu, "bf16", kv_bytes, tp, 1, max_cudagraph_tokens=0.0)
    return replace(c, forward_host_s=forward_host_s)


def draft_forwards_s(c: StepCosts, eff: Efficiency, decode_seqs, decode_context, draft_tokens, first_tokens=1.0,
                     prefill_tokens=0.0, prefill_keys_per_token=0.0, ideal: bool = False) -> np.ndarray:
    """Time of the k = `draft_tokens` forwards a draft model (costs `c`) runs after each verification step: the first
    over the tokens each of the d sequences just gained (`first_tokens`, τ) plus the step's prompt chunk, the other
    k − 1 over one token per sequence, all at the sequences' context. The engine's per-token host work is the
    verify step's (priced there), not the draft's: host_token_s is left out here.

    Each forward runs op by op: the CPU launches it (the calibration's eager per-layer launch × layers, plus the
    engine's per-forward host work `c.forward_host_s`) while the GPU runs behind, so a forward lasts
    max(GPU work + the per-layer/per-sequence overheads, CPU launch + host work): host-bound for small batches,
    GPU-bound once the draft's KV reads outgrow the launches (64 sequences of 1,152 tokens: 8.5 GB of the
    draft's KV per forward). Adding the launch to the GPU work instead (the target's eager rule, built for MoE
    layers that synchronize) misses sitting 12 by -15 % / +1 % / +29 % at 1 / 16 / 64 clients."""
    k = np.asarray(draft_tokens, dtype=float)
    if not np.any(k > 0):
        return np.zeros(np.broadcast_shapes(np.shape(decode_seqs), np.shape(prefill_tokens)))
    e = draft_efficiency(eff)
    cpu = draft_cpu_s(c, eff)

    def seconds(parts: StepParts):
        return parts.time_s if ideal else np.maximum(parts.gpu_s + parts.overhead_s, cpu)

    first, rest = draft_forward_parts(c, e, decode_seqs, decode_context, first_tokens, prefill_tokens,
                                      prefill_keys_per_token, ideal)
    return np.where(k > 0, seconds(first) + np.maximum(k - 1, 0.0) * seconds(rest), 0.0)


def draft_efficiency(eff: Efficiency) -> Efficiency:
    """The factors a draft's forwards run at: the target's, without the per-token host work (the verify step pays it)."""
    return eff.model_copy(update={"host_token_s": 0.0})


def draft_cpu_s(c: StepCosts, eff: Efficiency) -> float:
    """The CPU time of one draft forward (the engine's per-forward figure, launches included, plus an MoE draft's
    fused-MoE launches): the floor under each of its forwards. A draft does not pay the target's eager floor per layer:
    at 0.76 ms per layer Qwen3-0.6B's four drafts would take 85 ms of a verification step measured at 22.9 ms (sitting
    12)."""
    return c.forward_host_s + eager_added_s(c, eff)


def eager_floor_s(c: StepCosts, eff: Efficiency) -> float:
    """The CPU time to launch a step's layers op by op where the GPU runs behind the launches: a floor under the step.
    Measured (sitting 21, Qwen3-8B FP8, the same prompts at default graphs and with graphs to 2,048): 5-11 ms slower
    eager at 768-1,536 tokens, equal at 2,048 and 4,096, where the GPU step is longer than the launch. A layer on
    vLLM's fused-MoE path is not in it: that path waits for the GPU inside the layer, so its whole launch is added
    (`eager_added_s`). An MLA layer's attention launches more host work than a GQA layer's, also behind the GPU: a
    floor of eager_mla_layer_overhead_s per MLA layer besides (DeepSeek-V2-Lite's eager prompts, sitting 14b: +49 ms at
    768-1,024 tokens over the GQA layers' constants, +11 ms at 4,096 where the GPU step is longer)."""
    return eff.eager_layer_overhead_s * (c.num_layers - fused_moe_layers(c)) + eff.eager_mla_layer_overhead_s * c.mla_layers


def fused_moe_layers(c: StepCosts) -> int:
    """MoE layers on vLLM's fused-MoE path (weight-only FP4 experts run Triton's matmul_ogs instead)."""
    return c.moe_layers - c.weight_only_fp4_moe_layers


def eager_added_s(c: StepCosts, eff: Efficiency) -> float:
    """The launch of a layer on vLLM's fused-MoE path (all its kernels, attention included), added to the step: its eager cost stays when the GPU step is
    long (sitting 6: +25 ms at 640 and 1,024 decoding sequences alike; sitting 22: Qwen3-30B-A3B's eager prompts flat
    at 62-80 ms from 640 to 2,048 tokens). Weight-only FP4 experts (MXFP4 on Hopper) run Triton's matmul_ogs instead,
    which does not pay it: gpt-oss-20b's lone prompts of 512 and 1,024 tokens (sitting 20; the second eager, the first
    graphed) differ by 6.2 ms where that launch cost alone would add 13.7 ms."""
    return eff.eager_moe_layer_overhead_s * fused_moe_layers(c)


def draft_key_ratio(c: StepCosts) -> float:
    """Keys a draft reads per key of its target (both summed over layers): layers of the draft / of the target."""
    return c.draft.num_layers / max(c.num_layers, 1)


def draft_forward_parts(c: StepCosts, eff: Efficiency, decode_seqs, decode_context, first_tokens=1.0,
                        prefill_tokens=0.0, prefill_keys_per_token=0.0, ideal: bool = False) -> tuple[StepParts, StepParts]:
    """The operators of a draft model's forwards after a verification step: the first over the tokens each of the d
    sequences just gained (`first_tokens`, τ) plus the step's prompt chunk, each later one over one token per
    sequence (the time model `draft_forwards_s` and the power model both price these)."""
    d = np.asarray(decode_seqs, dtype=float)
    return (step_parts(c, eff, d * first_tokens, decode_context, prefill_tokens, prefill_keys_per_token, ideal),
            step_parts(c, eff, d, decode_context, 0.0, 0.0, ideal))
