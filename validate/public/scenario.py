"""A published row as the capacity model's Scenario, and the model's value for the row's metric: the one mapping
the corpus scoring (scripts/score_public.py), the accuracy card and the public calibration fit all use.

Mapping choices (each returned as a flag, counted in docs/public-corpus.md):
- TensorRT-LLM rows use the TensorRT-LLM profile. Its trtllm-bench rows (the perf overview tables) take the limits
  trtllm-bench sets itself (`capacity.engines.trtllm.bench_limits`), CUDA graphs covering every batch (the overview's
  llm_options capture graphs up to 8,192 sequences since v0.19; v0.17 ran compiled TensorRT engines, which launch no
  Python op by op either) and the 0.95 KV fraction the overview says it used "in many cases" (0.90 otherwise: an
  ambiguity). NIM rows (backend not stated) use the vLLM profile;
- an offline / max-throughput row is a burst of its published request count (3,000 where the source gives none);
- a batch row (vLLM benchmark_latency: B requests processed together) is a burst of B;
- attention data parallel (TensorRT-LLM DEPn) is scored as TP n with expert parallel and the model's attention data
  parallel (`attention_dp`: attention whole on every GPU, each GPU its own sequences' KV); pipeline parallel as the
  model's pipeline (`pp`: pp batches in flight, capacity/model/pipeline.py), which no measurement here has checked;
- an unstated KV precision is taken as FP8 for FP8/FP4 checkpoints, BF16 otherwise.
"""

from __future__ import annotations

import re

from capacity.model.architecture import load_model
from capacity.engines.trtllm import PROFILE as TRTLLM_PROFILE, bench_limits, bench_model_inputs
from capacity.hardware import load_gpu
from capacity.model.precision import kv_bytes_per_element
from validate.public.inferencex import MI355X_AITER_SINCE
from validate.public.schema import Row

