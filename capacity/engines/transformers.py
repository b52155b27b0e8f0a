"""Hugging Face Transformers (`transformers serve`), the baseline: no paged KV pool, no engine limits to set.

- Memory: no pool is reserved; the cache grows in whatever is left after the weights (fraction 1 of the usable
  memory, no activation term), one token per "page".
- Scheduling: one request at a time. Measured (H200, sitting 4, 1024/128): 8 concurrent users got 0.24
  requests/s against 0.23 for one, i.e. no batching across requests.
- No CUDA graphs: every step launched op by op (max_cudagraph_tokens 0).
The model's factors are vLLM's or the literature's: a rough baseline, not calibrated for this engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from capacity.engines.base import Engine, EngineProfile, Flag, FlagTable
from capacity.engines.flags import precision_from_quantization

PROFILE = EngineProfile(
    name="transformers",
    gpu_memory_utilization=1.0,
    max_num_batched_tokens=10**9,  # a whole prompt per step
    max_num_seqs=1,
    block_size_tokens=1,
    non_torch_bytes=0.0,
    cuda_graph_bytes=0.0,
    activation_bytes_per_token=0.0,
    sampler_copies=0.0,
    moe_activation_factor=0.0,
    max_cudagraph_tokens=0,
    in_flight_batches=1,
    mixed_prefill=False,
)


def limits(gpu_memory_bytes: float | None, tp: int, overrides: Mapping[str, Any]) -> EngineProfile:
    return PROFILE


FLAGS = FlagTable((
    Flag("dtype", "--dtype", "weights dtype"),
    Flag("quantization", "--quantization", "bitsandbytes quantization (bnb-4bit, bnb-8bit)",
         read=precision_from_quantization),
))

ENGINE = Engine(name="transformers", title="Transformers", flags=FLAGS, limits=limits,
                source="transformers serve (transformers 5) and the H200 baseline runs of sitting 4")
