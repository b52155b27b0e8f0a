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
- Scheduling: the capacity scheduler (default GUARANTEED_NO_EVICT) admits a request only when its prompt plus
  maximum output fit and never pauses one ("Useful Runtime Options"); in-flight batching puts new requests'
  context phase into the same step as running generations (the "Tuning Max Batch Size and Max Num Tokens"
  guide), so prefill mixes with decode; chunked prefill
  (enable_chunked_prefill) is off by default, i.e. a whole prompt enters one step. The model's budget per step
  is max_num_tokens either way.
- KV blocks: tokens_per_block 32 (KvCacheConfig).
- CUDA graphs: on by default for steps of decoding requests only, up to 128 of them per executor (TorchLlmArgs:
  `cuda_graph_config` has `default_factory=CudaGraphConfig`, and a config without batch sizes takes
  max_batch_size 128; the field's doc: "enabled for batches that consist of decoding requests *only*"; read in
  tensorrt_llm/llmapi/llm_args.py of the 1.x releases, 2026-12-05). A step that carries a prompt runs op by op
  (no prefill graphs: max_prefill_graph_tokens 0). Releases up to 0.20 had `use_cuda_graph` False by default;
  the published rows mapped in validate/public/scenario.py set their own graphs. Those op-by-op steps are not
  priced with vLLM's measured eager costs (`op_by_op_priced` False): TensorRT-LLM's own are not measured here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from capacity.engines.base import Engine, EngineProfile, Flag, FlagTable
from capacity.engines.flags import expert_parallel_size, limit, pipeline_parallel, pipeline_stages, tensor_parallel

if TYPE_CHECKING:
    from capacity.model.architecture import ModelArch

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
    max_cudagraph_tokens=128,
    max_prefill_graph_tokens=0,
    # its op-by-op steps launch TensorRT-LLM's fused ops (attention with RoPE and KV append in one op, the CUTLASS
    # MoE with its routing) under the overlap scheduler, not vLLM's eager layers, whose measured costs (0.9 ms per
    # dense layer, 2 ms more per MLA layer) would floor a DeepSeek-R1 step at ~130 ms: unmeasured, taken as hidden
    op_by_op_priced=False,
    in_flight_batches=1,
    mixed_prefill=True,
    # under pipeline parallelism max_batch_size bounds each micro-batch: trtllm-bench divides its batch by PP
    # (bench_limits below) so that the pipeline's micro-batches together hold what the KV cache holds (an inference
    # from the harness, not from a documented rule)
    running_limit_per_batch=True,
    # with enable_attention_dp max_batch_size is each rank's (the DeepSeek-R1 blog's "max_batch_size 896 per rank")
    running_limit_per_rank=True,
    # the capacity scheduler's default GUARANTEED_NO_EVICT admits a request only when its prompt plus its maximum
    # output fit, and never pauses one ("Useful Runtime Options", SchedulerConfig.capacity_scheduler_policy)
    reserve_output_at_admission=True,
    preempts=False,
)


def limits(gpu_memory_bytes: float | None, tp: int, overrides: Mapping[str, Any]) -> EngineProfile:
    """The documented defaults do not depend on the GPU."""
    return PROFILE


# dtype, KV dtype and load format go to the --extra_llm_api_options file (validate/engines/trtllm.py)
FLAGS = FlagTable((
    Flag("tensor_parallel_size", "--tp_size", "GPUs per replica (tensor parallel)",
         read=tensor_parallel, write=lambda s: s.get("tp")),
    Flag("pipeline_parallel_size", "--pp_size", "pipeline stages of tensor-parallel GPUs each",
         read=pipeline_parallel, write=pipeline_stages),
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


# trtllm-bench throughput (the harness of TensorRT-LLM's published perf overview) picks max_batch_size and
# max_num_tokens itself from the dataset's lengths and a rough memory estimate (tensorrt_llm/bench/build/tuning.py,
# calc_engine_setting and finetune_setting, read at NVIDIA/TensorRT-LLM main, 2026-12-01): KV room =
# kv_fraction × (total GPU memory − parameters × bytes per weight), tokens of 2 × layers × max(tp, KV heads) × head
# size × KV bytes; requests = room ÷ tokens per request; batch = min(requests, 4,096) ÷ PP rounded up on a ladder
# (multiples of 32 from 64, 128 from 256, 256 from 1,024); token budget = min(batch × (1 + ISL/OSL), 32,768) rounded
# up (multiples of 256 from 2,048, 512 from 4,096, 1,024 from 8,192). This is the rule of every release the corpus's
# overview tables come from (v0.17 to v1.2): the harness's ModelConfig reads `param_count` as the safetensors
# element count (a packed FP4 byte holds two weights and counts once, so an NVFP4 checkpoint's "engine size" is
# about half its bytes: PR #13498, 2026-04-27, fixed that and made the batch per attention-DP rank) and its head
# size from the config's head_dim, else hidden ÷ heads, with no MLA case (PR #16707, 2026-07-22, added one: the
# plain formula overstated DeepSeek's KV per token ~25×). `bench_model_inputs` gives those inputs.
BENCH_MAX_BATCH = 4096
BENCH_MAX_TOKENS = 32768


def _ladder(x: float, steps: tuple[tuple[float, int], ...], floor: int) -> int:
    for below, step in steps:
        if x < below:
            return max(floor, step * math.ceil(x / step))
    return steps[-1][1] * math.ceil(x / steps[-1][1])


def bench_model_inputs(m: ModelArch, weight_format: str) -> tuple[float, int]:
    """(parameter count, head size) as trtllm-bench's ModelConfig reads them from a checkpoint in `weight_format`:
    the safetensors element count, and the config's head_dim, else hidden ÷ heads (MLA configs give none: DeepSeek's
    7,168 ÷ 128). A quantized weight's bytes are one-byte elements (packed FP4 pairs or FP8 values, and their FP8
    scales), so its elements are its bytes; the bf16 rest counts one element per two bytes."""
    # imported here: the engine's flag tables are read without the capacity model (tests/test_validate_cli.py)
    from capacity.model.precision import HIGH_PRECISION_BYTES
    from capacity.model.weights import weight_bytes
    head = m.hidden_size // m.num_heads if m.mla is not None else m.head_dim
    w = weight_bytes(m, "bf16" if weight_format == "fp16" else weight_format)
    quantized = 0.0 if weight_format in ("bf16", "fp16") else w.attention + w.dense_mlp + w.routed_experts + w.shared_experts
    return quantized + (w.total - quantized) / HIGH_PRECISION_BYTES, head


def bench_limits(params: float, weight_bytes_per_param: float, layers: int, kv_heads: int, head_dim: int,
                 kv_bytes: float, gpu_memory_bytes: float, tp: int, pp: int, isl: int, osl: int,
                 kv_fraction: float = 0.95) -> tuple[int, int]:
    """(max_batch_size, max_num_tokens) that trtllm-bench throughput sets for a dataset of isl/osl requests."""
    per_token = 2 * layers * max(tp, kv_heads) * head_dim * kv_bytes
    room = kv_fraction * (gpu_memory_bytes * tp * pp - params * weight_bytes_per_param)
    requests = max(room / (per_token * (isl + osl)), 1.0)
    raw_batch = min(requests, BENCH_MAX_BATCH) / pp
    raw_tokens = min(raw_batch * (1 + isl / osl), BENCH_MAX_TOKENS)
    batch = _ladder(raw_batch, ((256, 32), (1024, 128), (math.inf, 256)), 64)
    tokens = _ladder(raw_tokens, ((4096, 256), (8192, 512), (math.inf, 1024)), 2048)
    return batch, tokens
