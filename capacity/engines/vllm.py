"""vLLM 0.26 (OpenAI server): its defaults, memory rule, scheduling regime and flags.

Defaults are those of a GPU with >= 70 GiB (vLLM's usage-context defaults for the OpenAI server; smaller GPUs
get 2,048 tokens and 256 sequences there, which this model does not yet follow): gpu_memory_utilization 0.92
of the total memory, chunked prefill with an 8,192-token budget per step (prefill chunks ride in decode steps),
at most 1,024 running sequences, 16-token blocks, CUDA graphs captured up to 512 tokens. Sliding-window models
use vLLM's hybrid-allocator rule (capacity.memory).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from capacity.engines.base import Engine, EngineProfile, Flag, FlagTable
from capacity.engines.flags import (data_parallel, expert_parallel_switch, graphs_off, graphs_to, kv_fp8, limit, precision_fp8,
                                    precision_from_quantization, tensor_parallel)

GiB = 2**30
MAX_NUM_SEQS = 1024
MAX_NUM_BATCHED_TOKENS = 8192
LARGEST_DEFAULT_GRAPH_TOKENS = 512


def default_graph_tokens(max_num_seqs: int, max_num_batched_tokens: int) -> int:
    """vLLM's largest CUDA graph when none is set: min(2 × max_num_seqs, 512, max_num_batched_tokens) tokens
    (vllm/config/vllm.py; the CPU build 0.32 also raises the 512 to 1,024 on Blackwell, not followed here: the
    calibration is 0.26's on an H200)."""
    return min(2 * max_num_seqs, LARGEST_DEFAULT_GRAPH_TOKENS, max_num_batched_tokens)


PROFILE = EngineProfile(
    name="vllm",
    gpu_memory_utilization=0.92,
    max_num_batched_tokens=MAX_NUM_BATCHED_TOKENS,
    max_num_seqs=MAX_NUM_SEQS,
    block_size_tokens=16,
    non_torch_bytes=0.22 * GiB,  # vLLM 0.26.0 on H200: "0.22 GiB for non-torch memory" (0.24 for the MoE)
    cuda_graph_bytes=0.0,  # 0.26.0 reports CUDA-graph memory (~1 GiB) but does not subtract it from the KV budget
    activation_bytes_per_token=1.0,
    sampler_copies=2.25,  # Llama-3.1-8B: 1.1 GiB peak = 2.25 × 1024 × 128256 × 4 B; Qwen3-8B: 1.29 GiB likewise
    moe_activation_factor=5.7,  # Qwen3-30B-A3B: 2.68 GiB peak activation; the only MoE measured so far
    # 0.26.0 printed "Estimated CUDA graph memory: 0.64 GiB" and subtracted it for Qwen3-30B-A3B, but printed
    # no estimate (and subtracted none) for the three dense models: measured behaviour, cause not yet known
    moe_cuda_graph_bytes=0.64 * GiB,
    max_cudagraph_tokens=default_graph_tokens(MAX_NUM_SEQS, MAX_NUM_BATCHED_TOKENS),
    in_flight_batches=2,
    mixed_prefill=True,
)


def limits(gpu_memory_bytes: float | None, tp: int, overrides: Mapping[str, Any]) -> EngineProfile:
    """The same on every GPU this model covers (see the module docstring), except that the largest CUDA graph
    follows the sequence limit and the token budget (`default_graph_tokens`)."""
    graphs = default_graph_tokens(overrides.get("max_num_seqs") or MAX_NUM_SEQS,
                                  overrides.get("max_num_batched_tokens") or MAX_NUM_BATCHED_TOKENS)
    return PROFILE if graphs == PROFILE.max_cudagraph_tokens else PROFILE.model_copy(update={"max_cudagraph_tokens": graphs})


FLAGS = FlagTable((
    Flag("dtype", "--dtype", "weights and activations dtype (bfloat16, float16, auto)"),
    Flag("quantization", "--quantization", "weight format of the checkpoint or on-the-fly (fp8, awq, ...)",
         read=precision_from_quantization, write=precision_fp8, aliases=("-q",)),
    Flag("kv_cache_dtype", "--kv-cache-dtype", "KV cache element type (auto, fp8, fp8_e4m3, fp8_e5m2)",
         read=kv_fp8, write=lambda s: "fp8" if s.get("kv_precision") == "fp8" else None),
    Flag("tensor_parallel_size", "--tensor-parallel-size", "GPUs per replica (tensor parallel)",
         read=tensor_parallel, write=lambda s: s.get("tp"), aliases=("-tp",)),
    Flag("data_parallel_size", "--data-parallel-size", "replicas behind one server", aliases=("-dp",),
         read=data_parallel, write=lambda s: s.get("replicas") if (s.get("replicas") or 1) > 1 else None),
    Flag("expert_parallel", "--enable-expert-parallel", "MoE experts sharded over the TP GPUs",
         read=expert_parallel_switch, switch=True),
    Flag("max_model_len", "--max-model-len", "longest request, tokens (input + output)",
         read=limit("max_model_len", int), write=lambda s: s.get("max_model_len")),
    Flag("gpu_memory_utilization", "--gpu-memory-utilization",
         "fraction of the GPU's TOTAL memory vLLM may use (weights, activations, graphs and KV cache)",
         read=limit("gpu_memory_utilization", float), write=lambda s: s.get("gpu_memory_utilization")),
    Flag("max_num_seqs", "--max-num-seqs", "running sequences at most",
         read=limit("max_num_seqs", int), write=lambda s: s.get("max_num_seqs")),
    Flag("max_num_batched_tokens", "--max-num-batched-tokens", "tokens per step (chunked-prefill budget)",
         read=limit("max_num_batched_tokens", int), write=lambda s: s.get("max_num_batched_tokens")),
    Flag("enforce_eager", "--enforce-eager", "no CUDA graphs: every step launched op by op",
         read=graphs_off, write=lambda s: s.get("max_cudagraph_tokens") == 0, switch=True),
    Flag("max_cudagraph_capture_size", "--max-cudagraph-capture-size", "largest CUDA graph, in TOKENS per step",
         read=graphs_to, write=lambda s: s.get("max_cudagraph_tokens") or None),
))

ENGINE = Engine(name="vllm", title="vLLM", flags=FLAGS, limits=limits,
                source="vLLM 0.26.0 defaults (vllm/config, vllm/engine/arg_utils.py), H200 measurements")
