"""``validate export DIR... --format benchmark-report|csv|parquet --out FILE``: this package's results for other
tools (docs/formats.md).

benchmark-report: llm-d's Benchmark Report v0.2.1 (the schema of llm-d/llm-d-benchmark), one report per
point as llm-d-benchmark writes them: FILE itself for a single point, else FILE's name with _0, _1, ...
before its suffix. Stack (the engine, model, accelerator and argv), load (the standardized workload, and
this package's exact point under ``native.config`` so ``validate import`` reads it back unchanged), the
aggregates in seconds and per-second rates, and observability from the point's engine and GPU telemetry
and its telemetry.jsonl series (KV-cache usage, running and waiting requests while it ran) where it has
them. csv / parquet: one row per point of every folder, every field of the point (nested ones flattened
as ``parent_child``, lists as JSON) beside the run's metadata as ``run_*`` columns. parquet needs pyarrow.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from capacity.load import load_of
from validate.errors import ResultsError, UsageError
from validate.importers.benchmark_report import EXPORT_TOOL
from validate.results import PointResult, ResultsDir, RunMetadata
from capacity.argtypes import output_file

REPORT_VERSION = "0.2.1"
STATS = (("mean", "mean"), ("median", "p50"), ("p90", "p90"), ("p99", "p99"))
TP_FLAGS = ("--tensor-parallel-size", "--tp-size", "--tp", "-tp")
RUN_FIELDS = ("model_id", "served_model_name", "engine", "engine_version", "gpu_id", "gpu_name", "gpu_count", "host",
              "cpu_model", "started_at", "profile", "validate_version", "source")


def _run(path: str | Path) -> tuple[list[PointResult], RunMetadata]:
    if not (Path(path) / "points.jsonl").is_file():
        raise ResultsError(f"{path} is not a results folder (no points.jsonl in it)")
    folder = ResultsDir(path)
    points, metadata = folder.points(), folder.read_metadata()
    if metadata is None:
        raise ResultsError(f"{path}: no metadata.json (what was measured, with what)")
    return points, metadata


def _id(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _flag(argv: list[str], names: tuple[str, ...]) -> str | None:
    for i, arg in enumerate(argv):
        name, eq, value = arg.partition("=")
        if name in names:
            return value if eq else (argv[i + 1] if i + 1 < len(argv) else None)
    return None


def argv_args(argv: list[str]) -> dict[str, Any]:
    """An argv's flags as llm-d's native args: {"--flag": value, "--switch": None} (positionals left out)."""
    args: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("-"):
            name, eq, value = arg.partition("=")
            if eq:
                args[name] = value
            elif i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                args[name] = argv[i + 1]
                i += 1
            else:
                args[name] = None
        i += 1
    return args


def _statistics(point: PointResult, name: str, units: str) -> dict[str, Any] | None:
    values = {key: getattr(point, f"{stat}_{name}") for stat, key in STATS}
    if values["mean"] is None:
        return None
    return {"units": units, **{k: v for k, v in values.items() if v is not None}}


def _mean(value: float | None, units: str) -> dict[str, Any] | None:
    return None if value is None else {"units": units, "mean": value}


def _lengths(workload: dict[str, Any], key: str, measured: float | None) -> dict[str, Any] | None:
    value = workload.get(key)
    value = value if isinstance(value, (int, float)) and value > 0 else (round(measured) if measured else None)
    if value is None:
        return None
    kind, _, ratio_text = str(workload.get("length_dist") or "fixed").partition(":")
    try:
        ratio = float(ratio_text) if ratio_text else 0.0
    except ValueError:
        ratio = 0.0
    if kind == "uniform" and ratio > 0:
        return {"distribution": "uniform", "value": value, "min": int(value * (1 - ratio)),
                "max": max(int(value * (1 + ratio)), 1)}
    if kind == "normal" and ratio > 0:
        return {"distribution": "gaussian", "value": value, "std_dev": ratio * value}
    return {"distribution": "fixed" if kind == "fixed" else "other", "value": value}


def _load_standardized(point: PointResult, index: int, metadata: RunMetadata) -> dict[str, Any]:
    load = load_of(point.load)  # None: a label no load shape reads (an imported run's): no load fields
    out: dict[str, Any] = {"tool": EXPORT_TOOL, "tool_version": str(getattr(metadata, "validate_version", "unknown")),
                           "source": "random" if getattr(metadata, "source", None) in (None, "validate") else "unknown",
                           "stage": index}
    in_flight = load.shape.in_flight(load.value) if load else None  # fixed by the shape (sync, loops, bursts)
    if load is not None and in_flight is None:
        out["rate_qps"] = float(load.value)
    elif in_flight is not None:
        out["concurrency"] = int(in_flight)
    for name, key, measured in (("input_seq_len", "isl", point.isl), ("output_seq_len", "osl", point.osl)):
        lengths = _lengths(metadata.workload, key, measured)
        if lengths:
            out[name] = lengths
    out.setdefault("input_seq_len", {"distribution": "other", "value": 0})
    return out


SERIES = (("kv_usage", "kv_cache_usage", "percent", 100.0), ("running", "running_requests", "count", 1.0),
          ("waiting", "waiting_requests", "count", 1.0))  # telemetry.jsonl gauges -> llm-d ResourceMetrics


def _series_statistics(series: Any, duration_s: float) -> dict[str, Any]:
    """Gauge statistics over the samples taken during the point (0 <= t <= its duration)."""
    import numpy as np

    during = [i for i, t in enumerate(series.t_s) if 0.0 <= t <= duration_s]
    out = {}
    for column, name, units, scale in SERIES:
        column_values = series.columns.get(column) or []
        values = [column_values[i] for i in during if i < len(column_values) and column_values[i] is not None]
        if values:
            a = np.asarray(values, dtype=float) * scale
            p50, p90, p99 = np.percentile(a, [50, 90, 99])
            out[name] = {"units": units, "mean": float(a.mean()), "min": float(a.min()), "p50": float(p50),
                         "p90": float(p90), "p99": float(p99), "max": float(a.max())}
    return out


def _observability(point: PointResult, series: Any = None, raw_path: str | None = None) -> dict[str, Any] | None:
    dump = point.model_dump()
    engine, gpu = dump.get("engine_telemetry") or {}, dump.get("gpu_telemetry") or {}
    aggregate: dict[str, Any] = {}
    for name, key in (("running_requests", "running"), ("waiting_requests", "waiting")):
        if engine.get(f"mean_{key}") is not None:
            peak = engine.get(f"max_{key}")
            aggregate[name] = {"units": "count", "mean": engine[f"mean_{key}"],
                               **({"max": peak} if peak is not None else {})}
    if engine.get("preemptions") is not None:
        aggregate["preemptions"] = {"units": "count", "mean": engine["preemptions"]}  # the point's total
    if engine.get("prefix_cache_hit_rate") is not None:
        aggregate["cache_hit_rate"] = {"units": "percent", "mean": 100 * engine["prefix_cache_hit_rate"]}
    if gpu.get("mean_power_w") is not None:
        aggregate["power_consumption"] = {"units": "Watts", "mean": gpu["mean_power_w"],
                                          **({"max": gpu["max_power_w"]} if gpu.get("max_power_w") is not None else {})}
    if gpu.get("mean_utilization") is not None:
        aggregate["gpu_utilization"] = {"units": "percent", "mean": 100 * gpu["mean_utilization"]}
    if series is not None:
        aggregate.update(_series_statistics(series, point.duration_s))  # the samples say more than the summary
    if not aggregate:
        return None
    component: dict[str, Any] = {"component_label": "engine-0", "aggregate": aggregate}
    if series is not None and raw_path:
        component["raw_data_path"] = raw_path
    return {"components": [component]}


def _start(metadata: RunMetadata) -> str | None:
    try:
        datetime.fromisoformat(metadata.started_at)
    except ValueError:
        return None
    return metadata.started_at


def benchmark_report(point: PointResult, index: int, metadata: RunMetadata, series: Any = None,
                     raw_path: str | None = None) -> dict[str, Any]:
    """One point as an llm-d Benchmark Report v0.2.1 (a plain dict, ready for JSON); ``series`` is the point's
    line of telemetry.jsonl (validate.telemetry.TelemetrySeries), stored at ``raw_path``."""
    argv = list(metadata.engine_argv)
    tp = _flag(argv, TP_FLAGS)
    tp_size = int(tp) if tp and tp.isdigit() and int(tp) > 0 else 1
    engine = {
        "metadata": {"schema_version": "0.0.1", "label": "engine-0", "cfg_id": _id(argv, metadata.model_id)},
        "standardized": {"kind": "inference_engine", "tool": metadata.engine or "unknown",
                         "tool_version": metadata.engine_version or "unknown", "role": "replica", "replicas": 1,
                         "model": {"name": metadata.model_id or metadata.served_model_name or "unknown"},
                         "accelerator": {"model": metadata.gpu_name or metadata.gpu_id or "unknown",
                                         "count": metadata.gpu_count or tp_size,
                                         "parallelism": {"tp": tp_size, "dp": 1, "dp_local": 1, "workers": 1,
                                                         "ep": 1, "pp": 1}}},
        "native": {"args": argv_args(argv), "config": {"argv": argv}}}
    load = {"metadata": {"schema_version": "0.0.1", "cfg_id": _id(metadata.workload, point.load),
                         "description": f"validate load point {point.load}"},
            "standardized": _load_standardized(point, index, metadata),
            "native": {"config": {"load": point.load, "profile": metadata.profile, "gpu_id": metadata.gpu_id,
                                  "workload": metadata.workload, "point": point.model_dump(mode="json")}}}
    requests: dict[str, Any] = {"total": point.completed + point.failed, "failures": point.failed}
    for name, value in (("input_length", point.isl), ("output_length", point.osl)):
        if value is not None:
            requests[name] = {"units": "count", "mean": value}
    latency = {key: s for key, s in (
        ("time_to_first_token", _statistics(point, "ttft_s", "s")),
        ("time_per_output_token", _statistics(point, "tpot_s", "s/token")),
        ("inter_token_latency", _statistics(point, "itl_s", "s/token")),
        ("request_latency", _statistics(point, "e2e_latency_s", "s"))) if s}
    throughput = {key: s for key, s in (
        ("request_rate", _mean(point.requests_per_s, "queries/s")),
        ("output_token_rate", _mean(point.output_tokens_per_s, "tokens/s")),
        ("input_token_rate", _mean(point.input_tokens_per_s, "tokens/s")),
        ("total_token_rate", _mean(point.total_tokens_per_s, "tokens/s"))) if s}
    time = {"start": _start(metadata), "duration": f"PT{point.duration_s:.6f}S"}
    results: dict[str, Any] = {"request_performance": {"aggregate": {
        "requests": requests, "latency": latency, "throughput": throughput}}}
    observability = _observability(point, series, raw_path)
    if observability:
        results["observability"] = observability
    return {"version": REPORT_VERSION,
            "run": {"uid": _id(metadata.started_at, metadata.host, point.load, index),
                    "eid": _id(metadata.started_at, metadata.host, metadata.validate_command),
                    "time": {k: v for k, v in time.items() if v is not None},
                    "description": "llm-capacity validate: " + " ".join(metadata.validate_command)[:200],
                    "keywords": [k for k in ("llm-capacity", metadata.engine, metadata.gpu_id) if k]},
            "scenario": {"stack": [engine], "load": load}, "results": results}


def report_paths(out: Path, count: int) -> list[Path]:
    if count == 1:
        return [out]
    return [out.with_name(f"{out.stem}_{i}{out.suffix}") for i in range(count)]


def write_benchmark_reports(dirs: list[str], out: Path) -> list[Path]:
    reports = []
    for d in dirs:
        points, metadata = _run(d)
        folder = ResultsDir(d)
        series = {s.load: s for s in folder.telemetry()} if hasattr(folder, "telemetry") else {}
        raw = str(folder.path / "telemetry.jsonl")
        for i, p in enumerate(points):
            try:
                reports.append(json.dumps(benchmark_report(p, i, metadata, series.get(p.load), raw), indent=1,
                                          allow_nan=False))
            except ValueError:  # NaN or Infinity in metadata.json's free-form workload or a point's telemetry
                raise ResultsError(f"{folder.path}: point {p.load}: expected finite numbers in it and in its "
                                   "metadata.json (a Benchmark Report holds JSON numbers only)") from None
    if not reports:
        raise ResultsError(f"{', '.join(dirs)}: no points to export")
    paths = report_paths(out, len(reports))
    for path, text in zip(paths, reports):
        path.write_text(text + "\n")
    return paths


def _flatten(prefix: str, value: Any, row: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for key, inner in value.items():
            _flatten(f"{prefix}_{key}" if prefix else str(key), inner, row)
    elif isinstance(value, list):
        row[prefix] = json.dumps(value)
    else:
        row[prefix] = value


def point_rows(dirs: list[str]) -> list[dict[str, Any]]:
    """One flat row per point: run_dir, the run's metadata (run_*), then every field of the point."""
    rows = []
    for d in dirs:
        points, metadata = _run(d)
        meta = metadata.model_dump(mode="json")
        run = {"run_dir": str(d), **{f"run_{k}": meta.get(k) for k in RUN_FIELDS},
               "run_engine_argv": json.dumps(meta.get("engine_argv") or []),
               "run_validate_command": json.dumps(meta.get("validate_command") or [])}
        _flatten("run_workload", meta.get("workload") or {}, run)
        for point in points:
            row = dict(run)
            _flatten("", point.model_dump(mode="json"), row)
            rows.append(row)
    if not rows:
        raise ResultsError(f"{', '.join(dirs)}: no points to export")
    return rows


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(key for row in rows for key in row))


