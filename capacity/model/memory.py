"""Engine-faithful memory accounting: what is left for the KV cache, in tokens and sequences.

The KV memory itself follows each engine's rule (`EngineProfile.kv_cache_bytes`, capacity/engines/); the rest
of this module is vLLM's block accounting, used for every engine.

vLLM: KV memory = usable × gpu_memory_utilization − weights − activation peak of the profile run
(a forward of max_num_batched_tokens tokens, and the sampler warm-up over max_num_seqs logits:
`activation_peak_bytes`) − non-torch memory − CUDA graphs. Blocks = KV memory ÷ (block bytes × layers
per pool); hybrid sliding/full models share pools between layer groups (vLLM's hybrid allocator).

The token count vLLM prints ("GPU KV cache size") is blocks × block size for uniform full-attention models, but
for hybrid ones and for models whose every layer is windowed (Mistral 7B v0.1) it is max_model_len × the number
of max_model_len requests the blocks hold, where a sliding-window group's request holds at most window − 1 +
in-flight tokens (+1 block): Gemma 3 27B on an H200 prints 551,292 tokens for 61,9xx blocks, i.e. 4.2 requests of
131,072 tokens; Mistral 7B v0.1 prints 1,492,542 tokens for 933,5xx token slots (45.55 requests of 32,768 tokens,
each holding 4,095 + 2 × 8,192 tokens + 1 block). `kv_capacity_tokens` follows that rule so it can be checked
against the log; concurrency comes from `max_sequences`, not from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from capacity.model.architecture import ModelArch
from capacity.engines.base import EngineProfile
from capacity.model.kv import kv_bytes_per_token_per_layer


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


def lean_profile(m: ModelArch, profile: EngineProfile) -> bool:
    """True when the engine profiles this model on its lean path: vLLM 0.26.0 runs dense models and a few MoE
    architectures (`lean_moe_architectures`) on its V2 model runner, whose sampler warm-up holds the bf16 logits
    only and which estimates no CUDA-graph memory; other MoE models take the V1 runner (full sampler, graph
    estimate subtracted). vllm/config/vllm.py: use_v2_model_runner, DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES."""
    if not profile.lean_profile_run:
        return False
    return m.moe is None or m.architecture in profile.lean_moe_architectures


def moe_workspace_bytes(m: ModelArch, profile: EngineProfile, tokens: int, tp: int = 1, ep: int = 1) -> float:
    """The fused-MoE workspace the profile run allocates and keeps: vLLM's Triton experts (bf16, fp8) take two
    buffers from the workspace manager, tokens × k × max(f, h) and tokens × k × max(2f, h) bf16 values (f the
    expert width on this GPU: f_e ÷ TP, or f_e whole under expert parallelism; h the hidden size), and the
    manager holds them after the run (vllm/v1/worker/workspace.py, fused_moe/experts/triton_moe.py
    workspace_shapes). MXFP4 checkpoints (gpt-oss) take the OAI Triton kernels, which allocate per call and keep
    nothing: 0 here."""
    if m.moe is None or m.native_quantization == "mxfp4":
        return 0.0
    f = m.moe.expert_intermediate_size / (1 if ep > 1 else tp)
    h = m.hidden_size
    per_token = m.moe.num_experts_per_token * (max(f, h) + max(2 * f, h))
    return profile.moe_activation_factor * tokens * per_token * 2


def mla_profile_bytes(m: ModelArch, profile: EngineProfile, tp: int) -> float:
    """The buffer an MLA layer allocates in the profile run to stand for the worst-case up-projected prefill context
    (`kv_b_proj(kv_c_normed)`): chunked_prefill_workspace_size × heads/TP × (qk_nope + v head dims) bf16 values,
    the workspace being max(min(max(8 × max_model_len, 4 × max_num_seqs × block), 65,536), max_num_seqs × block)
    tokens (vLLM 0.26.0 model_executor/layers/attention/mla_attention.py: MLAAttention.forward_impl when
    attn_metadata is None, determine_chunked_prefill_workspace_size). max_model_len is taken as the model's context.
    DeepSeek-V2-Lite: 65,536 × 16 × 256 × 2 B = 0.5 GiB. 0 for other attention or engines."""
    if m.mla is None or not profile.mla_profile_buffer:
        return 0.0
    block = profile.block_size_tokens
    context = m.max_position_embeddings or profile.max_num_batched_tokens
    tokens = max(min(max(8 * context, 4 * profile.max_num_seqs * block), 65_536), profile.max_num_seqs * block)
    return tokens * (m.num_heads / tp) * (m.mla.qk_nope_head_dim + m.mla.v_head_dim) * 2


def embedding_copy_bytes(m: ModelArch, profile: EngineProfile, tp: int) -> float:
    """The profile window's cold-compile moment: a bf16 buffer the size of this GPU's token-embedding table
    (vocabulary padded to 64, ÷ TP) beside the first layer's outputs, the embedding and its RMSNorm (2 × tokens × h
    bf16; one at TP > 1, where an all-reduce separates them). The logs set its shape (Llama-3.1-8B 1.10, Qwen3-8B
    1.29, Qwen3-14B and Qwen3-32B 1.61 GiB = V × h × 2 + 2 × 8,192 × h × 2 within 0.006 GiB, whatever the MLP's
    width; Gemma 3, fed inputs_embeds, shows none); vLLM's Python allocates no such buffer, so it is taken to be
    torch.compile's: 0.26.0 compiles inside the profile window (vllm/compilation/decorators.py: aot_compile in the first
    forward, within gpu_worker.determine_available_memory's memory_profiling). Multimodal models get the embeddings
    from outside the compiled graph (v1/worker/gpu/model_runner.py execute_model: inputs_embeds), so 0 for them.
    With --quantization fp8 the same moment printed 0.03-0.04 GiB more (Llama-3.1-8B, Qwen3-8B, Qwen3-32B; ~ one fp8
    copy of tokens × h), not counted: the precision is not an argument here."""
    if not profile.embedding_copy or m.vision_params:
        return 0.0
    tokens = min(profile.max_num_batched_tokens, 10**6)
    vocab = math.ceil(m.vocab_size / 64) * 64
    return vocab / tp * m.hidden_size * 2 + (2 if tp == 1 else 1) * tokens * m.hidden_size * 2


def activation_peak_bytes(m: ModelArch, profile: EngineProfile, tp: int, ep: int = 1) -> float:
    """Peak memory the profile run adds (vLLM's "peak activation"), for a dummy batch of max_num_batched_tokens
    tokens in min(max_num_seqs, tokens) requests: the largest of the moments below (+ a fixed overhead once the
    forward runs), or the cold compile's embedding-table copy (`embedding_copy_bytes`), whichever is larger.

    Forward, per token, bf16 values alive at a layer's peak: the attention output and two residual copies
    (q/TP + 2h), plus a dense MLP's gate/up output and activation (3 × width/TP) or, in a MoE layer, the shared
    experts' (3 × width/TP) on top of the fused-MoE workspace (`moe_workspace_bytes`, kept from the first MoE
    layer on; MXFP4 experts instead allocate k × f per call), times `activation_bytes_per_token` (1: the live set as
    counted). MLA layers: during attention, the workspace, the attention tensors and the profile-only
    up-projection buffer (`mla_profile_bytes`).
    Sampler warm-up: the workspace and the hidden states the run keeps, plus the sampler's own buffers:
    full path (vLLM's V1 runner) bf16 logits + fp32 copy + probabilities + exponential noise = 3.5 fp32 logits
    per request (`sampler_copies`) and a top-k/top-p scratch of `sampler_scratch_rows` vocab-wide fp32 rows; lean
    path (`lean_profile`) the bf16 logits alone (`lean_sampler_copies`); with speculative decoding the full path also
    holds fp32 draft probabilities, `spec_draft_rows` rows per request. Logits are all-gathered: the vocabulary
    is not divided by TP, and at TP > 1 the gather holds this GPU's slice, the gathered buffer and its reordered copy
    (reqs × V × (1/TP + 2) bf16; distributed/device_communicators/base_device_communicator.py all_gather).
    vLLM 0.26.0 on an H200 printed 2.68, 1.87, 2.87 GiB for Qwen3-30B-A3B, Mixtral-8x7B, gpt-oss-20b (full path: the
    sampler sets their peaks), 1.1, 1.29, 1.61 GiB for Llama-3.1-8B, Qwen3-8B, Qwen3-14B (the embedding copy), 0.93,
    1.24 GiB for Mistral-7B, Gemma 3 27B (the MLP) and 1.09 GiB for DeepSeek-V2-Lite (MLA attention);
    tests/test_activation_peak.py checks every printed peak in the committed logs.
    """
    tokens = min(profile.max_num_batched_tokens, 10**6)
    reqs = min(profile.max_num_seqs, tokens)
    h = m.hidden_size
    per_token = profile.activation_bytes_per_token * tokens * 2  # bytes per bf16 value of every token
    attention = m.q_dim / tp + 2 * h
    has_dense = m.moe is None or m.moe.num_dense_layers > 0
    workspace = moe_workspace_bytes(m, profile, tokens, tp, ep)
    forward = per_token * (3 * m.intermediate_size / tp + attention) if has_dense else 0.0
    if m.moe is not None:
        moe = attention + 3 * m.moe.shared_expert_intermediate_size / tp
        if m.native_quantization == "mxfp4":
            moe += m.moe.num_experts_per_token * m.moe.expert_intermediate_size / (1 if ep > 1 else tp)
        forward = max(forward, workspace + per_token * moe)
    mla = mla_profile_bytes(m, profile, tp)
    if mla:
        forward = max(forward, workspace + mla + per_token * attention)
    if lean_profile(m, profile):
        sampler = profile.lean_sampler_copies * reqs * m.vocab_size * 4
    else:
        sampler = ((profile.sampler_copies + profile.spec_draft_rows) * reqs
                   + min(profile.sampler_scratch_rows, reqs)) * m.vocab_size * 4
    if sampler and tp > 1:
        sampler = max(sampler, reqs * m.vocab_size * 2 * (1 / tp + 2))
    kept = workspace + tokens * h * 2 if sampler else 0.0
    return max(max(forward, kept + sampler) + profile.profile_overhead_bytes, embedding_copy_bytes(m, profile, tp))


def kv_groups(m: ModelArch) -> tuple[int, int]:
    """(number of KV cache groups, layers per group) as vLLM's hybrid allocator forms them."""
    full, sliding = m.num_full_layers, m.num_sliding_layers
    if full == 0 or sliding == 0:
        return 1, m.num_layers
    lo, hi = min(full, sliding), max(full, sliding)
    size = hi if hi < 1.5 * lo else lo
    return math.ceil(full / size) + math.ceil(sliding / size), size


def uniform_kv(m: ModelArch, groups: int) -> bool:
    """True when every layer keeps every token (one full-attention group): a request of n tokens takes n tokens'
    blocks, and the printed KV cache size is blocks × block size."""
    return (groups == 1 and m.num_sliding_layers == 0) or not m.sliding_window


def request_blocks(m: ModelArch, groups: int, layers_per_group: int, profile: EngineProfile, length: int) -> int:
    """Blocks one request of `length` tokens takes at most: every block of it in full-attention groups; in
    sliding-window groups at most window − 1 + in-flight tokens, + 1 block (see the module docstring)."""
    block = profile.block_size_tokens
    if uniform_kv(m, groups):
        return groups * math.ceil(length / block)
    full_groups = math.ceil(m.num_full_layers / layers_per_group)
    held = min(m.sliding_window - 1 + profile.in_flight_batches * profile.max_num_batched_tokens, length)
    return full_groups * math.ceil(length / block) + (groups - full_groups) * (math.ceil(held / block) + 1)


def reported_tokens(m: ModelArch, num_blocks: int, groups: int, layers_per_group: int, profile: EngineProfile,
                    max_model_len: int) -> int:
    """The KV cache size in tokens as vLLM prints it (see the module docstring)."""
    if uniform_kv(m, groups) or max_model_len <= 0:
        return num_blocks // groups * profile.block_size_tokens
    return int(num_blocks / request_blocks(m, groups, layers_per_group, profile, max_model_len) * max_model_len)


def longest_request(m: ModelArch, plan: MemoryPlan, profile: EngineProfile, max_model_len: int, ranks: int = 1) -> int:
    """The longest request, up to `max_model_len` tokens, that one rank's KV blocks hold whole (`request_blocks`):
    what vLLM's start-up check asks of one max_model_len request (vllm/v1/core/kv_cache_utils.py
    _check_enough_kv_cache_memory), and the longest max_model_len it would start with. For a uniform model this is
    the KV cache size in tokens (`kv_capacity_tokens`); for a hybrid one it is not (that size is max_model_len × the
    requests of max_model_len tokens the blocks hold), but it falls below max_model_len exactly when that size does."""
    blocks = plan.num_blocks // ranks
    fits = lambda n: request_blocks(m, plan.num_groups, plan.layers_per_group, profile, n) <= blocks  # noqa: E731
    if fits(max_model_len):
        return max_model_len
    lo, hi = 0, max_model_len  # fits(lo) or lo == 0; not fits(hi): request_blocks grows with the length
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def plan_memory(m: ModelArch, usable_bytes: float, weight_bytes: float, kv_bytes: float,
                profile: EngineProfile, tp: int = 1, max_model_len: int | None = None, ep: int = 1,
                extra_kv_bytes_per_token: float = 0.0, attention_dp: bool = False) -> MemoryPlan:
    """`extra_kv_bytes_per_token` (per GPU): layers of another model in the same pool, a draft model's (vLLM V1's
    drafter shares the KV cache: each block then holds its tokens' KV in both models' layers). Sitting 12, Qwen3-8B
    + Qwen3-0.6B on an H200: 106.66 GiB ÷ (144 + 112 KiB) = 436,880 tokens, the log's count.
    `attention_dp`: attention data parallel over the tp GPUs: each GPU keeps the whole KV (every head, or MLA's one
    latent) of its own sequences, so a block holds a token's whole KV and the replica's pool is tp GPUs' blocks (the
    plan describes that pool, as if the GPUs shared it; a sequence really lives on one of them)."""
    budget = profile.budget_bytes(usable_bytes)
    act = activation_peak_bytes(m, profile, tp, ep)
    graphs = profile.cuda_graph_bytes + (0.0 if lean_profile(m, profile) else profile.moe_cuda_graph_bytes)
    kv_mem = profile.kv_cache_bytes(usable_bytes, weight_bytes, act, graphs)  # the engine's memory rule
    per_token_layer = kv_bytes_per_token_per_layer(m, kv_bytes, 1 if attention_dp else tp)
    groups, layers_per_group = kv_groups(m)
    page = per_token_layer * profile.block_size_tokens
    block_bytes = page * layers_per_group + extra_kv_bytes_per_token * profile.block_size_tokens
    num_blocks = max(0, int(kv_mem // block_bytes)) if kv_mem > 0 else 0
    tokens = reported_tokens(m, num_blocks, groups, layers_per_group, profile,
                             max_model_len or m.max_position_embeddings)
    if attention_dp:
        num_blocks, tokens = num_blocks * tp, tokens * tp
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
