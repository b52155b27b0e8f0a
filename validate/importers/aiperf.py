"""AIPerf (ai-dynamo/aiperf) ``profile_export_aiperf.json``: one point from its statistics (its per-record
``profile_export.jsonl``: validate.importers.aiperf_records).

Two layouts of the summary are read: early releases put the metrics under ``records`` (tag ``ttft``),
later ones at the top level (``time_to_first_token``, with ``schema_version`` and ``aiperf_version``).
Mapping: AIPerf's inter_token_latency is a per-request (e2e - TTFT) / (output tokens - 1), this
package's TPOT; its inter_chunk_latency pools the gaps between streamed chunks, this package's ITL (a
chunk may hold several tokens). Output lengths are output_sequence_length (reasoning tokens included).
The load comes from the run's configuration (``input_config``): a concurrency or a request rate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from validate.errors import ImportFormatError
from validate.importers.common import (SECONDS_PER, ImportedRun, PositiveCount, Rate, RequestRateStat, Stat, Strict,
                                       TimeStat, TokenRateStat, TokenStat, fields_of, load_json, make_metadata,
                                       make_point, rounded, validated, whole)

SUMMARY_FILE = "profile_export_aiperf.json"


class _Requests(Stat):
    unit: Literal["requests"]


class _Metrics(Strict):
    request_throughput: RequestRateStat | None = None
    output_token_throughput: TokenRateStat | None = None
    total_token_throughput: TokenRateStat | None = None
    request_count: _Requests | None = None
    error_request_count: _Requests | None = None
    benchmark_duration: TimeStat | None = None
    time_to_first_token: TimeStat | None = None
    ttft: TimeStat | None = None
    inter_token_latency: TimeStat | None = None
    inter_chunk_latency: TimeStat | None = None
    request_latency: TimeStat | None = None
    input_sequence_length: TokenStat | None = None
    output_sequence_length: TokenStat | None = None
    total_isl: TokenStat | None = None
    total_osl: TokenStat | None = None


class _Phase(Strict):
    name: str | None = None
    type: str | None = None
    concurrency: PositiveCount | None = None
    rate: Rate | None = None
    request_rate: Rate | None = None
    requests: PositiveCount | None = None


class _Loadgen(Strict):
    concurrency: PositiveCount | None = None
    request_rate: Rate | None = None
    warmup_request_count: int | None = None


class _ModelItem(Strict):
    name: str


class _Models(Strict):
    items: list[_ModelItem] = []


class _Endpoint(Strict):
    model_names: list[str] | None = None


class _InputConfig(Strict):
    loadgen: _Loadgen | None = None
    phases: list[_Phase] | None = None
    endpoint: _Endpoint | None = None
    models: _Models | None = None


class _Summary(_Metrics):
    records: _Metrics | None = None
    input_config: _InputConfig | None = None
    aiperf_version: str | None = None
    schema_version: str | None = None
    start_time: str | None = None


def is_aiperf_summary(data: Any, path: Path) -> bool:
    if not isinstance(data, dict):
        return False
    config = data.get("input_config")
    return (path.name.endswith("_aiperf.json") or "aiperf_version" in data or isinstance(data.get("records"), dict)
            or (isinstance(config, dict) and any(k in config for k in ("loadgen", "phases", "models"))))


def _avg(stat: Stat | None) -> float | None:
    return stat.avg if stat else None


def load_label(config: _InputConfig | None, where: str) -> tuple[str, int]:
    """(load label, warm-up requests) from the run's configuration."""
    config = config or _InputConfig()
    profiling = [p for p in config.phases or [] if p.name in (None, "profiling")]
    warmup = sum(p.requests or 0 for p in config.phases or [] if p.name == "warmup")
    loadgen = config.loadgen or _Loadgen()
    phase = profiling[0] if profiling else _Phase()
    rate = loadgen.request_rate or phase.request_rate or phase.rate
    concurrency = loadgen.concurrency or phase.concurrency
    warmup = warmup or max(loadgen.warmup_request_count or 0, 0)
    if rate:
        return f"rate:{rate:.6g}", warmup
    if concurrency:
        return f"concurrency:{concurrency}", warmup
    raise ImportFormatError(f"{where}: input_config: expected loadgen.concurrency or loadgen.request_rate, or a "
                            "profiling phase with a concurrency or rate (the load of the run)")


def model_name(config: _InputConfig | None) -> str | None:
    if config and config.models and config.models.items:
        return config.models.items[0].name
    if config and config.endpoint and config.endpoint.model_names:
        return config.endpoint.model_names[0]
    return None


def read_summary(path: Path) -> _Summary:
    data = load_json(path)
    if not isinstance(data, dict):
        raise ImportFormatError(f"{path}: expected a JSON object (an AIPerf summary), got {type(data).__name__}")
    return validated(_Summary, data, str(path))


def import_summary(raw: dict[str, Any], path: Path, argv: list[str]) -> ImportedRun:
    summary = validated(_Summary, raw, str(path))
    m = summary.records or summary
    where = f"{path}: {'records.' if summary.records else ''}"
    load, warmup = load_label(summary.input_config, str(path))
    completed = whole(_avg(m.request_count), where + "request_count.avg")
    duration = _avg(m.benchmark_duration)
    rps = _avg(m.request_throughput)
    if completed is None or duration is None or rps is None:
        raise ImportFormatError(f"{where}request_count, benchmark_duration, request_throughput: expected all three "
                                "(an AIPerf summary of a finished run)")
    duration *= SECONDS_PER[m.benchmark_duration.unit]  # type: ignore[union-attr]
    total_in, total_out = whole(_avg(m.total_isl), where + "total_isl"), whole(_avg(m.total_osl), where + "total_osl")
    input_rate = total_in / duration if total_in is not None and duration else None
    output_rate = _avg(m.output_token_throughput) or 0.0
    itl = m.inter_chunk_latency or m.inter_token_latency
    point = make_point(
        str(path), load=load, completed=completed,
        failed=whole(_avg(m.error_request_count), where + "error_request_count.avg") or 0,
        duration_s=duration, requests_per_s=rps, output_tokens_per_s=output_rate,
        total_tokens_per_s=_avg(m.total_token_throughput) or output_rate + (input_rate or 0.0),
        input_tokens_per_s=input_rate, **fields_of(m.time_to_first_token or m.ttft, "ttft_s"),
        **fields_of(itl, "itl_s"), **fields_of(m.inter_token_latency, "tpot_s"),
        **fields_of(m.request_latency, "e2e_latency_s"),
        isl=_avg(m.input_sequence_length), osl=_avg(m.output_sequence_length), total_input_tokens=total_in or 0,
        total_output_tokens=total_out or 0, warmup_requests=warmup, source="aiperf")
    model = model_name(summary.input_config)
    metadata = make_metadata(argv, "aiperf", model_id=model, served_model_name=model, started_at=summary.start_time,
                             workload={"isl": rounded(point.isl), "osl": rounded(point.osl), "imported_from": str(path),
                                       "aiperf_version": summary.aiperf_version,
                                       "itl_from": "inter_chunk_latency" if m.inter_chunk_latency else
                                       "inter_token_latency (no chunk gaps in the file)"})
    return ImportedRun([point], [], metadata)

