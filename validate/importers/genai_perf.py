"""genai-perf (triton-inference-server/perf_analyzer) ``profile_export_genai_perf.json``: one point.

genai-perf's inter_token_latency is a per-request (e2e - TTFT) / (output tokens - 1): it fills this
package's TPOT and, as the file has no chunk gaps, its ITL too (as for guidellm). Its throughput is
requests / (last response - first request), over every request of the run's perf_analyzer export.

The request count is taken only where the files say it exactly: ``request_count`` where the summary has it
(newer releases), else the number of requests in perf_analyzer's per-request export beside it
(``profile_export.json``, the file genai-perf computed the summary from: one experiment per load, each request
with its nanosecond send and response times). The duration is then count / throughput, genai-perf's own
benchmark duration. The summary alone holds no duration (``measurement_interval`` is perf_analyzer's
stability window, not the run's length), so an older summary without its export beside it is refused
(``ImportFormatError``) rather than stored as a point of 0 requests. The export's requests carry response
texts, not token counts (genai-perf tokenizes them), so the lengths and latencies stay the summary's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from validate.errors import ImportFormatError
from validate.importers.common import (ImportedRun, Nanoseconds, NonNegative, PositiveCount, Rate, RequestRateStat,
                                       Stat, Strict, TimeStat, TokenRateStat, TokenStat, fields_of, load_json,
                                       make_metadata, make_point, read_bytes, rounded, validated, whole)

SUMMARY_SUFFIX = "_genai_perf.json"
REQUESTS_FILE = "profile_export.json"  # perf_analyzer's per-request export, genai-perf's --profile-export-file
SPAN_SLACK = 1e-6  # relative: genai-perf's duration never exceeds the export's first-request-to-last-response span


class _Count(Stat):
    unit: Literal["count", "requests"]


class _Stimulus(Strict):
    concurrency: PositiveCount | None = None
    request_rate: Rate | None = None


class _PerfAnalyzer(Strict):
    stimulus: _Stimulus | None = None


class _InputConfig(Strict):
    model: list[str] | None = None
    model_names: list[str] | None = None
    backend: str | None = None
    service_kind: str | None = None
    concurrency: PositiveCount | None = None
    request_rate: Rate | None = None
    random_seed: int | None = None
    profile_export_file: str | None = None
    perf_analyzer: _PerfAnalyzer | None = None


class _Report(Strict):
    request_throughput: RequestRateStat
    output_token_throughput: TokenRateStat | None = None
    request_count: _Count | None = None
    request_latency: TimeStat | None = None
    time_to_first_token: TimeStat | None = None
    inter_token_latency: TimeStat | None = None
    input_sequence_length: TokenStat | None = None
    output_sequence_length: TokenStat | None = None
    input_config: _InputConfig


class _ExportRequest(Strict):
    timestamp: Nanoseconds
    response_timestamps: list[Nanoseconds]


class _ExportLoad(Strict):
    mode: str
    value: NonNegative


class _ExportExperiment(Strict):
    experiment: _ExportLoad
    requests: list[_ExportRequest]


class _Export(Strict):
    """perf_analyzer's profile_export.json: the fields read (request and response times, per experiment)."""

    experiments: list[_ExportExperiment] = Field(min_length=1)


def is_genai_perf(data: Any, path: Path) -> bool:
    if not isinstance(data, dict):
        return False
    config = data.get("input_config")
    return path.name.endswith(SUMMARY_SUFFIX) or (isinstance(config, dict) and any(
        k in config for k in ("formatted_model_name", "service_kind", "perf_analyzer", "model_names")))


def is_requests_export(data: Any) -> bool:
    """perf_analyzer's per-request export (what genai-perf reads), which is not a summary."""
    return isinstance(data, dict) and "experiments" in data and "input_config" not in data


def requests_file(path: Path, raw: Any = None) -> Path:
    """Where the per-request export of a summary lies: beside it, named as genai-perf names the pair
    (``X_genai_perf.json`` for ``X.json``; else the summary's input_config.profile_export_file, else the default)."""
    if path.name.endswith(SUMMARY_SUFFIX):
        return path.with_name(path.name.removesuffix(SUMMARY_SUFFIX) + ".json")
    config = raw.get("input_config") if isinstance(raw, dict) else None
    named = config.get("profile_export_file") if isinstance(config, dict) else None
    return path.with_name(Path(named).name if isinstance(named, str) and named else REQUESTS_FILE)


def _load(config: _InputConfig, where: str) -> str:
    stimulus = config.perf_analyzer.stimulus if config.perf_analyzer and config.perf_analyzer.stimulus else _Stimulus()
    rate = config.request_rate or stimulus.request_rate
    concurrency = config.concurrency or stimulus.concurrency
    if rate:
        return f"rate:{rate:.6g}"
    if concurrency:
        return f"concurrency:{concurrency}"
    raise ImportFormatError(f"{where}: input_config: expected concurrency or request_rate (the load of the run)")


