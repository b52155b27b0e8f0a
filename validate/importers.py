"""Import other tools' reports into points.jsonl form: ``vllm bench serve --save-result`` and guidellm.

vLLM: with ``--save-detailed`` the file holds per-request lists (ttfts, itls, latencies, lengths,
errors, start_times); latency statistics are then recomputed with this package's definitions and the
requests are imported too. Without them the summary keys are used (``p90_*`` only if it was run
with ``--metric-percentiles ...90...``). Throughput is the tool's own: completed / its duration.

guidellm (v0.3 to v0.7 JSON reports): one point per benchmark, from the "successful" distributions.
guidellm's inter_token_latency_ms is a per-request (last - first) / (n - 1), which is what this
package calls TPOT; it fills both the *_itl_s and the *_tpot_s fields.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from validate import __version__, environment
from validate.errors import ImportFormatError
from validate.metrics import summarize
from validate.results import PointResult, RequestRecord, RunMetadata

MS = 1e-3
STATS = ("mean", "median", "p90", "p99")


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ImportFormatError(f"cannot read {path} as JSON: {err}") from None


def import_file(path: Path, argv: list[str]) -> tuple[list[PointResult], list[RequestRecord], RunMetadata]:
    data = _load(path)
    if isinstance(data, dict) and "benchmarks" in data:
        return import_guidellm(data, path, argv)
    if isinstance(data, dict) and "request_throughput" in data and "completed" in data:
        return import_vllm_bench(data, path, argv)
    raise ImportFormatError(f"{path} is neither a `vllm bench serve --save-result` file nor a guidellm report")


def _metadata(argv: list[str], source: str, **fields: Any) -> RunMetadata:
    return RunMetadata(validate_command=argv, started_at=fields.pop("started_at", None) or environment.now_iso(),
                       host="unknown (imported)", validate_version=__version__, source=source, **fields)


def vllm_load_label(data: dict[str, Any]) -> str:
    rate = float(data.get("request_rate", math.inf))
    concurrency = data.get("max_concurrency")
    if math.isfinite(rate):
        return f"rate:{rate:.6g}"
    if concurrency:
        return f"concurrency:{int(concurrency)}"
    return f"burst:{int(data.get('num_prompts') or data['completed'] + data.get('failed', 0))}"


def _vllm_requests(data: dict[str, Any], load: str) -> list[RequestRecord]:
    starts = data.get("start_times") or [0.0] * len(data["ttfts"])
    first = min(starts) if starts else 0.0
    records = []
    for i, ttft in enumerate(data["ttfts"]):
        error = (data.get("errors") or [""] * len(data["ttfts"]))[i] or None
        latency = data["latencies"][i]
        records.append(RequestRecord(
            load=load, index=i, start_s=starts[i] - first, end_s=starts[i] - first + latency,
            ttft_s=None if error else ttft, e2e_latency_s=None if error else latency,
            itls_s=[] if error else list(data["itls"][i]), num_chunks=len(data["itls"][i]) + 1,
            input_tokens=0 if error else data["input_lens"][i], output_tokens=0 if error else data["output_lens"][i],
            requested_input_tokens=data["input_lens"][i], requested_output_tokens=data["output_lens"][i], error=error))
    return records


def import_vllm_bench(data: dict[str, Any], path: Path, argv: list[str]) -> tuple[
        list[PointResult], list[RequestRecord], RunMetadata]:
    load = vllm_load_label(data)
    duration_s = float(data["duration"])
    requests: list[RequestRecord] = []
    if all(isinstance(data.get(k), list) for k in ("ttfts", "itls", "latencies", "input_lens", "output_lens")):
        requests = _vllm_requests(data, load)
        fields = summarize(load, requests).model_dump(exclude={"load", "duration_s", "requests_per_s",
                                                               "output_tokens_per_s", "total_tokens_per_s",
                                                               "input_tokens_per_s", "completed", "failed"})
    else:
        fields = {f"{stat}_{name}_s": data[f"{stat}_{key}_ms"] * MS if data.get(f"{stat}_{key}_ms") is not None
                  else None for stat in STATS for name, key in
                  (("ttft", "ttft"), ("itl", "itl"), ("tpot", "tpot"), ("e2e_latency", "e2el"))}
    input_tokens, output_tokens = int(data["total_input_tokens"]), int(data["total_output_tokens"])
    fields.update(total_input_tokens=input_tokens, total_output_tokens=output_tokens,
                  max_concurrency=data.get("max_concurrent_requests"), source="vllm-bench", errors=[
                      e for e in dict.fromkeys(data.get("errors") or []) if e][:5])
    if data.get("completed"):
        fields.update(isl=input_tokens / data["completed"], osl=output_tokens / data["completed"])
    point = PointResult(load=load, completed=int(data["completed"]), failed=int(data.get("failed") or 0),
                        duration_s=duration_s, requests_per_s=float(data["request_throughput"]),
                        output_tokens_per_s=float(data["output_throughput"]),
                        total_tokens_per_s=float(data["total_token_throughput"]),
                        input_tokens_per_s=input_tokens / duration_s if duration_s else None, **fields)
    metadata = _metadata(argv, "vllm-bench", engine=data.get("backend"), model_id=data.get("model_id"),
                         served_model_name=data.get("model_id"), started_at=data.get("date"),
                         workload={"isl": round(point.isl) if point.isl else None,
                                   "osl": round(point.osl) if point.osl else None, "imported_from": str(path)})
    return [point], requests, metadata


def _dig(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _successful(metrics: dict[str, Any], name: str, scale: float, prefix: str) -> dict[str, float | None]:
    summary = _dig(metrics, name, "successful") or {}
    percentiles = summary.get("percentiles") or {}
    values = {"mean": summary.get("mean"), "median": summary.get("median", percentiles.get("p50")),
              "p90": percentiles.get("p90", summary.get("p90")), "p99": percentiles.get("p99", summary.get("p99"))}
    return {f"{stat}_{prefix}": None if v is None else float(v) * scale for stat, v in values.items()}


def guidellm_load_label(benchmark: dict[str, Any]) -> str:
    strategy = (_dig(benchmark, "args", "strategy") or _dig(benchmark, "config", "strategy")
                or benchmark.get("strategy") or {})
    kind = strategy.get("type_") or strategy.get("type") or ""
    rate = strategy.get("rate") or _dig(benchmark, "config", "rate")
    if kind == "synchronous":
        return "sync"
    if kind == "concurrent":
        return f"concurrency:{int(strategy.get('streams') or 0)}"
    if kind == "throughput":
        totals = benchmark.get("request_totals") or _dig(benchmark, "metrics", "request_totals") or {}
        return f"burst:{int(totals.get('total') or totals.get('successful') or 0)}"
    if rate is not None:
        return f"rate:{float(rate if not isinstance(rate, list) else rate[0]):.6g}"
    raise ImportFormatError(f"guidellm benchmark with an unknown strategy {strategy!r}")


def _guidellm_point(benchmark: dict[str, Any]) -> PointResult:
    metrics = benchmark.get("metrics") or {}
    totals = benchmark.get("request_totals") or metrics.get("request_totals") or {}
    completed, failed = int(totals.get("successful") or 0), int(totals.get("errored") or 0)
    rate = _dig(metrics, "requests_per_second", "successful", "mean") or 0.0
    duration = benchmark.get("duration") or (completed / rate if rate else 0.0)
    itl = _successful(metrics, "inter_token_latency_ms", MS, "itl_s")
    return PointResult(
        load=guidellm_load_label(benchmark), completed=completed, failed=failed, duration_s=float(duration),
        requests_per_s=float(rate),
        output_tokens_per_s=float(_dig(metrics, "output_tokens_per_second", "successful", "mean") or 0.0),
        total_tokens_per_s=float(_dig(metrics, "tokens_per_second", "successful", "mean") or 0.0),
        **_successful(metrics, "time_to_first_token_ms", MS, "ttft_s"), **itl,
        **{k.replace("itl", "tpot"): v for k, v in itl.items()},
        **_successful(metrics, "request_latency", 1.0, "e2e_latency_s"),
        isl=_dig(metrics, "prompt_token_count", "successful", "mean"),
        osl=_dig(metrics, "output_token_count", "successful", "mean"),
        mean_concurrency=_dig(metrics, "request_concurrency", "successful", "mean"), source="guidellm")


def import_guidellm(data: dict[str, Any], path: Path, argv: list[str]) -> tuple[
        list[PointResult], list[RequestRecord], RunMetadata]:
    benchmarks = [b for b in data.get("benchmarks") or [] if isinstance(b, dict)]
    if not benchmarks:
        raise ImportFormatError(f"{path} holds no guidellm benchmarks")
    points = [_guidellm_point(b) for b in benchmarks]
    first = points[0]
    metadata = _metadata(argv, "guidellm", engine=None, workload={
        "isl": round(first.isl) if first.isl else None, "osl": round(first.osl) if first.osl else None,
        "imported_from": str(path), "guidellm_version": _dig(data, "metadata", "guidellm_version")})
    return points, [], metadata