MODELLED_ENGINES = ("vllm", "sglang", "trtllm")
DEFAULT_OFFLINE_REQUESTS = 3000
BENCH_SOURCE_KINDS = ("trtllm_perf", "trtllm_bench")
GRAPHS_COVER_EVERY_BATCH = 8192  # the overview's largest captured batch
TRTLLM_BENCH_KV_FRACTION = 0.95
# trtllm-bench's bytes per weight (BYTES_PER_ELEM), of the only checkpoint formats it tunes its limits for
# (TUNED_QUANTS: NVFP4, FP8, FP8 block scales, none); any other (MXFP4, INT4 AWQ) keeps the LLM API's defaults:
# tensorrt_llm/bench/build/build.py, read 2026-12-01
BENCH_BYTES_PER_WEIGHT = {"fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "nvfp4": 0.5}


def _trtllm_bench(r: Row, s: dict, flags: list[str]) -> None:
    """The limits trtllm-bench sets for the row's dataset, and the overview's graphs and KV fraction."""
    m, gpu = load_model(r.model), load_gpu(r.gpu)
    if r.weight_precision in BENCH_BYTES_PER_WEIGHT:
        params, head_size = bench_model_inputs(m, r.weight_precision)
        batch, tokens = bench_limits(params, BENCH_BYTES_PER_WEIGHT[r.weight_precision], m.num_layers, m.num_kv_heads, head_size,
                                     kv_bytes_per_element(s["kv_precision"]), gpu.memory_bytes, r.tp, r.pp, s["isl"],
                                     s["osl"], TRTLLM_BENCH_KV_FRACTION)
        flags.append("trtllm-bench's own batch and token limits, graphs on every batch, KV fraction 0.95")
    else:
        batch, tokens = TRTLLM_PROFILE.max_num_seqs, TRTLLM_PROFILE.max_num_batched_tokens
        flags.append(f"trtllm-bench's default limits ({r.weight_precision} is not a format it tunes), graphs on every "
                     "batch, KV fraction 0.95")
    s.setdefault("max_num_seqs", batch)
    s["max_num_batched_tokens"] = tokens
    s["max_cudagraph_tokens"] = max(GRAPHS_COVER_EVERY_BATCH, s["max_num_seqs"])
    s["gpu_memory_utilization"] = TRTLLM_BENCH_KV_FRACTION


# InferenceX's TensorRT-LLM launch scripts for DeepSeek-R1 (SemiAnalysisAI/InferenceX benchmarks/dsr1_fp8_h200_trt.sh
# @ 1fc5d73cdd31 and dsr1_fp4_b200_trt.sh @ 6320e9b7e3cf, read 2026-12-01): CUDA graphs with padding up to 128
# (H200) or 512 (B200) sequences, KV fraction 0.75 / 0.8, and max_num_tokens = CONC + ISL + 64 rounded up to 64
# (at least 8,192 on H200). Which script version ran each API row is not stated: an ambiguity.
INFERENCEX_TRTLLM = {"h200-sxm": (128, 0.75, 8192), "b200": (512, 0.8, 0)}


def inferencex_trtllm_limits(gpu: str, concurrency: int | None, isl: int) -> dict:
    """The engine limits InferenceX's TensorRT-LLM launch scripts set (INFERENCEX_TRTLLM; `gpu` must be a key)."""
    graphs, fraction, floor = INFERENCEX_TRTLLM[gpu]
    conc = concurrency or 1
    return {"max_cudagraph_tokens": graphs, "gpu_memory_utilization": fraction,
            "max_num_batched_tokens": max(floor, -(-(conc + isl + 64) // 64) * 64), "max_num_seqs": max(conc, 1)}


# InferenceX's SGLang launch scripts for DeepSeek-R1 FP4 on B200 and B300 (SemiAnalysisAI/InferenceX
# benchmarks/single_node/dsr1_fp4_b200.sh @ 64c20b6b5ba0, in force from 2026-03-11 to 03-27, and dsr1_fp4_b300.sh @
# 9ebeafb4e31a, read 2026-12-02): --scheduler-recv-interval 10 below 16 clients and 30 from 16 (every B200 version since
# 2025-09-21 and every B300 version has this rule; the B200 DP-attention lane of 2026-06-23 sets 1, and no row here ran
# it), --cuda-graph-max-bs 256, --max-running-requests 256, --mem-fraction-static 0.85, --chunked-prefill-size 16384.
# The H200 and AMD DeepSeek-R1 scripts set no interval (SGLang's default 1).
INFERENCEX_SGLANG = ("b200", "b300")


def inferencex_sglang_limits(concurrency: int | None) -> dict:
    """The engine settings InferenceX's B200/B300 SGLang launch scripts set (INFERENCEX_SGLANG)."""
    return {"recv_interval_steps": 30 if (concurrency or 1) >= 16 else 10, "max_cudagraph_tokens": 256,
            "max_num_seqs": 256, "gpu_memory_utilization": 0.85, "max_num_batched_tokens": 16384}


def _inferencex_sglang(r: Row, s: dict, flags: list[str]) -> None:
    s.update(inferencex_sglang_limits(r.concurrency))
    flags.append("InferenceX's SGLang launch settings (receive interval, graphs, memory fraction, chunk)")


# InferenceX's SGLang launch scripts for DeepSeek-R1 FP4 on MI355X (SemiAnalysisAI/InferenceX
# benchmarks/dsr1_fp4_mi355x_docker.sh @ 5de26a26924a, in force on 2025-10-06, and single_node/dsr1_fp4_mi355x.sh @
# f267602ff782, in force on 2026-02-27; read 2026-12-07): --mem-fraction-static 0.8, --chunked-prefill-size 196608
# (32768 at 8k/1k above 32 clients), --cuda-graph-max-bs 128, radix cache off; and from 332fec529ff3 (2025-12-16) on,
# --attention-backend aiter (before it none: SGLang's own choice, capacity.engines.sglang.attention_backend).
INFERENCEX_SGLANG_ROCM = ("mi355x",)


def run_date(r: Row) -> str:
    """The ISO date in a row's `published` text ('' when none)."""
    found = re.search(r"\d{4}-\d{2}-\d{2}", r.published)
    return found.group(0) if found else ""


def inferencex_sglang_rocm_limits(concurrency: int | None, isl: int, osl: int, date: str) -> dict:
    """The engine settings InferenceX's MI355X SGLang launch scripts set on a run's date (INFERENCEX_SGLANG_ROCM)."""
    chunk = 32768 if isl > osl and (concurrency or 1) > 32 else 196608
    out = {"gpu_memory_utilization": 0.8, "max_num_batched_tokens": chunk, "max_cudagraph_tokens": 128}
    if date >= MI355X_AITER_SINCE:
        out["attention_backend"] = "aiter"
    return out


def _inferencex_sglang_rocm(r: Row, s: dict, flags: list[str]) -> None:
    s.update(inferencex_sglang_rocm_limits(r.concurrency, r.isl, r.osl, run_date(r)))
    flags.append("InferenceX's MI355X SGLang launch settings (memory fraction, chunk, graphs"
                 + (", aiter attention)" if "attention_backend" in s else "; no attention backend set)"))


def unstated_kv(weight_precision: str) -> str:
    """The KV precision taken where a source does not state it: FP8 for FP8/FP4 checkpoints, BF16 otherwise."""
    return "fp8" if weight_precision in ("fp8", "nvfp4", "mxfp4") else "bf16"


def _inferencex_trtllm(r: Row, s: dict, flags: list[str]) -> None:
    limits = inferencex_trtllm_limits(r.gpu, r.concurrency, r.isl)
    s.setdefault("max_num_seqs", limits.pop("max_num_seqs"))
    s.update(limits)
    flags.append("InferenceX's TensorRT-LLM launch settings (graphs, KV fraction, token budget)")


def scenario_for(r: Row, engines: tuple[str, ...] = MODELLED_ENGINES) -> tuple[dict, list[str]]:
    """The Scenario fields of row `r` and the mapping choices made. `engines`: the engines scored with their own
    profile; any other is scored with vLLM's (("vllm", "sglang") gives the mapping from before TensorRT-LLM had one)."""
    flags: list[str] = []
    engine = r.engine if r.engine in engines else "vllm"
    if engine != r.engine:
        flags.append(f"engine {r.engine} scored with the vLLM profile")
    kv = r.kv_precision
    if kv == "unstated":
        kv = unstated_kv(r.weight_precision)
        flags.append(f"KV precision unstated, taken as {kv}")
    isl, osl = r.isl, r.osl
    spread = {}
    if r.lengths == "distributed" and r.length_range_ratio:
        # uniform in [ratio × L, L]: the mean (1 + ratio) L / 2 with a half-width of (1 − ratio) L / 2, drawn so (a
        # closed loop's clients drift apart as the benchmark's did)
        f = (1 + r.length_range_ratio) / 2
        isl, osl = round(r.isl * f), round(r.osl * f)
        spread = {"length_dist": "uniform", "length_ratio": (1 - r.length_range_ratio) / (1 + r.length_range_ratio)}
        flags.append(f"distributed lengths drawn uniform in [{r.length_range_ratio:g} L, L]")
    s = dict(model=r.model, gpu=r.gpu, num_gpus=r.num_gpus, tp=r.tp, pp=r.pp, expert_parallel=r.ep > 1,
             precision=r.weight_precision, kv_precision=kv, engine=engine, isl=isl, osl=osl, **spread)
    if r.dp > 1:
        s["attention_dp"] = True
        flags.append(f"attention DP {r.dp} over the TP {r.tp} GPUs (not measured here)")
    if r.pp > 1:
        flags.append(f"PP {r.pp} scored as a pipeline of {r.pp} stages (not measured here)")
    if r.load == "offline":
        n = r.num_requests or DEFAULT_OFFLINE_REQUESTS
        if r.num_requests is None:
            flags.append(f"request count unpublished: burst of {n}")
        s["load"] = f"burst:{n}"
    elif r.load == "batch":
        s["load"] = f"burst:{r.batch}"
    elif r.load == "concurrency":
        s["load"] = f"concurrency:{r.concurrency}"
        if r.num_requests:
            s["num_requests"] = r.num_requests
    elif r.load == "rate":
        s["load"] = f"rate:{r.rate:g}"
    else:
        s["load"] = "sync"
    if r.max_num_seqs:
        s["max_num_seqs"] = r.max_num_seqs
    if engine == "trtllm" and r.source_kind in BENCH_SOURCE_KINDS and r.load == "offline":
        _trtllm_bench(r, s, flags)
    elif engine == "trtllm" and r.source_kind == "inferencex" and r.gpu in INFERENCEX_TRTLLM:
        _inferencex_trtllm(r, s, flags)
    elif engine == "sglang" and r.source_kind == "inferencex" and r.gpu in INFERENCEX_SGLANG:
        _inferencex_sglang(r, s, flags)
    elif engine == "sglang" and r.source_kind == "inferencex" and r.gpu in INFERENCEX_SGLANG_ROCM:
        _inferencex_sglang_rocm(r, s, flags)
    return s, flags


def predicted_value(r: Row, e) -> float:
    """The Estimate's figure for the row's metric (TPOT is ITL; per-GPU throughput divides by the row's GPUs)."""
    return {
        "output_tokens_per_s": e.output_tokens_per_s,
        "output_tokens_per_s_per_gpu": e.output_tokens_per_s / r.num_gpus,
        "total_tokens_per_s": e.total_tokens_per_s,
        "requests_per_s": e.requests_per_s,
        "ttft_s": e.ttft_s,
        "itl_s": e.itl_s,
        "tpot_s": e.itl_s,
        "e2e_latency_s": e.e2e_latency_s,
    }[r.metric]


def estimate_metric(r: Row) -> tuple[str, float]:
    """(key of capacity.estimate.predicted_metrics, measured value in that key's units) for a row: what a fit
    compares (per-GPU throughput is multiplied back to the row's GPUs)."""
    if r.metric == "output_tokens_per_s_per_gpu":
        return "output_tokens_per_s", r.value * r.num_gpus
    return {"tpot_s": "itl_s"}.get(r.metric, r.metric), r.value