def _export_load(load: _ExportLoad) -> str:
    if load.mode == "request_rate":
        return f"rate:{load.value:.6g}"
    return f"{load.mode}:{load.value:.6g}"


def exported_count(export_path: Path, load: str, rps: float, summary: Path) -> int:
    """The number of requests of the load's experiment in perf_analyzer's export: genai-perf's own count
    (its throughput is this count over the requests' span). An export of another run is refused."""
    where = str(export_path)
    export = validated(_Export, load_json(export_path, read_bytes(export_path)), where)
    found = [e for e in export.experiments if _export_load(e.experiment) == load]
    if len(found) != 1:
        seen = ", ".join(_export_load(e.experiment) for e in export.experiments)
        raise ImportFormatError(f"{where}: experiments: expected one experiment of {load} (the load of {summary}), "
                                f"got {len(found)} of {seen}")
    requests = found[0].requests
    answered = [r for r in requests if r.response_timestamps]
    if not answered:
        raise ImportFormatError(f"{where}: experiments.requests: expected requests with responses (the run of "
                                f"{summary})")
    span_s = (max(r.response_timestamps[-1] for r in answered) - min(r.timestamp for r in answered)) * 1e-9
    if len(requests) / rps > span_s * (1 + SPAN_SLACK) + 1e-9:
        raise ImportFormatError(f"{where}: experiments.requests: {len(requests)} requests over {span_s:.6g} s (first "
                                f"request to last response) are more than {summary}'s {rps:.6g} requests/s allow; "
                                "expected the export of that summary's run")
    return len(requests)


def request_count(report: _Report, path: Path, raw: Any, load: str, rps: float) -> tuple[int, Path | None]:
    """(requests of the run, the export it was counted in): the summary's request_count (None), else its export's."""
    in_summary = whole(report.request_count.avg if report.request_count else None, f"{path}: request_count.avg")
    export = requests_file(path, raw)
    exported = exported_count(export, load, rps, path) if export.is_file() else None
    if in_summary is not None and exported is not None and in_summary != exported:
        raise ImportFormatError(f"{path}: request_count.avg: expected {exported} (the requests of {export}), "
                                f"got {in_summary}")
    count = in_summary if in_summary is not None else exported
    if count is None:
        raise ImportFormatError(f"{path}: request_count: expected the number of requests (newer genai-perf releases "
                                f"write it), or perf_analyzer's per-request export {export.name} beside the file; "
                                "without either the file does not say how many requests completed")
    if count == 0:
        raise ImportFormatError(f"{path}: request_count.avg: expected at least one request (the file's throughput is "
                                f"{rps:.6g} requests/s)")
    return count, None if in_summary is not None else export


def import_genai_perf(raw: dict[str, Any], path: Path, argv: list[str]) -> ImportedRun:
    report = validated(_Report, raw, str(path))
    rps = report.request_throughput.avg
    if not rps:
        raise ImportFormatError(f"{path}: request_throughput.avg: expected the run's requests/s (more than 0)")
    load = _load(report.input_config, str(path))
    completed, export = request_count(report, path, raw, load, rps)
    isl = report.input_sequence_length.avg if report.input_sequence_length else None
    output_rate = report.output_token_throughput.avg if report.output_token_throughput else None
    tpot = fields_of(report.inter_token_latency, "tpot_s")
    point = make_point(
        str(path), load=load, completed=completed, failed=0, duration_s=completed / rps, requests_per_s=rps,
        output_tokens_per_s=output_rate or 0.0, total_tokens_per_s=(output_rate or 0.0) + rps * (isl or 0.0),
        input_tokens_per_s=rps * isl if isl is not None else None, **fields_of(report.time_to_first_token, "ttft_s"),
        **{k.replace("tpot", "itl"): v for k, v in tpot.items()}, **tpot,
        **fields_of(report.request_latency, "e2e_latency_s"), isl=isl,
        osl=report.output_sequence_length.avg if report.output_sequence_length else None, source="genai-perf")
    config = report.input_config
    model = (config.model or config.model_names or [None])[0]
    metadata = make_metadata(argv, "genai-perf", model_id=model, served_model_name=model, engine=config.backend,
                             workload={"isl": rounded(point.isl), "osl": rounded(point.osl), "imported_from": str(path),
                                       "service_kind": config.service_kind, "random_seed": config.random_seed,
                                       "request_count_from": str(export) if export else "request_count"})
    return ImportedRun([point], [], metadata, read_beside=[export] if export else [])
