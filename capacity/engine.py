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


VLLM = EngineProfile(
    name="vllm",
    gpu_memory_utilization=0.92,
    max_num_batched_tokens=8192,
    max_num_seqs=1024,
    block_size_tokens=16,
    non_torch_bytes=0.6 * 2**30,
    cuda_graph_bytes=0.0,
    activation_bytes_per_token=1.0,
    sampler_copies=2.0,
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
)

PROFILES = {"vllm": VLLM, "ideal": IDEAL}


def engine_profile(name: str, **overrides: float | int) -> EngineProfile:
    try:
        base = PROFILES[name.lower()]
    except KeyError:
        raise WorkloadError(f"unknown engine profile '{name}'; choose one of {', '.join(PROFILES)}") from None
    clean = {k: v for k, v in overrides.items() if v is not None}
    return base.model_copy(update=clean) if clean else base
