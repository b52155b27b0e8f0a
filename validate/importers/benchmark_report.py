"""llm-d Benchmark Report v0.2.x (llm-d/llm-d-benchmark, JSON or YAML): one report is one point.

Read: the workload's standardized load (concurrency or ``rate_qps``) and lengths, the aggregate request
counts, latencies (TTFT, TPOT, ITL, request latency) and throughputs, and the first inference-engine
component of the stack (model, tool and version, accelerator, its argv: ``native.config.argv`` where kept,
else the flags of ``native.args``). A report this package wrote (``validate export --format
benchmark-report``) also carries its exact point under ``scenario.load.native.config.point``; it is read
back only if it agrees with the report's own aggregates, so an edited report cannot keep a stale copy.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError

from validate.errors import ImportFormatError, one_line
from validate.importers.common import (Count, ImportedRun, NonNegative, Strict, make_metadata, make_point, rounded,
                                       stat_fields, validated)
from validate.results import PointResult

EXPORT_TOOL = "llm-capacity-validate"
TIME_SCALE = {"s": 1.0, "ms": 1e-3, "s/token": 1.0, "ms/token": 1e-3}


class _Statistics(Strict):
    units: str
    mean: NonNegative
    p50: NonNegative | None = None
    p90: NonNegative | None = None
    p99: NonNegative | None = None


class _TimeStatistics(_Statistics):
    units: Literal["s", "ms", "s/token", "ms/token"]


class _Latency(Strict):
    time_to_first_token: _TimeStatistics | None = None
    time_per_output_token: _TimeStatistics | None = None
    inter_token_latency: _TimeStatistics | None = None
    request_latency: _TimeStatistics | None = None


class _Requests(Strict):
    total: Count
    failures: Count | None = None
    incomplete: Count | None = None
    input_length: _Statistics | None = None
    output_length: _Statistics | None = None


class _RateStatistics(_Statistics):
    units: Literal["queries/s", "tokens/s"]


class _Throughput(Strict):
    request_rate: _RateStatistics | None = None
    output_token_rate: _RateStatistics | None = None
    input_token_rate: _RateStatistics | None = None
    total_token_rate: _RateStatistics | None = None


class _Aggregate(Strict):
    requests: _Requests | None = None
    latency: _Latency | None = None
    throughput: _Throughput | None = None


class _RequestPerformance(Strict):
    aggregate: _Aggregate | None = None


class _Results(Strict):
    request_performance: _RequestPerformance | None = None


class _SeqLen(Strict):
    value: NonNegative


class _LoadStandardized(Strict):
    tool: str
    tool_version: str
    rate_qps: Annotated[float, Field(gt=0)] | None = None  # YAML's .inf reads as inf
    concurrency: Annotated[float, Field(gt=0)] | None = None
    input_seq_len: _SeqLen | None = None
    output_seq_len: _SeqLen | None = None


class _LoadNative(Strict):
    config: Any = None


class _Load(Strict):
    standardized: _LoadStandardized
    native: _LoadNative | None = None


class _Parallelism(Strict):
    tp: Count = 1


class _Accelerator(Strict):
    model: str
    count: Count
    parallelism: _Parallelism | None = None


class _Model(Strict):
    name: str


class _Standardized(Strict):
    kind: str
    tool: str | None = None
    tool_version: str | None = None
    model: _Model | None = None
    accelerator: _Accelerator | None = None


class _Native(Strict):
    args: dict[str, Any] | None = None
    config: Any = None

    def argv(self) -> list[str]:
        """The whole argv where a report of this package kept it (config.argv), else the flags of args."""
        kept = self.config.get("argv") if isinstance(self.config, dict) else None
        if isinstance(kept, list) and all(isinstance(a, str) for a in kept):
            return kept
        return argv_from_args(self.args)


class _Component(Strict):
    standardized: _Standardized
    native: _Native | None = None


class _Scenario(Strict):
    stack: list[_Component] | None = None
    load: _Load | None = None


class _RunTime(Strict):
    start: str | None = None


class _Run(Strict):
    uid: str
    time: _RunTime | None = None


class BenchmarkReport(Strict):
    version: Annotated[str, Field(pattern=r"^0\.2(\.\d+)?$")]
    run: _Run
    scenario: _Scenario | None = None
    results: _Results


def is_benchmark_report(data: Any) -> bool:
    return isinstance(data, dict) and "results" in data and "run" in data and "version" in data


def _stats(s: _Statistics | None, prefix: str) -> dict[str, float | None]:
    if s is None:
        return stat_fields(prefix, None)
    return stat_fields(prefix, (s.mean, s.p50, s.p90, s.p99), TIME_SCALE.get(s.units, 1.0))


def _mean(s: _Statistics | None) -> float | None:
    return s.mean if s else None


def _load_label(load: _LoadStandardized, where: str) -> str:
    if load.rate_qps is not None and math.isfinite(load.rate_qps):
        return f"rate:{load.rate_qps:.6g}"
    if load.concurrency is not None and math.isfinite(load.concurrency):
        if load.concurrency != int(load.concurrency):
            raise ImportFormatError(f"{where}: scenario.load.standardized.concurrency: expected a whole number")
        return f"concurrency:{int(load.concurrency)}"
    raise ImportFormatError(f"{where}: scenario.load.standardized: expected a finite rate_qps or concurrency")


def argv_from_args(args: dict[str, Any] | None) -> list[str]:
    """llm-d's native args ({"--flag": value or null}) as an argv."""
    argv: list[str] = []
    for flag, value in (args or {}).items():
        argv.append(str(flag))
        if value is not None:
            argv.append(value if isinstance(value, str) else json.dumps(value))
    return argv


