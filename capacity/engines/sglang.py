"""SGLang 0.5.17: its per-GPU defaults, memory rule, scheduling regime and flags.

Memory: the KV pool is (free memory at start × mem_fraction_static) − weights. On the H200, 139.13 GiB free
× 0.903 − 15.02 GiB = 110.61 GiB, and its log says K + V = 110.60 GiB. The model writes this as usable ×
fraction − weights − non-torch, with non-torch = the memory in use before SGLang reads the free memory (CUDA
context: 139.8 − 139.13 GiB on the H200) scaled by the fraction (0.67 GiB × 0.903 ≈ 0.6 GiB). No activation or
sampler term: the reserve 1 − fraction covers them. Pages of one token.
Scheduling: a prefill batch runs alone while the running sequences wait (no mixed chunked prefill by default).
The fraction, the prefill chunk and the largest decode CUDA graph follow from the GPU's memory (`sglang_defaults`).
CUDA graphs: decode batches up to the largest decode graph (256 sequences on the H200); prefill batches replay graphs
captured at token counts up to the chunk, so a lone prompt is never launched op by op (sitting 14: Qwen3-30B-A3B's
1,024-token prompt 36 ms on SGLang, 66–110 ms on vLLM 0.26 at default graphs, 35 ms on vLLM with graphs to 2,048) —
except for MLA models (DeepSeek-V2/V3/R1) and on ROCm, where 0.5.17 turns its prefill graphs off: their prompts
pay the op-by-op launch, priced with vLLM's measured eager costs (SGLang's own were never timed here).
Receiving: with --scheduler-recv-interval N > 1 the scheduler reads new requests off its socket only when a counter
reaches N; each loop iteration adds 1 after a decode (or verify) step or none at all, 1000 after a prefill or mixed
step (SGLang 0.5.9–0.5.17 `SchedulerRecvSkipper`; read from the release wheels). In steady decode an arrival waits
for the next read, N decode steps apart; after a prefill the next iteration reads at once. An idle scheduler runs no
GPU work between its iterations, so its wait is taken as none.
Sliding-window models use vLLM's hybrid-allocator rule (SGLang's own SWA pool is not modelled).
Attention kernels: priced as the engine's default on NVIDIA and as aiter's on ROCm. SGLang picks aiter on ROCm only
when the attention heads per GPU (the config's KV heads ÷ TP) are 16 or 128, Triton otherwise (server_args.py, every
0.5.x read: "current aiter only support head number 16 or 128"), so DeepSeek-R1 at TP 4 runs Triton unless
--attention-backend aiter is given. Triton attention on ROCm is not priced: the card calls it an unsupported feature.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from capacity.engines.base import Engine, EngineProfile, Flag, FlagTable
from capacity.engines.flags import (attention_dp_switch, data_parallel, expert_parallel_size, graphs_off, graphs_to,
                                    kv_fp8, limit, pipeline_parallel, pipeline_stages, precision_fp8,
                                    precision_from_quantization, tensor_parallel)
from capacity.errors import WorkloadError

MiB = 2**20
GiB = 2**30
REFERENCE_GPU = "h200-sxm"  # the GPU SGLang was measured on: its defaults when no GPU is named


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


def limits(gpu_memory_bytes: float | None, tp: int, overrides: Mapping[str, Any]) -> EngineProfile:
    """SGLang's limits on a GPU of this memory (None: the reference GPU's); a chunk size given enters the reserve."""
    chunk = overrides.get("max_num_batched_tokens")
    if not gpu_memory_bytes:
        from capacity.hardware import load_gpu  # the catalog, read only when no GPU is named

        gpu_memory_bytes = load_gpu(REFERENCE_GPU).usable_memory_bytes
    defaults = sglang_defaults(gpu_memory_bytes, tp, chunk)
    if overrides.get("gpu_memory_utilization"):  # a fraction given replaces the one the chunk's reserve would set
        defaults["gpu_memory_utilization"] = overrides["gpu_memory_utilization"]
    elif defaults["gpu_memory_utilization"] <= 0:
        raise WorkloadError(f"max_num_batched_tokens: SGLang's default memory fraction for a {chunk:,}-token chunk "
                            "reserves all of the GPU's memory; set gpu_memory_utilization (--mem-fraction-static)")
    return EngineProfile(
        name="sglang",
        **defaults,
        memory_fraction_of="total",
        # max_running_requests = clamp(KV tokens ÷ context length × 512, 2,048, 4,096): 3,539 for Llama-3.1-8B on
        # the H200; only the upper bound is kept, it binds only beyond 2,048 short requests running at once
        max_num_seqs=4096,
        block_size_tokens=1,
        non_torch_bytes=0.6 * GiB,  # see the module docstring: 0.67 GiB of CUDA context × the fraction
        cuda_graph_bytes=0.0,
        activation_bytes_per_token=0.0,
        sampler_copies=0.0,
        moe_activation_factor=0.0,
        in_flight_batches=1,
        mixed_prefill=False,
        reserve_output_at_admission=True,
        # prefill batches replay CUDA graphs captured at token counts up to the chunk ("breakable" backend, on by
        # default in 0.5.17: "Capture target prefill CUDA graph ... num_tokens=[4, ..., 8192]" in every start-up
        # log); --disable-cuda-graph (max_cudagraph_tokens 0) turns them off with the decode graphs
        max_prefill_graph_tokens=0 if overrides.get("max_cudagraph_tokens") == 0 else int(defaults["max_num_batched_tokens"]),
        # ... except for MLA models (DeepSeek-V2/V3/R1) and on ROCm, where 0.5.17 turns them off (server_args.py of the
        # 0.5.17 wheel, read 2026-12-04; it exempts DeepSeek's sparse-attention MLA models, V3.2, which the model does
        # not tell apart and prices op by op too); before 0.5.10 prefill graphs were opt-in
        # (--enable-piecewise-cuda-graph), so the InferenceX 0.5.9 runs of DeepSeek-R1 ran them eager too. Its other
        # automatic switches (DP attention, pipeline stages, MoE all-to-all) are not modelled
        prefill_graphs_skip_mla=True,
        prefill_graphs_nvidia_only=True,
    )


ROCM_AITER_HEADS_PER_GPU = (16, 128)  # the head counts SGLang's aiter attention takes on ROCm
PRICED_ROCM_ATTENTION = ("aiter",)


def heads_per_gpu(num_kv_heads: int, tp: int) -> int:
    """The attention heads per GPU SGLang's backend choice reads (the config's KV heads ÷ TP)."""
    return num_kv_heads // max(tp, 1)


def attention_backend(chosen: str | None, vendor: str, num_kv_heads: int, tp: int) -> str:
    """The attention kernels SGLang runs: the one chosen (--attention-backend), else on ROCm aiter at 16 or 128
    attention heads per GPU and Triton otherwise; on NVIDIA its own default ("default")."""
    if chosen:
        return chosen
    if vendor != "AMD":
        return "default"
    return "aiter" if heads_per_gpu(num_kv_heads, tp) in ROCM_AITER_HEADS_PER_GPU else "triton"


def unpriced(s, gpu, model) -> list[str]:
    """What of an SGLang configuration the model does not price: attention other than aiter's on ROCm."""
    backend = attention_backend(s.attention_backend, gpu.vendor, model.num_kv_heads, s.tp)
    if gpu.vendor != "AMD" or backend in PRICED_ROCM_ATTENTION:
        return []
    why = ("chosen" if s.attention_backend else
           f"SGLang's default at {heads_per_gpu(model.num_kv_heads, s.tp)} attention heads per GPU")
    return [f"SGLang's {backend} attention on ROCm ({why}): the model prices aiter's kernels "
            "(--attention-backend aiter)"]


