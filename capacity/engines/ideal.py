"""The ideal engine: every byte left after the weights is KV cache, and no engine limit applies (no token budget
per step, no sequence cap, no activation reserve, one-token pages, no CUDA-graph launch floor). With the IDEAL
calibration it gives the roofline bound (`--ideal`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from capacity.engines.base import Engine, EngineProfile, FlagTable

UNLIMITED = 10**9

PROFILE = EngineProfile(
    name="ideal",
    gpu_memory_utilization=1.0,
    max_num_batched_tokens=UNLIMITED,
    max_num_seqs=UNLIMITED,
    block_size_tokens=1,
    non_torch_bytes=0.0,
    cuda_graph_bytes=0.0,
    activation_bytes_per_token=0.0,
    sampler_copies=0.0,
    moe_activation_factor=0.0,
    max_cudagraph_tokens=UNLIMITED,  # every step graphed: no launch floor
    in_flight_batches=1,
)


def limits(gpu_memory_bytes: float | None, tp: int, overrides: Mapping[str, Any]) -> EngineProfile:
    return PROFILE


ENGINE = Engine(name="ideal", title="Ideal roofline", flags=FlagTable(), limits=limits,
                source="no engine: the bound")
