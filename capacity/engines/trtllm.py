"""TensorRT-LLM (trtllm-serve, PyTorch backend), from its documented rules; not yet measured here.

- Memory: the KV cache gets kv_cache_free_gpu_memory_fraction (KvCacheConfig.free_gpu_memory_fraction,
  default 0.9) of the memory that is FREE after the weights and buffers are allocated ("Free GPU memory fraction
  reserved for KV Cache, after allocating model weights and buffers": trtllm-serve --help; default 0.9:
  KvCacheConfig in the LLM-API reference and the "How to Change KV Cache Behavior" example). The activation
  workspace is not estimated (0): a first-order rule until a start-up log is measured.
- Limits: max_batch_size 2,048 requests and max_num_tokens 8,192 tokens per step, the LLM-API build defaults
  that its start-up line prints ("max_seq_len=…, max_num_requests=2048, max_num_tokens=8192", the line
  validate/engines/trtllm.py parses). Some trtllm-serve releases document other command-line defaults (256 or
  8 requests); pass --max_batch_size to be sure.
- Scheduling: in-flight batching puts new requests' context phase into the same step as running generations
  (the "Tuning Max Batch Size and Max Num Tokens" guide), so prefill mixes with decode; chunked prefill
  (enable_chunked_prefill) is off by default, i.e. a whole prompt enters one step. The model's budget per step
  is max_num_tokens either way.
- KV blocks: tokens_per_block 32 (KvCacheConfig). CUDA graphs (cuda_graph_config) are captured up to
  max_batch_size when enabled; taken here as off by default (eager), which the options file can change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from capacity.engines.base import Engine, EngineProfile, Flag, FlagTable
from capacity.engines.flags import expert_parallel_size, limit, tensor_parallel

PROFILE = EngineProfile(
    name="trtllm",
    gpu_memory_utilization=0.9,
    memory_fraction_of="free_after_weights",
    max_num_batched_tokens=8192,
    max_num_seqs=2048,
    block_size_tokens=32,
    non_torch_bytes=0.0,
    cuda_graph_bytes=0.0,
    activation_bytes_per_token=0.0,
    sampler_copies=0.0,
    moe_activation_factor=0.0,
    max_cudagraph_tokens=0,
    in_flight_batches=1,
    mixed_prefill=True,
)


def limits(gpu_memory_bytes: float | None, tp: int, overrides: Mapping[str, Any]) -> EngineProfile:
    """The documented defaults do not depend on the GPU."""
    return PROFILE


# dtype, KV dtype and load format go to the --extra_llm_api_options file (validate/engines/trtllm.py)
FLAGS = FlagTable((
    Flag("tensor_parallel_size", "--tp_size", "GPUs per replica (tensor parallel)",
         read=tensor_parallel, write=lambda s: s.get("tp")),
    Flag("expert_parallel_size", "--ep_size", "GPUs the MoE experts are sharded over", read=expert_parallel_size),
    Flag("max_model_len", "--max_seq_len", "longest request, tokens (prompt + output)",
         read=limit("max_model_len", int), write=lambda s: s.get("max_model_len")),
    Flag("max_num_seqs", "--max_batch_size", "requests scheduled at once",
         read=limit("max_num_seqs", int), write=lambda s: s.get("max_num_seqs")),
    Flag("max_num_batched_tokens", "--max_num_tokens", "tokens per step, after padding is removed",
         read=limit("max_num_batched_tokens", int), write=lambda s: s.get("max_num_batched_tokens")),
    Flag("gpu_memory_utilization", "--kv_cache_free_gpu_memory_fraction",
         "fraction of the memory FREE after weights and buffers that becomes KV cache",
         read=limit("gpu_memory_utilization", float), write=lambda s: s.get("gpu_memory_utilization")),
))

ENGINE = Engine(name="trtllm", title="TensorRT-LLM", flags=FLAGS, limits=limits,
                source="TensorRT-LLM docs: trtllm-serve --help, KvCacheConfig, the max-batch-size tuning guide")
