"""Engine-faithful memory accounting: what is left for the KV cache, in tokens and sequences.

The KV memory itself follows each engine's rule (`EngineProfile.kv_cache_bytes`, capacity/engines/); the rest
of this module is vLLM's block accounting, used for every engine.

vLLM: KV memory = usable × gpu_memory_utilization − weights − activation peak of the profile run
(a forward of max_num_batched_tokens tokens, and the sampler warm-up over max_num_seqs logits)
− non-torch memory − CUDA graphs. Blocks = KV memory ÷ (block bytes × layers per pool); hybrid
sliding/full models share pools between layer groups (vLLM's hybrid allocator).

The token count vLLM prints ("GPU KV cache size") is blocks × block size for uniform models, but for hybrid
ones it is max_model_len × the number of max_model_len requests the blocks hold, where a sliding-window
group's request holds at most window − 1 + in-flight tokens (+1 block): Gemma 3 27B on an H200 prints
551,292 tokens for 61,9xx blocks, i.e. 4.2 requests of 131,072 tokens. `kv_capacity_tokens` follows that
rule so it can be checked against the log; concurrency comes from `max_sequences`, not from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from capacity.architecture import ModelArch
from capacity.engines.base import EngineProfile
from capacity.kv import kv_bytes_per_token_per_layer


@dataclass(frozen=True)
class MemoryPlan:
    usable_bytes: float
    budget_bytes: float  # usable × utilization
    weight_bytes: float
    activation_bytes: float
    non_torch_bytes: float
    cuda_graph_bytes: float
    kv_cache_bytes: float
    kv_bytes_per_token_layer: float
    num_blocks: int
    kv_capacity_tokens: int  # as the engine reports it ("GPU KV cache size")
    num_groups: int  # KV cache groups (1 unless hybrid)
    layers_per_group: int


def activation_peak_bytes(m: ModelArch, profile: EngineProfile, tp: int) -> float:
    """Peak transient memory of the profile run: max(forward of the token budget, sampler warm-up).

    Forward, per token (bf16): the dense MLP intermediate (gate+up, activation: 3 × width) plus the
    attention projections and a few residual copies of the hidden state; MoE layers hold fused-MoE
    workspaces per routed token (k × (2·f_e + h) values, `moe_activation_factor` times). Sampler:
    max_num_seqs × vocab fp32 logits, `sampler_copies` times. vLLM 0.26.0 on H200 printed 1.1, 1.29 and
    2.68 GiB for Llama-3.1-8B, Qwen3-8B and Qwen3-30B-A3B: the sampler sets the peak for the dense
    models, the MoE workspaces for the MoE.
    """
    tokens = min(profile.max_num_batched_tokens, 10**6)
    dense_width = m.intermediate_size if (m.moe is None or m.moe.num_dense_layers) else 0
    per_token = (3 * dense_width / tp + 4 * m.hidden_size + (m.q_dim + 2 * m.num_kv_heads * m.head_dim) / tp) * 2
    if m.moe is not None:
        routed = m.moe.num_experts_per_token * (2 * m.moe.expert_intermediate_size / tp + m.hidden_size) * 2
        per_token += profile.moe_activation_factor * routed
    forward = profile.activation_bytes_per_token * tokens * per_token
    sampler = profile.sampler_copies * min(profile.max_num_seqs, tokens) * m.vocab_size * 4
    return max(forward, sampler)


def kv_groups(m: ModelArch) -> tuple[int, int]:
    """(number of KV cache groups, layers per group) as vLLM's hybrid allocator forms them."""
    full, sliding = m.num_full_layers, m.num_sliding_layers
    if full == 0 or sliding == 0:
        return 1, m.num_layers
    lo, hi = min(full, sliding), max(full, sliding)
    size = hi if hi < 1.5 * lo else lo
    return math.ceil(full / size) + math.ceil(sliding / size), size


def reported_tokens(m: ModelArch, num_blocks: int, groups: int, layers_per_group: int, profile: EngineProfile,
                    max_model_len: int) -> int:
    """The KV cache size in tokens as vLLM prints it (see the module docstring)."""
    block = profile.block_size_tokens
    if groups == 1 or not m.sliding_window or max_model_len <= 0:
        return num_blocks // groups * block
    full_groups = math.ceil(m.num_full_layers / layers_per_group)
    held = min(m.sliding_window - 1 + profile.in_flight_batches * profile.max_num_batched_tokens, max_model_len)
    per_request = (full_groups * math.ceil(max_model_len / block)
                   + (groups - full_groups) * (math.ceil(held / block) + 1))
    return int(num_blocks / per_request * max_model_len)


def plan_memory(m: ModelArch, usable_bytes: float, weight_bytes: float, kv_bytes: float,
                profile: EngineProfile, tp: int = 1, max_model_len: int | None = None) -> MemoryPlan:
    budget = profile.budget_bytes(usable_bytes)
    act = activation_peak_bytes(m, profile, tp)
    graphs = profile.cuda_graph_bytes + (profile.moe_cuda_graph_bytes if m.moe is not None else 0.0)
    kv_mem = profile.kv_cache_bytes(usable_bytes, weight_bytes, act, graphs)  # the engine's memory rule
    per_token_layer = kv_bytes_per_token_per_layer(m, kv_bytes, tp)
    groups, layers_per_group = kv_groups(m)
    page = per_token_layer * profile.block_size_tokens
    num_blocks = max(0, int(kv_mem // page // layers_per_group)) if kv_mem > 0 else 0
    tokens = reported_tokens(m, num_blocks, groups, layers_per_group, profile,
                             max_model_len or m.max_position_embeddings)
    return MemoryPlan(usable_bytes, budget, weight_bytes, act, profile.non_torch_bytes, graphs,
                      max(kv_mem, 0.0), per_token_layer, num_blocks, tokens, groups, layers_per_group)


def blocks_per_sequence(m: ModelArch, context, plan: MemoryPlan, block: int) -> np.ndarray:
    """Blocks one sequence of `context` tokens holds (vectorized): full-attention groups keep all its
    blocks; sliding-window groups keep the window plus one partial block."""
    ctx = np.maximum(np.asarray(context, dtype=float), 1.0)
    full_blocks = np.ceil(ctx / block)
    window = float(m.sliding_window or 0)
    sliding_blocks = np.minimum(full_blocks, math.ceil(window / block) + 1) if window else full_blocks
    if m.num_sliding_layers == 0:
        return plan.num_groups * full_blocks
    if m.num_full_layers == 0:
        return plan.num_groups * sliding_blocks
    full_groups = math.ceil(m.num_full_layers / plan.layers_per_group)
    return full_groups * full_blocks + (plan.num_groups - full_groups) * sliding_blocks


def max_sequences(m: ModelArch, context, plan: MemoryPlan, block: int) -> np.ndarray:
    """Sequences of `context` tokens that fit in the KV cache at once (vectorized)."""
    return np.floor(plan.num_blocks / blocks_per_sequence(m, context, plan, block))
