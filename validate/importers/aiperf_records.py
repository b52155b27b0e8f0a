"""AIPerf's per-record ``profile_export.jsonl``: one request per line (nanosecond timestamps, chunk gaps,
lengths, error), summarized into the point with this package's definitions (validate.metrics). The file
says nothing of the load, which is read from the ``profile_export_aiperf.json`` beside it; warm-up
records (``benchmark_phase`` or ``credit_phase`` "warmup") are counted, not measured.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from validate.errors import ImportFormatError
from validate.importers.aiperf import SUMMARY_FILE, load_label, model_name, read_summary
from validate.importers.common import (SECONDS_PER, ImportedRun, Nanoseconds, NonNegative, Strict, make_metadata,
                                       make_point, rounded, summarized, validated)
from validate.results import RequestRecord


class _Value(Strict):
    value: NonNegative | list[NonNegative]
    unit: str


class _RecordMetadata(Strict):
    request_start_ns: Nanoseconds | None = None
    request_end_ns: Nanoseconds | None = None
    timestamp_ns: Nanoseconds | None = None
    benchmark_phase: str | None = None
    credit_phase: str | None = None


class _RecordError(Strict):
    code: int | None = None
    type: str | None = None
    message: str | None = None


class _Record(Strict):
    metadata: _RecordMetadata
    metrics: dict[str, _Value] | None = None
    error: _RecordError | None = None


def is_aiperf_record(value: Any) -> bool:
    return isinstance(value, dict) and "metadata" in value and "metrics" in value


def _seconds(metrics: dict[str, _Value], names: tuple[str, ...], where: str) -> float | list[float] | None:
    for name in names:
        if name in metrics:
            v = metrics[name]
            if v.unit not in SECONDS_PER:
                raise ImportFormatError(f"{where}: metrics.{name}.unit: expected one of {', '.join(SECONDS_PER)} "
                                        f"(got {v.unit!r})")
            scale = SECONDS_PER[v.unit]
            return [x * scale for x in v.value] if isinstance(v.value, list) else v.value * scale
    return None


def _number(metrics: dict[str, _Value], name: str, where: str) -> float | None:
    if name not in metrics:
        return None
    value = metrics[name].value
    if isinstance(value, list):
        raise ImportFormatError(f"{where}: metrics.{name}.value: expected a number (got a list)")
    return value


def _record(line: int, raw: Any, path: Path, index: int, load: str) -> tuple[RequestRecord, bool, float]:
    """(request with start and end in ns-epoch seconds, whether it was a warm-up one, its start)."""
    where = f"{path}:{line}"
    rec = validated(_Record, raw, where)
    metrics, meta = rec.metrics or {}, rec.metadata
    phase = meta.benchmark_phase or meta.credit_phase or "profiling"
    start_ns = meta.request_start_ns or meta.timestamp_ns or _number(metrics, "min_request_timestamp", where)
    if start_ns is None:
        raise ImportFormatError(f"{where}: metadata.request_start_ns: expected the request's start time (ns)")
    start = start_ns * 1e-9
    latency = _seconds(metrics, ("request_latency",), where)
    end_ns = meta.request_end_ns or _number(metrics, "max_response_timestamp", where)
    end = end_ns * 1e-9 if end_ns is not None else start + (latency if isinstance(latency, float) else 0.0)
    if end < start:
        raise ImportFormatError(f"{where}: metadata.request_end_ns: expected a time after the request's start")
    error = None
    if rec.error is not None:
        error = ": ".join(p for p in (rec.error.type, rec.error.message) if p) or f"error {rec.error.code}"
    ttft = _seconds(metrics, ("time_to_first_token", "ttft"), where)
    if isinstance(ttft, float) and isinstance(latency, float) and latency < ttft:
        raise ImportFormatError(f"{where}: metrics.request_latency: expected at least the time to first token "
                                f"({latency!r} s < {ttft!r} s)")
    gaps = _seconds(metrics, ("inter_chunk_latency",), where)
    gaps = gaps if isinstance(gaps, list) else ([] if gaps is None else [gaps])
    out = _number(metrics, "output_sequence_length", where) or 0
    inp = _number(metrics, "input_sequence_length", where) or 0
    record = RequestRecord(
        load=load, index=index, start_s=start, end_s=end, ttft_s=None if error else ttft,
        e2e_latency_s=None if error or not isinstance(latency, float) else latency, itls_s=[] if error else gaps,
        num_chunks=len(gaps) + 1 if ttft is not None else 0, input_tokens=0 if error else int(inp),
        output_tokens=0 if error else int(out), requested_input_tokens=int(inp), error=error)
    return record, phase == "warmup", start


def import_records(lines: list[tuple[int, Any]], path: Path, argv: list[str]) -> ImportedRun:
    beside = path.with_name(SUMMARY_FILE)
    if not beside.is_file():
        raise ImportFormatError(f"{path}: an AIPerf per-record file does not say its load; expected {SUMMARY_FILE} "
                                "beside it (the same run's summary)")
    summary = read_summary(beside)
    load, _ = load_label(summary.input_config, str(beside))
    parsed = [_record(line, raw, path, i, load) for i, (line, raw) in enumerate(lines)]
    measured = [r for r, warm, _ in parsed if not warm]
    if not measured:
        raise ImportFormatError(f"{path}: holds no profiling records")
    first = min(r.start_s for r in measured)
    requests = [r.model_copy(update={"index": i, "start_s": r.start_s - first, "end_s": r.end_s - first})
                for i, r in enumerate(measured)]
    computed = summarized(str(path), load, requests, warmup_requests=len(parsed) - len(measured))
    point = make_point(str(path), **{**computed.model_dump(), "source": "aiperf-records"})
    model = model_name(summary.input_config)
    metadata = make_metadata(argv, "aiperf-records", model_id=model, served_model_name=model,
                             started_at=summary.start_time,
                             workload={"isl": rounded(point.isl), "osl": rounded(point.osl), "imported_from": str(path),
                                       "load_from": str(beside), "aiperf_version": summary.aiperf_version})
    return ImportedRun([point], requests, metadata, read_beside=[beside])