def _exported_point(load: _Load | None, point: PointResult, where: str) -> PointResult | None:
    """The exact point a report of this package carries, if it agrees with the report's aggregates."""
    config = load.native.config if load and load.native else None
    if load is None or load.standardized.tool != EXPORT_TOOL or not isinstance(config, dict) or "point" not in config:
        return None
    try:
        exact = PointResult.model_validate(config["point"])
    except ValidationError as err:
        raise ImportFormatError(f"{where}: scenario.load.native.config.point.{one_line(err)}") from None
    for key in ("completed", "failed", "requests_per_s", "output_tokens_per_s", "mean_ttft_s", "mean_itl_s",
                "mean_tpot_s", "mean_e2e_latency_s"):
        ours, theirs = getattr(exact, key), getattr(point, key)
        if theirs is not None and (ours is None or not math.isclose(ours, theirs, rel_tol=1e-9, abs_tol=1e-12)):
            raise ImportFormatError(f"{where}: scenario.load.native.config.point.{key}: expected {theirs!r} as in "
                                    f"the report's aggregates (got {ours!r}): the report was edited")
    return exact


def import_benchmark_report(raw: dict[str, Any], path: Path, argv: list[str]) -> ImportedRun:
    report = validated(BenchmarkReport, raw, str(path))
    where = str(path)
    load = report.scenario.load if report.scenario else None
    if load is None:
        raise ImportFormatError(f"{where}: scenario.load: expected the workload (its standardized load and lengths)")
    aggregate = report.results.request_performance.aggregate if report.results.request_performance else None
    if aggregate is None or aggregate.requests is None or aggregate.throughput is None:
        raise ImportFormatError(f"{where}: results.request_performance.aggregate: expected requests and throughput")
    req, thr, lat = aggregate.requests, aggregate.throughput, aggregate.latency or _Latency()
    failed, incomplete = req.failures or 0, req.incomplete or 0
    if failed + incomplete > req.total:
        raise ImportFormatError(f"{where}: results.request_performance.aggregate.requests.total: expected at least "
                                f"failures + incomplete ({failed + incomplete}, got {req.total})")
    completed, rps = req.total - failed - incomplete, _mean(thr.request_rate)
    if rps is None:
        raise ImportFormatError(f"{where}: results.request_performance.aggregate.throughput.request_rate: expected "
                                "the requests/s")
    output = _mean(thr.output_token_rate) or 0.0
    inputs = _mean(thr.input_token_rate)
    point = make_point(
        where, load=_load_label(load.standardized, where), completed=completed, failed=failed,
        duration_s=completed / rps if rps else 0.0, requests_per_s=rps, output_tokens_per_s=output,
        total_tokens_per_s=_mean(thr.total_token_rate) or output + (inputs or 0.0), input_tokens_per_s=inputs,
        **_stats(lat.time_to_first_token, "ttft_s"), **_stats(lat.inter_token_latency, "itl_s"),
        **_stats(lat.time_per_output_token, "tpot_s"), **_stats(lat.request_latency, "e2e_latency_s"),
        isl=_mean(req.input_length), osl=_mean(req.output_length), source="benchmark-report")
    point = _exported_point(load, point, where) or point
    engines = [c for c in (report.scenario.stack or []) if c.standardized.kind == "inference_engine"]
    engine = engines[0] if engines else None
    std = engine.standardized if engine else _Standardized(kind="none")
    accelerator = std.accelerator
    config = load.native.config if load.native and isinstance(load.native.config, dict) else {}
    workload = config.get("workload") if load.standardized.tool == EXPORT_TOOL else None
    metadata = make_metadata(
        argv, "benchmark-report", engine=std.tool, engine_version=std.tool_version,
        engine_argv=engine.native.argv() if engine and engine.native else [],
        model_id=std.model.name if std.model else None, served_model_name=std.model.name if std.model else None,
        gpu_id=config.get("gpu_id") if isinstance(config.get("gpu_id"), str) else None,
        gpu_name=accelerator.model if accelerator else None, gpu_count=accelerator.count if accelerator else None,
        started_at=report.run.time.start if report.run.time else None,
        workload={**(workload if isinstance(workload, dict) else {"isl": rounded(point.isl),
                                                                    "osl": rounded(point.osl)}),
                  "imported_from": str(path), "report_version": report.version,
                  "report_uid": report.run.uid, "load_tool": load.standardized.tool,
                  "load_tool_version": load.standardized.tool_version})
    return ImportedRun([point], [], metadata)