FLAGS = FlagTable((
    Flag("dtype", "--dtype", "weights and activations dtype"),
    Flag("quantization", "--quantization", "weight format (fp8, awq, ...)",
         read=precision_from_quantization, write=precision_fp8),
    Flag("kv_cache_dtype", "--kv-cache-dtype", "KV cache element type (auto, fp8_e4m3, fp8_e5m2)",
         read=kv_fp8, write=lambda s: "fp8_e4m3" if s.get("kv_precision") == "fp8" else None),
    Flag("tensor_parallel_size", "--tp-size", "GPUs per replica (tensor parallel)",
         read=tensor_parallel, write=lambda s: s.get("tp"), aliases=("--tensor-parallel-size", "--tp")),
    Flag("pipeline_parallel_size", "--pp-size", "pipeline stages of tensor-parallel GPUs each",
         read=pipeline_parallel, write=pipeline_stages, aliases=("--pipeline-parallel-size", "--pp")),
    # with --enable-dp-attention the DP size is the attention's, over the TP GPUs (SGLang's docs: --tp N --dp N
    # --enable-dp-attention); without it, replicas behind SGLang's router
    Flag("data_parallel_size", "--dp-size", "replicas behind one router, or the attention-DP size",
         aliases=("--data-parallel-size", "--dp"), read=data_parallel,
         write=lambda s: s.get("tp") if s.get("attention_dp") else (
             s.get("replicas") if (s.get("replicas") or 1) > 1 else None)),
    Flag("attention_dp", "--enable-dp-attention", "attention data parallel over the TP GPUs",
         read=attention_dp_switch, write=lambda s: bool(s.get("attention_dp")), switch=True),
    Flag("expert_parallel_size", "--ep-size", "GPUs the MoE experts are sharded over",
         read=expert_parallel_size, aliases=("--expert-parallel-size",)),
    Flag("max_model_len", "--context-length", "longest request, tokens",
         read=limit("max_model_len", int), write=lambda s: s.get("max_model_len")),
    Flag("gpu_memory_utilization", "--mem-fraction-static",
         "fraction of the FREE memory at start-up for weights and KV pool (the rest: activations, graphs)",
         read=limit("gpu_memory_utilization", float)),
    Flag("max_num_seqs", "--max-running-requests", "running requests at most",
         read=limit("max_num_seqs", int)),
    Flag("max_num_batched_tokens", "--chunked-prefill-size", "tokens per prefill chunk",
         read=limit("max_num_batched_tokens", int)),
    Flag("disable_cuda_graph", "--disable-cuda-graph", "no CUDA graphs",
         read=graphs_off, write=lambda s: s.get("max_cudagraph_tokens") == 0, switch=True),
    Flag("scheduler_recv_interval", "--scheduler-recv-interval",
         "decode steps between two reads of new requests while a batch runs (default 1)",
         read=limit("recv_interval_steps", int), write=lambda s: s.get("recv_interval_steps")),
    Flag("attention_backend", "--attention-backend", "attention kernels (aiter, triton, fa3, flashinfer, ...)",
         read=lambda text: {"attention_backend": text}, write=lambda s: s.get("attention_backend")),
    Flag("cuda_graph_max_bs", "--cuda-graph-max-bs", "largest decode CUDA graph, in SEQUENCES (one token each)",
         read=graphs_to, write=lambda s: s.get("max_cudagraph_tokens") or None),
))

ENGINE = Engine(name="sglang", title="SGLang", flags=FLAGS, limits=limits, unpriced=unpriced,
                source="SGLang 0.5.17 server_args.py and its start-up log on an H200 (sitting 5)")