def write_csv(rows: list[dict[str, Any]], out: Path) -> None:
    with open(out, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=_columns(rows), restval="")
        writer.writeheader()
        writer.writerows(rows)


def write_parquet(rows: list[dict[str, Any]], out: Path) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError("--format parquet needs pyarrow (pip install pyarrow), or use --format csv") from None
    columns = _columns(rows)
    table = {c: [row.get(c) for row in rows] for c in columns}
    for c, values in table.items():  # one type per column: a column of numbers and text is written as text
        kinds = {type(v) for v in values if v is not None}
        if len(kinds) > 1 and not kinds <= {int, float}:
            table[c] = [None if v is None else str(v) for v in values]
        elif kinds == {int, float}:
            table[c] = [None if v is None else float(v) for v in values]
    pq.write_table(pa.table(table), out)


def export_command(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: its folder {out.parent} does not exist")
    if args.format == "benchmark-report":
        written = write_benchmark_reports(args.dirs, out)
    else:
        rows = point_rows(args.dirs)
        (write_csv if args.format == "csv" else write_parquet)(rows, out)
        written = [out]
    print("\n".join(str(p) for p in written), file=sys.stderr)
    return 0


def add_parser(sub: Any) -> None:
    e = sub.add_parser("export", help="write results as llm-d Benchmark Reports, CSV or parquet")
    e.add_argument("dirs", nargs="+", help="results folders (validate --out)")
    e.add_argument("--format", choices=["benchmark-report", "csv", "parquet"], required=True)
    e.add_argument("--out", required=True, type=output_file, help="file to write (benchmark-report: one per point, FILE_0, FILE_1, "
                                                "... when there are several)")
    e.set_defaults(func=export_command)

