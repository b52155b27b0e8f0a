"""guidellm JSON reports: one point per benchmark, from the "successful" distributions.

Both layouts are read: v0.3 to v0.7 (strategy under ``args.strategy`` or at the top) and the report of
the current CLI (``metadata.version`` 2, guidellm 0.8+: strategy under ``config.strategy``, a
``config.profile`` beside it). guidellm's inter_token_latency_ms is a per-request (last - first) / (n - 1),
which is what this package calls TPOT; it fills both the *_itl_s and the *_tpot_s fields. (guidellm's own
time_per_output_token_ms divides by n, the first token included, and is not used.)
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from validate.errors import ImportFormatError
from validate.importers.common import (MS, Count, ImportedRun, NonNegative, PositiveCount, Rate, Strict,
                                       make_metadata, make_point, rounded, validated)
from validate.results import PointResult


class _Percentiles(Strict):
    p50: NonNegative | None = None
    p90: NonNegative | None = None
    p99: NonNegative | None = None


class _Distribution(Strict):
    mean: NonNegative | None = None
    median: NonNegative | None = None
    p90: NonNegative | None = None
    p99: NonNegative | None = None
    percentiles: _Percentiles | None = None


class _Metric(Strict):
    successful: _Distribution | None = None


class _Totals(Strict):
    successful: Count | None = None
    errored: Count | None = None
    incomplete: Count | None = None
    total: Count | None = None


class _Strategy(Strict):
    type_: str | None = None
    type: str | None = None
    rate: Rate | list[Rate] | None = None
    streams: PositiveCount | None = None


class _Metrics(Strict):
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


class _StrategyHolder(Strict):
    strategy: _Strategy | None = None
    rate: Rate | list[Rate] | None = None


class _Benchmark(Strict):
    args: _StrategyHolder | None = None
    config: _StrategyHolder | None = None
    strategy: _Strategy | None = None
    duration: NonNegative | None = None
    request_totals: _Totals | None = None
    metrics: _Metrics | None = None


class _GuidellmMetadata(Strict):
    guidellm_version: str | None = None
    version: int | None = None


class _Backend(Strict):
    model: str | None = None
    target: str | None = None


class _Spec(Strict):
    backend: _Backend | None = None


class _Config(Strict):
    spec: _Spec | None = None


class GuidellmReport(Strict):
    benchmarks: Annotated[list[_Benchmark], Field(min_length=1)]
    metadata: _GuidellmMetadata | None = None
    config: _Config | None = None


def is_guidellm(data: Any) -> bool:
    return isinstance(data, dict) and "benchmarks" in data


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


def _point(b: _Benchmark, path: Path, where: str) -> PointResult:
    metrics = b.metrics or _Metrics()
    totals = b.request_totals or metrics.request_totals or _Totals()
    completed, failed = totals.successful or 0, totals.errored or 0
    rate = _mean(metrics.requests_per_second) or 0.0
    duration = b.duration or (completed / rate if rate else 0.0)
    itl = _successful(metrics.inter_token_latency_ms, MS, "itl_s")
    return make_point(
        str(path), load=guidellm_load_label(b, f"{path}: {where}"), completed=completed, failed=failed,
        duration_s=duration, requests_per_s=rate, output_tokens_per_s=_mean(metrics.output_tokens_per_second) or 0.0,
        total_tokens_per_s=_mean(metrics.tokens_per_second) or 0.0,
        **_successful(metrics.time_to_first_token_ms, MS, "ttft_s"), **itl,
        **{k.replace("itl", "tpot"): v for k, v in itl.items()},
        **_successful(metrics.request_latency, 1.0, "e2e_latency_s"),
        isl=_mean(metrics.prompt_token_count), osl=_mean(metrics.output_token_count),
        mean_concurrency=_mean(metrics.request_concurrency), source="guidellm")


def import_guidellm(raw: dict[str, Any], path: Path, argv: list[str]) -> ImportedRun:
    if isinstance(raw.get("benchmarks"), list) and not raw["benchmarks"]:
        raise ImportFormatError(f"{path}: benchmarks: holds no guidellm benchmarks")
    report = validated(GuidellmReport, raw, str(path))
    points = [_point(b, path, f"benchmarks.{i}") for i, b in enumerate(report.benchmarks)]
    first = points[0]
    backend = report.config.spec.backend if report.config and report.config.spec else None
    model = backend.model if backend else None
    metadata = make_metadata(argv, "guidellm", engine=None, model_id=model, served_model_name=model,
                             base_url=backend.target if backend else None, workload={
        "isl": rounded(first.isl), "osl": rounded(first.osl), "imported_from": str(path),
        "guidellm_version": report.metadata.guidellm_version if report.metadata else None,
        "guidellm_report_version": report.metadata.version if report.metadata else None})
    return ImportedRun(points, [], metadata)
