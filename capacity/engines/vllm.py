"""vLLM 0.26 (OpenAI server): its defaults, memory rule, scheduling regime and flags.

With speculative decoding (--speculative-config) async scheduling is off: the CPU's per-step work is exposed.

Defaults are those of a GPU with >= 70 GiB (vLLM's usage-context defaults for the OpenAI server; smaller GPUs
get 2,048 tokens and 256 sequences there, which this model does not yet follow): gpu_memory_utilization 0.92
of the total memory, chunked prefill with an 8,192-token budget per step (prefill chunks ride in decode steps),
at most 1,024 running sequences, 16-token blocks, CUDA graphs captured up to 512 tokens. Sliding-window models
use vLLM's hybrid-allocator rule (capacity.model.memory).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from capacity.engines.base import Engine, EngineProfile, Flag, FlagTable
from capacity.engines.flags import (data_parallel, expert_parallel_switch, graphs_off, graphs_to, kv_fp8, limit,
                                    pipeline_parallel, pipeline_stages, precision_fp8, precision_from_quantization,
                                    speculative_config, tensor_parallel)

GiB = 2**30
MAX_NUM_SEQS = 1024
MAX_NUM_BATCHED_TOKENS = 8192
LARGEST_DEFAULT_GRAPH_TOKENS = 512
# MoE architectures vLLM 0.26.0 runs on its V2 model runner by default, as it does every dense model
# (vllm/config/vllm.py DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES): profiled like dense models
LEAN_MOE_ARCHITECTURES = ("DeepseekV2ForCausalLM", "GraniteMoeForCausalLM", "InklingForCausalLM",
                          "InklingForConditionalGeneration", "LongcatFlashNgramForCausalLM", "Qwen2MoeForCausalLM")


def default_graph_tokens(max_num_seqs: int, max_num_batched_tokens: int) -> int:
    """vLLM's largest CUDA graph when none is set: min(2 × max_num_seqs, 512, max_num_batched_tokens) tokens
    (vllm/config/vllm.py; the CPU build 0.32 also raises the 512 to 1,024 on Blackwell, not followed here: the
    calibration is 0.26's on an H200)."""
    return min(2 * max_num_seqs, LARGEST_DEFAULT_GRAPH_TOKENS, max_num_batched_tokens)


PROFILE = EngineProfile(
    name="vllm",
    gpu_memory_utilization=0.92,
    running_limit_per_rank=True,  # data parallel: one engine core, with its own max_num_seqs, per DP rank
    max_num_batched_tokens=MAX_NUM_BATCHED_TOKENS,
    max_num_seqs=MAX_NUM_SEQS,
    block_size_tokens=16,
    non_torch_bytes=0.22 * GiB,  # vLLM 0.26.0 on H200: "0.22 GiB for non-torch memory" (0.24 for the MoE)
    cuda_graph_bytes=0.0,  # 0.26.0 reports CUDA-graph memory (~1 GiB) but does not subtract it from the KV budget
    # The profile run's peak (capacity.model.memory.activation_peak_bytes). Read from vLLM 0.26.0's own source (the wheel
    # the H200 sittings ran, commit ffd46bfab): dense models and LEAN_MOE_ARCHITECTURES run on the V2 model runner,
    # other MoE models on the V1 runner (vllm/config/vllm.py use_v2_model_runner; every committed log agrees: "Using
    # V2 Model Runner" for Llama, Qwen3-8B/32B, Gemma 3, DeepSeek-V2-Lite, not for Qwen3-30B-A3B, Mixtral, gpt-oss).
    # From the code, not fitted:
    # - V1 sampler warm-up (v1/worker/gpu_model_runner.py _dummy_sampler_run, v1/sample/sampler.py, top-k/top-p in
    #   Triton with VLLM_USE_FLASHINFER_SAMPLER=0): bf16 logits 2 B + fp32 copy 4 + softmax probabilities 4 +
    #   exponential noise 4 = 14 B per request and vocabulary entry = 3.5 fp32 copies;
    sampler_copies=3.5,
    # - plus the Triton top-k/top-p scratch it caches, min(SMs, requests) fp32 rows of the vocabulary
    #   (v1/sample/ops/topk_topp_triton.py); 132 = the SMs of an H100/H200 SXM, the only GPU measured;
    sampler_scratch_rows=132,
    # - V2 sampler warm-up (v1/worker/gpu/sample/sampler.py): the dummy requests have no top-k/top-p and
    #   temperature 0, so it keeps the bf16 logits (0.5 fp32 copies) and a few per-block maxima;
    lean_sampler_copies=0.5,
    lean_moe_architectures=LEAN_MOE_ARCHITECTURES,
    # - the Triton fused-MoE workspace as the workspace manager keeps it (fused_moe/experts/triton_moe.py), whole.
    moe_activation_factor=1.0,
    # - the forward's live set as counted, not scaled (capacity.model.memory.activation_peak_bytes): the V2 profile run
    #   (v1/worker/gpu/model_runner.py profile_run -> _dummy_run(skip_attn=True) -> the compiled model, no CUDA graph)
    #   prints within 5 % of it for Mistral-7B (0.93 GiB) and Gemma 3 27B (1.24; 1.31 FP8), the models whose peak it
    #   sets. Was 1.27, fitted when the embedding copy, the MLA buffer and the TP logits gather below were unknown
    #   (lean peaks within 28 %);
    activation_bytes_per_token=1.0,
    # - the cold torch.compile inside the profile window (vllm/compilation/decorators.py aot_compile within
    #   v1/worker/gpu_worker.py determine_available_memory's memory_profiling) holds a bf16 copy of this GPU's
    #   token-embedding table beside the first layer's two outputs; shape read off the logs, not vLLM's Python:
    #   Llama-3.1-8B, Qwen3-8B, Qwen3-14B, Qwen3-32B (1.10, 1.29, 1.61, 1.61 GiB) = V x h x 2 + 2 x 8,192 x h x 2
    #   within 0.006 GiB, whatever the MLP width; Gemma 3, fed inputs_embeds, shows none;
    embedding_copy=True,
    # - MLA layers' profile-only buffer for the up-projected prefill context
    #   (model_executor/layers/attention/mla_attention.py MLAAttention.forward_impl, attn_metadata None): 0.5 GiB
    #   for DeepSeek-V2-Lite, which with the fused-MoE workspace sets its 1.09-1.10 GiB.
    mla_profile_buffer=True,
    # Fitted (fit set: Qwen3-30B-A3B; held out: Mixtral-8x7B, gpt-oss-20b and every lean-path model):
    # - what every profile run adds besides the sampler, hidden states and workspace: Qwen3-30B-A3B's 2.68 GiB minus
    #   its code-derived 2.634 GiB. One model sets it, so it is a guess; Mixtral and gpt-oss, held out, land within
    #   0.4 % with it. Cause not identified (the 32 MiB cuBLAS workspace of a first GEMM would be most of it).
    profile_overhead_bytes=0.045 * GiB,
    # 0.26.0 printed "Estimated CUDA graph memory: 0.64 GiB" and subtracted it for Qwen3-30B-A3B (0.54 Mixtral, 0.58
    # gpt-oss), none for the V2-runner models: the V2 runner's profile_cudagraph_memory returns 0 in 0.26.0
    moe_cuda_graph_bytes=0.64 * GiB,
    max_cudagraph_tokens=default_graph_tokens(MAX_NUM_SEQS, MAX_NUM_BATCHED_TOKENS),
    in_flight_batches=2,
    # With speculative decoding 0.26.0 turns async scheduling off ("Async scheduling not supported with ngram-based
    # speculative decoding and will be disabled", sitting 11's log) and runs the V1 model runner ("Model Runner V2 does
    # not yet support ngram/ngram_gpu speculative decoding": the full profile run, lean_profile_run off; KV +1.7 %
    # against the log, was +3.0 % on the lean rule), so the CPU's work per
    # step is no longer hidden behind the GPU. Its size, 3.0 ms, is identified by ONE point (Llama-3.1-8B, n-gram
    # drafts, one request at a time: 7.9 ms per verification step of 4.92 tokens against 4.9 ms of GPU and overheads
    # priced), so it is a guess; the two concurrency points of the same run are held out (docs/measurement-log.md,
    # sitting 11).
    exposed_step_host_s=3.0e-3,
    # A draft model (method draft_model) runs on the V1 runner's drafter: a forward lasts max(GPU work + overheads,
    # its CPU time: this per forward plus draft_layer_launch_s per draft layer) (capacity.model.steptime.
    # draft_forwards_s). 2.4 ms per forward is identified by ONE point (sitting 12, Qwen3-8B + Qwen3-0.6B, 4 drafts,
    # acceptance 0, one request at a time: ITL 22.9 ms), so it is a guess, and it absorbs the few ms of Triton compiles
    # during that point; 16 and 64 clients of the same run are held out. The per-layer launch is the 74 us it was
    # fitted beside (the target's eager launch until 2026-12-03): the target's op-by-op launch is now a floor of
    # 0.76 ms per layer (sitting 21), which the drafter evidently does not pay (4 drafts of 28 layers would take 85 ms).
    draft_forward_host_s=2.4e-3,
    draft_layer_launch_s=7.4e-5,
    mixed_prefill=True,
    # The large-batch host floor (host_token_s, fitted with vLLM's one API server) is mostly the API server's: at 256
    # streaming clients its main thread is ~90 % busy, the engine core's ~50 % (sittings 25, 26, 28), and a second
    # API server (--api-server-count 2) took Llama-3.1-8B's 128/128 decode at 256 clients from 18.5 / 22.0 ms to
    # 12.7 / 13.6 ms (two rounds each, two servers of one machine, sitting 28): at most 0.65 of the one-API-server
    # floor stays with the engine core (at most: with two API servers the model's GPU-side step, 15.5 ms, binds
    # first, over-priced as at 128 clients). ONE model on one host bounds it, so it is a guess (sitting 28b: another
    # model, and four API servers).
    engine_core_host_share=0.65,
    # At start-up 0.26.0 refuses to run when its KV cache cannot hold one request of max_model_len tokens, by default
    # the model's whole context (vllm/v1/core/kv_cache_utils.py _check_enough_kv_cache_memory). Sitting 32 (H100):
    # Qwen3-32B BF16 at its 40,960 tokens stopped with "10.0 GiB KV cache is needed, which is larger than the
    # available KV cache memory (9.98 GiB) ... the estimated maximum model length is 40864", and started with
    # --max-model-len 32768 (GPU KV cache size 40,864 tokens).
    refuses_kv_below_max_len_request=True,
)


def limits(gpu_memory_bytes: float | None, tp: int, overrides: Mapping[str, Any]) -> EngineProfile:
    """The same on every GPU this model covers (see the module docstring), except that the largest CUDA graph
    follows the sequence limit and the token budget (`default_graph_tokens`)."""
    graphs = default_graph_tokens(overrides.get("max_num_seqs") or MAX_NUM_SEQS,
                                  overrides.get("max_num_batched_tokens") or MAX_NUM_BATCHED_TOKENS)
    update: dict[str, Any] = {"max_cudagraph_tokens": graphs} if graphs != PROFILE.max_cudagraph_tokens else {}
    if overrides.get("spec_draft_tokens"):  # speculative decoding: no async scheduling, the V1 runner (see PROFILE)
        # its sampler warm-up also holds fp32 draft probabilities, one vocab-wide row per request per draft token:
        # + 1024 x 4 x V x 4 bytes, 1.96 GiB for Llama-3.1-8B (sitting 11, n-gram: printed 3.85 against 1.88 GiB without
        # it) and 2.32 GiB for Qwen3-8B (sitting 12, a draft model: 4.53 against 2.21); two models, two methods
        update["spec_draft_rows"] = int(overrides["spec_draft_tokens"])
        update["async_scheduling"] = False
        update["lean_profile_run"] = False
        if overrides.get("spec_draft_model"):
            # a draft model: the scheduler keeps one slot per sequence for the draft's extra input token (sitting 12:
            # "max_num_scheduled_tokens is set to 7168" = 8192 - 1024; 256 seqs x 4 drafts gives the same number, one
            # point cannot tell)
            budget = overrides.get("max_num_batched_tokens") or MAX_NUM_BATCHED_TOKENS
            update["max_num_scheduled_tokens"] = max(budget - (overrides.get("max_num_seqs") or MAX_NUM_SEQS), 1)
    return PROFILE.model_copy(update=update) if update else PROFILE


FLAGS = FlagTable((
    Flag("dtype", "--dtype", "weights and activations dtype (bfloat16, float16, auto)"),
    Flag("quantization", "--quantization", "weight format of the checkpoint or on-the-fly (fp8, awq, ...)",
         read=precision_from_quantization, write=precision_fp8, aliases=("-q",)),
    Flag("kv_cache_dtype", "--kv-cache-dtype", "KV cache element type (auto, fp8, fp8_e4m3, fp8_e5m2)",
         read=kv_fp8, write=lambda s: "fp8" if s.get("kv_precision") == "fp8" else None),
    Flag("tensor_parallel_size", "--tensor-parallel-size", "GPUs per replica (tensor parallel)",
         read=tensor_parallel, write=lambda s: s.get("tp"), aliases=("-tp",)),
    Flag("pipeline_parallel_size", "--pipeline-parallel-size", "pipeline stages of tensor-parallel GPUs each",
         read=pipeline_parallel, write=pipeline_stages, aliases=("-pp",)),
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
    Flag("api_server_count", "--api-server-count", "API server processes (front ends streaming tokens to clients)",
         read=limit("api_server_count", int), write=lambda s: s.get("api_server_count"), aliases=("-asc",)),
    Flag("max_num_batched_tokens", "--max-num-batched-tokens", "tokens per step (chunked-prefill budget)",
         read=limit("max_num_batched_tokens", int), write=lambda s: s.get("max_num_batched_tokens")),
    Flag("enforce_eager", "--enforce-eager", "no CUDA graphs: every step launched op by op",
         read=graphs_off, write=lambda s: s.get("max_cudagraph_tokens") == 0, switch=True),
    Flag("max_cudagraph_capture_size", "--max-cudagraph-capture-size", "largest CUDA graph, in TOKENS per step",
         read=graphs_to, write=lambda s: s.get("max_cudagraph_tokens") or None),
    Flag("speculative_config", "--speculative-config", "speculative decoding, JSON (method, num_speculative_tokens)",
         read=speculative_config),
))

ENGINE = Engine(name="vllm", title="vLLM", flags=FLAGS, limits=limits,
                source="vLLM 0.26.0 defaults (vllm/config, vllm/engine/arg_utils.py), H200 measurements")
