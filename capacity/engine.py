"""Engine profiles: the scheduler limits and memory rules an engine applies out of the box.

`vllm` follows vLLM 0.26 defaults on a GPU with >= 70 GiB (OpenAI server): gpu_memory_utilization 0.92,
chunked prefill with an 8192-token budget per step, at most 1024 running sequences, 16-token blocks,
CUDA graphs captured up to 512 tokens. `ideal` has no limits but memory.
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

PROFILES = {"vllm": VLLM, "ideal": IDEAL}


def engine_profile(name: str, **overrides: float | int) -> EngineProfile:
    try:
        base = PROFILES[name.lower()]
    except KeyError:
        raise WorkloadError(f"unknown engine profile '{name}'; choose one of {', '.join(PROFILES)}") from None
    clean = {k: v for k, v in overrides.items() if v is not None}
    return base.model_copy(update=clean) if clean else base
