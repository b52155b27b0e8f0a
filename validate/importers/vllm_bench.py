"""``vllm bench serve --save-result`` files: one point per file.

With ``--save-detailed`` the file holds per-request lists (ttfts, itls, latencies, lengths, errors,
start_times); latency statistics are then recomputed with this package's definitions and the requests are
imported too. Without them the summary keys are used (``p90_*`` only if it was run with
``--metric-percentiles ...90...``). Throughput is the tool's own: completed / its duration.

vLLM does not write its dataset or seed into the result; ``dataset_name`` and ``seed`` keys (as
``--metadata dataset_name=random seed=0`` adds them) are read where present, else vLLM's defaults
(random, 0) are assumed and the metadata says so. Several files of one server that all drew random
prompts with one seed sent the same prompts again: see ``prefix_cache_warnings``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import create_model

from validate.errors import ImportFormatError
from validate.importers.common import (MS, STATS, Count, Finite, ImportedRun, NonNegative, Positive, PositiveCount,
                                       Rate, Strict, make_metadata, make_point, rounded, summarized,
                                       validated)
from validate.results import RequestRecord

_STAT_KEYS = ("ttft", "itl", "tpot", "e2el")
VLLM_DEFAULT_DATASET, VLLM_DEFAULT_SEED = "random", 0  # `vllm bench serve` --dataset-name and --seed defaults
RANDOM_DATASETS = {"random", "random-mm", "random-rerank"}


class _VllmBase(Strict):
    date: str | None = None
    backend: str | None = None
    model_id: str | None = None
    tokenizer_id: str | None = None
    num_prompts: Count | None = None
    request_rate: Rate | Literal["inf"] | None = None
    max_concurrency: PositiveCount | None = None
    duration: Positive
    completed: Count
    failed: Count | None = None
    total_input_tokens: Count
    total_output_tokens: Count
    request_throughput: NonNegative
    output_throughput: NonNegative
    total_token_throughput: NonNegative
    max_concurrent_requests: Count | None = None
    dataset_name: str | None = None  # only with --metadata dataset_name=...
    seed: int | str | None = None  # only with --metadata seed=... (a string there)
    # --save-detailed: one entry per request
    ttfts: list[NonNegative] | None = None
    itls: list[list[NonNegative]] | None = None
    latencies: list[NonNegative] | None = None
    input_lens: list[Count] | None = None
    output_lens: list[Count] | None = None
    errors: list[str | None] | None = None
    start_times: list[Finite] | None = None


VllmBenchFile = create_model(  # type: ignore[call-overload]
    "VllmBenchFile", __base__=_VllmBase,
    **{f"{stat}_{key}_ms": (NonNegative | None, None) for stat in STATS for key in _STAT_KEYS})

DETAILED = ("ttfts", "itls", "latencies", "input_lens", "output_lens")


def is_vllm_bench(data: Any) -> bool:
    return isinstance(data, dict) and "request_throughput" in data and "completed" in data


def vllm_load_label(data: Any) -> str:
    rate = math.inf if data.request_rate in (None, "inf") else float(data.request_rate)
    if math.isfinite(rate):
        return f"rate:{rate:.6g}"
    if data.max_concurrency:
        return f"concurrency:{data.max_concurrency}"
    return f"burst:{data.num_prompts or data.completed + (data.failed or 0)}"


def _check_detailed(data: Any, path: Path) -> int:
    """The number of requests of a --save-detailed file; every per-request list must have it."""
    lengths = {key: len(getattr(data, key)) for key in DETAILED}
    for key in ("errors", "start_times"):
        if getattr(data, key):
            lengths[key] = len(getattr(data, key))
    if len(set(lengths.values())) != 1:
        found = ", ".join(f"{k} {n}" for k, n in lengths.items())
        raise ImportFormatError(f"{path}: {'/'.join(lengths)}: expected one entry per request in each (got {found})")
    return lengths["ttfts"]


def _requests(data: Any, load: str, count: int) -> list[RequestRecord]:
    starts = data.start_times or [0.0] * count
    errors = data.errors or [None] * count
    first = min(starts) if starts else 0.0
    records = []
    for i in range(count):
        error = errors[i] or None
        latency, start = data.latencies[i], starts[i] - first
        records.append(RequestRecord(
            load=load, index=i, start_s=start, end_s=start + latency,
            ttft_s=None if error else data.ttfts[i], e2e_latency_s=None if error else latency,
            itls_s=[] if error else list(data.itls[i]), num_chunks=len(data.itls[i]) + 1,
            input_tokens=0 if error else data.input_lens[i], output_tokens=0 if error else data.output_lens[i],
            requested_input_tokens=data.input_lens[i], requested_output_tokens=data.output_lens[i], error=error))
    return records


def summarize_fields(load: str, requests: list[RequestRecord], where: str = "requests") -> dict[str, Any]:
    """Latency statistics recomputed from the requests (throughput stays the tool's own)."""
    return summarized(where, load, requests).model_dump(exclude={
        "load", "duration_s", "requests_per_s", "output_tokens_per_s", "total_tokens_per_s", "input_tokens_per_s",
        "completed", "failed"})


def _prompts(data: Any) -> dict[str, Any]:
    """Where the prompts came from: recorded (--metadata) or vLLM's defaults."""
    recorded = data.dataset_name is not None or data.seed is not None
    return {"dataset": data.dataset_name or VLLM_DEFAULT_DATASET,
            "seed": str(data.seed if data.seed is not None else VLLM_DEFAULT_SEED),
            "recorded": "recorded in the file" if recorded else "not recorded in the file: vLLM's defaults assumed"}


def import_vllm_bench(raw: dict[str, Any], path: Path, argv: list[str]) -> ImportedRun:
    data = validated(VllmBenchFile, raw, str(path))
    load = vllm_load_label(data)
    requests: list[RequestRecord] = []
    if all(getattr(data, key) is not None for key in DETAILED):
        requests = _requests(data, load, _check_detailed(data, path))
        fields = summarize_fields(load, requests, str(path))
    else:
        fields = {f"{stat}_{name}_s": None if getattr(data, f"{stat}_{key}_ms") is None
                  else getattr(data, f"{stat}_{key}_ms") * MS for stat in STATS for name, key in
                  (("ttft", "ttft"), ("itl", "itl"), ("tpot", "tpot"), ("e2e_latency", "e2el"))}
    completed = data.completed
    fields.update(total_input_tokens=data.total_input_tokens, total_output_tokens=data.total_output_tokens,
                  max_concurrency=data.max_concurrent_requests, source="vllm-bench",
                  errors=[e for e in dict.fromkeys(data.errors or []) if e][:5])
    if completed:
        fields.update(isl=data.total_input_tokens / completed, osl=data.total_output_tokens / completed)
    point = make_point(str(path), load=load, completed=completed, failed=data.failed or 0, duration_s=data.duration,
                       requests_per_s=data.request_throughput, output_tokens_per_s=data.output_throughput,
                       total_tokens_per_s=data.total_token_throughput,
                       input_tokens_per_s=data.total_input_tokens / data.duration, **fields)
    metadata = make_metadata(argv, "vllm-bench", engine=data.backend, model_id=data.model_id,
                             served_model_name=data.model_id, started_at=data.date,
                             workload={"isl": rounded(point.isl), "osl": rounded(point.osl),
                                       "imported_from": str(path), "prompts": _prompts(data)})
    return ImportedRun([point], requests, metadata)


def prefix_cache_warnings(runs: list[tuple[Path, ImportedRun]]) -> list[str]:
    """One line per group of vllm-bench files of one server (model and backend) that drew prompts from a random
    dataset with one seed: each run after the first sent prompts the server had already cached. The flag is
    stored in each run's workload as ``prefix_cache_reuse``."""
    groups: dict[tuple, list[tuple[Path, ImportedRun]]] = {}
    for path, run in runs:
        prompts = run.metadata.workload.get("prompts") if run.metadata.source == "vllm-bench" else None
        if prompts and prompts["dataset"] in RANDOM_DATASETS:
            key = (run.metadata.model_id, run.metadata.engine, prompts["dataset"], prompts["seed"])
            groups.setdefault(key, []).append((path, run))
    lines = []
    for (model, _, dataset, seed), members in groups.items():
        if len(members) < 2:
            continue
        names = [str(p) for p, _ in members]
        for _, run in members:
            run.metadata.workload["prefix_cache_reuse"] = {
                "suspected": True, "files": names, "dataset": dataset, "seed": seed,
                "why": "one seed on the random dataset gives the same prompts in every run; later runs hit the "
                       "server's prefix cache"}
        lines.append(f"warning: {len(members)} vllm-bench files of {model} drew {dataset} prompts with one seed "
                     f"({seed}, {members[0][1].metadata.workload['prompts']['recorded']}): each run after the "
                     f"first resent cached prompts, so prefix-cache hits flatter their TTFT ({', '.join(names)})")
    return lines
