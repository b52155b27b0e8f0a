"""A deployment plan: the model's weights, memory and step costs on one GPU of a replica.

Checks that the parallel layout is valid and that the model fits, and says why when it does not.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from capacity.model.architecture import ModelArch
from capacity.engines.base import EngineProfile
from capacity.errors import DoesNotFitError, WorkloadError
from capacity.hardware import Gpu
from capacity.model.kv import kv_bytes_per_token
from capacity.model.memory import MemoryPlan, blocks_per_sequence, max_sequences, plan_memory
from capacity.model.params import active_params_per_token, count_params
from capacity.model.precision import compute_precision, kv_bytes_per_element, resolve_weight_format
from capacity.model.steptime import StepCosts, build_costs, draft_costs
from capacity.units import GB, KiB
from capacity.model.weights import WeightBytes, weight_bytes


@dataclass(frozen=True)
class Plan:
    model: ModelArch
    gpu: Gpu
    profile: EngineProfile
    weight_format: str
    compute_precision: str
    kv_element_bytes: float
    tp: int
    ep: int
    replicas: int
    weights: WeightBytes
    memory: MemoryPlan
    costs: StepCosts
    total_params: int
    active_params: int
    kv_bytes_per_token: float
    notes: tuple[str, ...] = field(default=())

    def max_concurrent(self, context) -> np.ndarray | int:
        """Sequences of `context` tokens one replica holds at once: KV room, capped by max_num_seqs."""
        fit = max_sequences(self.model, context, self.memory, self.profile.block_size_tokens)
        out = np.minimum(fit, self.profile.max_num_seqs)
        return int(out) if np.ndim(out) == 0 else out

    def max_running(self, isl, osl) -> np.ndarray:
        """Sequences that run at once in steady state: a running sequence holds isl + osl/2 tokens on average."""
        mean_ctx = np.asarray(isl, dtype=float) + np.asarray(osl, dtype=float) / 2
        fit = max_sequences(self.model, mean_ctx, self.memory, self.profile.block_size_tokens)
        return np.maximum(np.minimum(fit, self.profile.max_num_seqs), 1.0)


def _check_layout(m: ModelArch, gpu: Gpu, num_gpus: int, tp: int) -> list[str]:
    notes = []
    if num_gpus % tp:
        raise WorkloadError(f"num_gpus ({num_gpus}) must be a multiple of tp ({tp})")
    if m.num_heads % tp:
        raise WorkloadError(f"tp={tp} does not divide the model's {m.num_heads} attention heads")
    if tp > m.num_kv_heads and m.mla is None:
        notes.append(f"tp={tp} > {m.num_kv_heads} KV heads: KV heads are replicated, each GPU stores a full head")
    if tp > gpu.scale_up_domain_size:
        notes.append(f"tp={tp} spans more than one {gpu.scale_up_domain_size}-GPU {gpu.interconnect_name} domain: "
                     "all-reduce would cross the slower scale-out network, which this model does not price")
    return notes


def make_plan(m: ModelArch, gpu: Gpu, precision: str, kv_precision: str, profile: EngineProfile,
              num_gpus: int = 1, tp: int = 1, expert_parallel: bool = False, context: int = 1,
              max_model_len: int | None = None, draft: ModelArch | None = None) -> Plan:
    """`draft`: a draft_model speculator's architecture. Its bf16 weights add to the weights (vLLM quantizes a
    draft only when the speculative config says so, which is not read here), its KV bytes per token add to the
    target's (vLLM V1 puts the drafter's attention layers in the same KV cache pool), and its step costs ride in
    the plan's (`StepCosts.draft`)."""
    notes = _check_layout(m, gpu, num_gpus, tp)
    fmt = resolve_weight_format(precision, gpu.fp4_formats, m.native_quantization)
    cp = compute_precision(fmt, gpu.fp4_formats, gpu.dense_flops_per_s.fp8 is not None)
    if cp == "bf16" and fmt != "bf16":
        notes.append(f"{gpu.name} has no {fmt} tensor cores: weight-only {fmt}, matmuls at the bf16 rate")
    kv_b = kv_bytes_per_element(kv_precision)
    ep = tp if (expert_parallel and m.moe is not None) else 1
    w = weight_bytes(m, fmt, tp, ep)
    w_draft = weight_bytes(draft, "bf16", tp, 1) if draft is not None else None
    draft_kv = kv_bytes_per_token(draft, kv_b, tp) if draft is not None else 0.0
    mem = plan_memory(m, gpu.usable_memory_bytes, w.total + (w_draft.total if w_draft else 0.0), kv_b, profile, tp,
                      max_model_len, extra_kv_bytes_per_token=draft_kv)
    need_ctx = max(context, max_model_len or 0)
    per_seq_blocks = float(blocks_per_sequence(m, need_ctx, mem, profile.block_size_tokens))
    if mem.kv_cache_bytes <= 0 or mem.num_blocks < per_seq_blocks:
        raise DoesNotFitError(
            f"{m.name} ({fmt}) does not fit on {num_gpus // tp if num_gpus >= tp else 1}×{tp} {gpu.id}: per GPU, "
            f"weights {w.total / GB:.1f} GB + activations {mem.activation_bytes / GB:.1f} GB + overhead "
            f"{(mem.non_torch_bytes + mem.cuda_graph_bytes) / GB:.1f} GB leave "
            f"{max(mem.kv_cache_bytes, 0) / GB:.2f} GB of the {mem.budget_bytes / GB:.1f} GB budget for KV cache, "
            f"{mem.num_blocks:,} blocks of {profile.block_size_tokens} tokens; one request of {need_ctx:,} tokens "
            f"needs {per_seq_blocks:,.0f}. "
            f"Try more GPUs (tp), a lower precision, fp8 KV cache or shorter sequences")
    # 0 = no CUDA graphs (--enforce-eager): every step is launched op by op
    costs: StepCosts = build_costs(m, w, gpu, cp, kv_b, tp, ep, profile.max_cudagraph_tokens,
                                   profile.async_scheduling, profile.exposed_step_host_s,
                                   profile.max_prefill_graph_tokens, fmt)
    if draft is not None:
        costs = replace(costs, draft=draft_costs(draft, w_draft, gpu, kv_b, tp, profile.draft_forward_host_s))
        notes.append(f"draft model {draft.name}: bf16 weights, {draft_kv * tp / KiB:,.0f} KiB of KV per token on top of the "
                     "target's; its forwards priced op by op after each verification step")
    return Plan(m, gpu, profile, fmt, cp, kv_b, tp, ep, num_gpus // tp, w, mem, costs,
                count_params(m).total, active_params_per_token(m),
                kv_bytes_per_token(m, kv_b, 1) + (kv_bytes_per_token(draft, kv_b, 1) if draft is not None else 0.0),
                tuple(notes))
