"""Import other tools' reports into points.jsonl form: ``vllm bench serve --save-result`` and guidellm.

vLLM: with ``--save-detailed`` the file holds per-request lists (ttfts, itls, latencies, lengths,
errors, start_times); latency statistics are then recomputed with this package's definitions and the
requests are imported too. Without them the summary keys are used (``p90_*`` only if it was run
with ``--metric-percentiles ...90...``). Throughput is the tool's own: completed / its duration.

guidellm (v0.3 to v0.7 JSON reports): one point per benchmark, from the "successful" distributions.
guidellm's inter_token_latency_ms is a per-request (last - first) / (n - 1), which is what this
package calls TPOT; it fills both the *_itl_s and the *_tpot_s fields.

Every file is read through a strict pydantic model of the fields used (numbers must be JSON numbers,
finite and not negative; counts integers; per-request lists of one length). Anything else is an
``ImportFormatError: FILE: field: what was expected`` on one line. Keys that are not read are ignored.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from validate import __version__, environment
from validate.errors import ImportFormatError, one_line
from validate.metrics import summarize
from validate.results import PointResult, RequestRecord, RunMetadata

MS = 1e-3
STATS = ("mean", "median", "p90", "p99")
MAX_COUNT = 10**12  # requests or tokens: more than any benchmark file holds
MAX_FILE_BYTES = 2 * 2**30

Finite = Annotated[float, Field(allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
PositiveCount = Annotated[int, Field(ge=1, le=MAX_COUNT)]
Rate = Annotated[float, Field(gt=0)]  # requests/s; vLLM writes inf (or "inf") for "all at once"


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")


# ---------------------------------------------------------------- vllm bench serve --save-result

_VLLM_STAT_KEYS = ("ttft", "itl", "tpot", "e2el")


class _VllmBase(_Strict):
    date: str | None = None
    backend: str | None = None
    model_id: str | None = None
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
    **{f"{stat}_{key}_ms": (NonNegative | None, None) for stat in STATS for key in _VLLM_STAT_KEYS})

DETAILED = ("ttfts", "itls", "latencies", "input_lens", "output_lens")


def _load(path: Path) -> Any:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ImportFormatError(f"{path}: larger than {MAX_FILE_BYTES // 2**30} GiB; not a benchmark report")
        return json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError) as err:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise ImportFormatError(f"{path}: cannot read it as JSON: {one_line(err)}") from None
    except RecursionError:
        raise ImportFormatError(f"{path}: JSON nested too deeply; not a benchmark report") from None


def import_file(path: Path, argv: list[str]) -> tuple[list[PointResult], list[RequestRecord], RunMetadata]:
    data = _load(path)
    if not isinstance(data, dict):
        raise ImportFormatError(f"{path}: expected a JSON object (a vllm bench serve result or a guidellm "
                                f"report), got {type(data).__name__}")
    if "benchmarks" in data:
        return import_guidellm(data, path, argv)
    if "request_throughput" in data and "completed" in data:
        return import_vllm_bench(data, path, argv)
    raise ImportFormatError(f"{path}: neither a `vllm bench serve --save-result` file (request_throughput, "
                            "completed) nor a guidellm report (benchmarks)")


def _validated(model: type[BaseModel], data: dict[str, Any], path: Path) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise ImportFormatError(f"{path}: {one_line(err)}") from None


def _point(path: Path, **fields: Any) -> PointResult:
    try:
        return PointResult(**fields)
    except ValidationError as err:
        raise ImportFormatError(f"{path}: {one_line(err)}") from None


def _metadata(argv: list[str], source: str, **fields: Any) -> RunMetadata:
    return RunMetadata(validate_command=argv, started_at=fields.pop("started_at", None) or environment.now_iso(),
                       host="unknown (imported)", validate_version=__version__, source=source, **fields)


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


def _vllm_requests(data: Any, load: str, count: int) -> list[RequestRecord]:
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


def import_vllm_bench(raw: dict[str, Any], path: Path, argv: list[str]) -> tuple[
        list[PointResult], list[RequestRecord], RunMetadata]:
    data = _validated(VllmBenchFile, raw, path)
    load = vllm_load_label(data)
    requests: list[RequestRecord] = []
    if all(getattr(data, key) is not None for key in DETAILED):
        requests = _vllm_requests(data, load, _check_detailed(data, path))
        fields = summarize_fields(load, requests)
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
    point = _point(path, load=load, completed=completed, failed=data.failed or 0, duration_s=data.duration,
                   requests_per_s=data.request_throughput, output_tokens_per_s=data.output_throughput,
                   total_tokens_per_s=data.total_token_throughput,
                   input_tokens_per_s=data.total_input_tokens / data.duration, **fields)
    metadata = _metadata(argv, "vllm-bench", engine=data.backend, model_id=data.model_id,
                         served_model_name=data.model_id, started_at=data.date,
                         workload={"isl": round(point.isl) if point.isl else None,
                                   "osl": round(point.osl) if point.osl else None, "imported_from": str(path)})
    return [point], requests, metadata


def summarize_fields(load: str, requests: list[RequestRecord]) -> dict[str, Any]:
    """Latency statistics recomputed from the requests (throughput stays the tool's own)."""
    return summarize(load, requests).model_dump(exclude={
        "load", "duration_s", "requests_per_s", "output_tokens_per_s", "total_tokens_per_s", "input_tokens_per_s",
        "completed", "failed"})


# ---------------------------------------------------------------- guidellm JSON reports


class _Percentiles(_Strict):
    p50: NonNegative | None = None
    p90: NonNegative | None = None
    p99: NonNegative | None = None


class _Distribution(_Strict):
    mean: NonNegative | None = None
    median: NonNegative | None = None
    p90: NonNegative | None = None
    p99: NonNegative | None = None
    percentiles: _Percentiles | None = None


class _Metric(_Strict):
    successful: _Distribution | None = None


class _Totals(_Strict):
    successful: Count | None = None
    errored: Count | None = None
    incomplete: Count | None = None
    total: Count | None = None


class _Strategy(_Strict):
    type_: str | None = None
    type: str | None = None
    rate: Rate | list[Rate] | None = None
    streams: PositiveCount | None = None


class _Metrics(_Strict):
    requests_per_second: _Metric | None = None
    output_tokens_per_second: _Metric | None = None
    tokens_per_second: _Metric | None = None
    time_to_first_token_ms: _Metric | None = None
    inter_token_latency_ms: _Metric | None = None
    request_latency: _Metric | None = None
    prompt_token_count: _Metric | None = None
    output_token_count: _Metric | None = None
    request_concurrency: _Metric | None = None
    request_totals: _Totals | None = None


class _StrategyHolder(_Strict):
    strategy: _Strategy | None = None
    rate: Rate | list[Rate] | None = None


class _Benchmark(_Strict):
    args: _StrategyHolder | None = None
    config: _StrategyHolder | None = None
    strategy: _Strategy | None = None
    duration: NonNegative | None = None
    request_totals: _Totals | None = None
    metrics: _Metrics | None = None


class _GuidellmMetadata(_Strict):
    guidellm_version: str | None = None


class GuidellmReport(_Strict):
    benchmarks: Annotated[list[_Benchmark], Field(min_length=1)]
    metadata: _GuidellmMetadata | None = None


def _mean(metric: _Metric | None) -> float | None:
    return metric.successful.mean if metric is not None and metric.successful is not None else None


def _successful(metric: _Metric | None, scale: float, prefix: str) -> dict[str, float | None]:
    summary = metric.successful if metric is not None and metric.successful else _Distribution()
    percentiles = summary.percentiles or _Percentiles()
    values = {"mean": summary.mean, "median": summary.median if summary.median is not None else percentiles.p50,
              "p90": percentiles.p90 if percentiles.p90 is not None else summary.p90,
              "p99": percentiles.p99 if percentiles.p99 is not None else summary.p99}
    return {f"{stat}_{prefix}": None if v is None else v * scale for stat, v in values.items()}


def _first_rate(rate: float | list[float] | None) -> float | None:
    if isinstance(rate, list):
        return rate[0] if rate else None
    return rate


def guidellm_load_label(b: _Benchmark, where: str) -> str:
    strategy = ((b.args.strategy if b.args else None) or (b.config.strategy if b.config else None) or b.strategy
                or _Strategy())
    kind = strategy.type_ or strategy.type or ""
    rate = _first_rate(strategy.rate) or _first_rate(b.config.rate if b.config else None)
    if kind == "synchronous":
        return "sync"
    if kind == "concurrent":
        if not strategy.streams:
            raise ImportFormatError(f"{where}.strategy.streams: expected a positive integer for a concurrent strategy")
        return f"concurrency:{strategy.streams}"
    if kind == "throughput":
        totals = b.request_totals or (b.metrics.request_totals if b.metrics else None) or _Totals()
        size = totals.total or totals.successful
        if not size:
            raise ImportFormatError(f"{where}.request_totals.total: expected a positive request count for a "
                                    "throughput (burst) benchmark")
        return f"burst:{size}"
    if rate is not None and math.isfinite(rate):
        return f"rate:{rate:.6g}"
    raise ImportFormatError(f"{where}.strategy: expected synchronous, concurrent, throughput or a finite rate "
                            f"(got type {kind!r})")


def _guidellm_point(b: _Benchmark, path: Path, where: str) -> PointResult:
    metrics = b.metrics or _Metrics()
    totals = b.request_totals or metrics.request_totals or _Totals()
    completed, failed = totals.successful or 0, totals.errored or 0
    rate = _mean(metrics.requests_per_second) or 0.0
    duration = b.duration or (completed / rate if rate else 0.0)
    itl = _successful(metrics.inter_token_latency_ms, MS, "itl_s")
    return _point(
        path, load=guidellm_load_label(b, f"{path}: {where}"), completed=completed, failed=failed, duration_s=duration,
        requests_per_s=rate, output_tokens_per_s=_mean(metrics.output_tokens_per_second) or 0.0,
        total_tokens_per_s=_mean(metrics.tokens_per_second) or 0.0,
        **_successful(metrics.time_to_first_token_ms, MS, "ttft_s"), **itl,
        **{k.replace("itl", "tpot"): v for k, v in itl.items()},
        **_successful(metrics.request_latency, 1.0, "e2e_latency_s"),
        isl=_mean(metrics.prompt_token_count), osl=_mean(metrics.output_token_count),
        mean_concurrency=_mean(metrics.request_concurrency), source="guidellm")


def import_guidellm(raw: dict[str, Any], path: Path, argv: list[str]) -> tuple[
        list[PointResult], list[RequestRecord], RunMetadata]:
    if isinstance(raw.get("benchmarks"), list) and not raw["benchmarks"]:
        raise ImportFormatError(f"{path}: benchmarks: holds no guidellm benchmarks")
    report = _validated(GuidellmReport, raw, path)
    points = [_guidellm_point(b, path, f"benchmarks.{i}") for i, b in enumerate(report.benchmarks)]
    first = points[0]
    metadata = _metadata(argv, "guidellm", engine=None, workload={
        "isl": round(first.isl) if first.isl else None, "osl": round(first.osl) if first.osl else None,
        "imported_from": str(path), "guidellm_version": report.metadata.guidellm_version if report.metadata else None})
    return points, [], metadata
