"""Engine profiles: the scheduler limits and memory rules an engine applies out of the box.

`vllm` follows vLLM 0.26 defaults on a GPU with >= 70 GiB (OpenAI server): gpu_memory_utilization 0.92,
chunked prefill with an 8192-token budget per step, at most 1024 running sequences, 16-token blocks,
CUDA graphs captured up to 512 tokens. `sglang` follows SGLang 0.5.17: its memory fraction, prefill chunk and
largest decode CUDA graph depend on the GPU's memory (`sglang_defaults`), prefill batches run alone, pages
hold one token. Sliding-window models use vLLM's hybrid-allocator rule for both (SGLang's own SWA pool is
not modelled). `ideal` has no limits but memory.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from capacity.errors import WorkloadError


class EngineProfile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    gpu_memory_utilization: float = Field(gt=0, le=1)
    max_num_batched_tokens: int = Field(gt=0, description="token budget per step (chunked prefill)")
    max_num_seqs: int = Field(gt=0)
    block_size_tokens: int = Field(gt=0)
    non_torch_bytes: float = Field(ge=0, description="CUDA context growth, cuBLAS/NCCL workspaces counted by the profiler")
    cuda_graph_bytes: float = Field(ge=0, description="memory taken by captured CUDA graphs before KV allocation")
    activation_bytes_per_token: float = Field(ge=0, description="multiplier on the profile run's per-token activation estimate")
    sampler_copies: float = Field(ge=0, description="fp32 logits-sized buffers alive in the sampler warm-up")
    moe_activation_factor: float = Field(ge=0, description="fused-MoE workspaces per routed token, in units of (2·f_e + h) bf16 values")
    moe_cuda_graph_bytes: float = Field(0.0, ge=0, description="CUDA-graph estimate subtracted from the KV budget for MoE models")
    max_cudagraph_tokens: int = Field(512, ge=0, description="steps with more tokens run without CUDA graphs")
    in_flight_batches: int = Field(2, ge=1, description="batches scheduled but not finished (async scheduling: 2); "
                                   "a sliding-window group may hold window − 1 + this × token budget tokens")
    mixed_prefill: bool = Field(True, description="prefill chunks ride in decode steps (vLLM); False: a prefill "
                                                  "batch runs alone while running sequences wait (SGLang's default)")


VLLM = EngineProfile(
    name="vllm",
    gpu_memory_utilization=0.92,
    max_num_batched_tokens=8192,
    max_num_seqs=1024,
    block_size_tokens=16,
    non_torch_bytes=0.22 * 2**30,  # vLLM 0.26.0 on H200: "0.22 GiB for non-torch memory" (0.24 for the MoE)
    cuda_graph_bytes=0.0,  # 0.26.0 reports CUDA-graph memory (~1 GiB) but does not subtract it from the KV budget
    activation_bytes_per_token=1.0,
    sampler_copies=2.25,  # Llama-3.1-8B: 1.1 GiB peak = 2.25 × 1024 × 128256 × 4 B; Qwen3-8B: 1.29 GiB likewise
    moe_activation_factor=5.7,  # Qwen3-30B-A3B: 2.68 GiB peak activation; the only MoE measured so far
    # 0.26.0 printed "Estimated CUDA graph memory: 0.64 GiB" and subtracted it for Qwen3-30B-A3B, but printed
    # no estimate (and subtracted none) for the three dense models: measured behaviour, cause not yet known
    moe_cuda_graph_bytes=0.64 * 2**30,
)

IDEAL = EngineProfile(
    name="ideal",
    gpu_memory_utilization=1.0,
    max_num_batched_tokens=10**9,
    max_num_seqs=10**9,
    block_size_tokens=1,
    non_torch_bytes=0.0,
    cuda_graph_bytes=0.0,
    activation_bytes_per_token=0.0,
    sampler_copies=0.0,
    moe_activation_factor=0.0,
    max_cudagraph_tokens=0,
    in_flight_batches=1,
)

# SGLang 0.5.17 defaults. Its KV pool is (free memory at start × mem_fraction_static) − weights: on the H200,
# 139.13 GiB free × 0.903 − 15.02 GiB = 110.61 GiB, and its log says K + V = 110.60 GiB. The fraction, the chunk
# size and the largest decode CUDA graph follow from the GPU's memory (sglang_defaults); the numbers here are
# the H200's. Pages of 1 token; no activation or sampler term (the reserve 1 − fraction covers them).
SGLANG = EngineProfile(
    name="sglang",
    gpu_memory_utilization=0.903,
    max_num_batched_tokens=8192,
    # max_running_requests = clamp(KV tokens ÷ context length × 512, 2,048, 4,096): 3,539 for Llama-3.1-8B on
    # the H200; only the upper bound is kept, it binds only beyond 2,048 short requests running at once
    max_num_seqs=4096,
    block_size_tokens=1,
    # memory in use before SGLang reads the free memory (CUDA context: 139.8 − 139.13 GiB on the H200), which
    # the fraction then scales: 0.67 GiB × 0.903
    non_torch_bytes=0.6 * 2**30,
    cuda_graph_bytes=0.0,
    activation_bytes_per_token=0.0,
    sampler_copies=0.0,
    moe_activation_factor=0.0,
    max_cudagraph_tokens=256,  # decode graphs up to 256 sequences on GPUs of 60-160 GiB at tp < 4
    in_flight_batches=1,
    mixed_prefill=False,
)

PROFILES = {"vllm": VLLM, "sglang": SGLANG, "ideal": IDEAL}
MiB = 2**20


def sglang_defaults(gpu_memory_bytes: float, tp: int = 1, chunk: int | None = None) -> dict[str, float | int]:
    """SGLang 0.5.17's per-GPU defaults (server_args.py): chunked-prefill size and the largest decode CUDA
    graph by memory tier, then mem_fraction_static = 1 − reserve ÷ memory, where the reserve (MiB) is
    512 + 1.5 × chunk + 128 × tp + 2 × max graph batch + 8 × prefill graph sizes, at least 10 GiB above 60 GiB.
    A `chunk` given (--chunked-prefill-size) replaces the tier's and enters the reserve."""
    mem_mib = gpu_memory_bytes / MiB
    tiers = ((20, 2048, 8, 8), (35, 2048, 24, 80), (60, 4096, 32, 160), (90, 8192, 256, 512), (160, 8192, 256, 512))
    tier_chunk, max_bs = 16384, 512
    for limit_gib, this_chunk, small_tp_bs, large_tp_bs in tiers:
        if mem_mib < limit_gib * 1024:
            tier_chunk, max_bs = this_chunk, (small_tp_bs if tp < 4 else large_tp_bs)
            break
    chunk = chunk or tier_chunk
    prefill_sizes = [x for x in (*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *range(576, 1025, 64),
                                 *range(1280, 4097, 256), *range(4608, chunk + 1, 512)) if x <= chunk]
    reserve = 512 + max(chunk, 2048) * 1.5 + tp * 1024 / 8 + 2 * max_bs + 8 * len(prefill_sizes)
    if mem_mib > 60 * 1024:
        reserve = max(reserve, 10 * 1024)
    return {"gpu_memory_utilization": round((mem_mib - reserve) / mem_mib, 3), "max_num_batched_tokens": chunk,
            "max_cudagraph_tokens": max_bs}


def engine_profile(name: str, gpu_memory_bytes: float | None = None, tp: int = 1,
                   **overrides: float | int) -> EngineProfile:
    """The engine's profile; for SGLang its defaults for this GPU's memory and TP when `gpu_memory_bytes` is given.
    Overrides (None = keep) come last."""
    try:
        base = PROFILES[name.lower()]
    except KeyError:
        raise WorkloadError(f"unknown engine profile '{name}'; choose one of {', '.join(PROFILES)}") from None
    if base.name == "sglang" and gpu_memory_bytes:
        base = base.model_copy(update=sglang_defaults(gpu_memory_bytes, tp, overrides.get("max_num_batched_tokens")))
    clean = {k: v for k, v in overrides.items() if v is not None}
    return base.model_copy(update=clean) if clean else base
