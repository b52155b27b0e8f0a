"""genai-perf (triton-inference-server/perf_analyzer) ``profile_export_genai_perf.json``: one point.

genai-perf's inter_token_latency is a per-request (e2e - TTFT) / (output tokens - 1): it fills this
package's TPOT and, as the file has no chunk gaps, its ITL too (as for guidellm). Its throughput is
requests / (last response - first request). The request count is read from ``request_count`` where the
file has it (newer releases) and the duration is then count / throughput; older files have neither, so
the point keeps its rates and latencies with completed 0 and duration 0, says so in a warning, and
``validate compare`` leaves it out. The per-request timestamps genai-perf reads (perf_analyzer's
``profile_export.json``) carry no token counts without the tokenizer and are not imported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from validate.errors import ImportFormatError
from validate.importers.common import (ImportedRun, PositiveCount, Rate, RequestRateStat, Stat, Strict, TimeStat,
                                       TokenRateStat, TokenStat, fields_of, make_metadata, make_point, rounded,
                                       validated, whole)


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


def is_genai_perf(data: Any, path: Path) -> bool:
    if not isinstance(data, dict):
        return False
    config = data.get("input_config")
    return path.name.endswith("_genai_perf.json") or (isinstance(config, dict) and any(
        k in config for k in ("formatted_model_name", "service_kind", "perf_analyzer", "model_names")))


def _load(config: _InputConfig, where: str) -> str:
    stimulus = config.perf_analyzer.stimulus if config.perf_analyzer and config.perf_analyzer.stimulus else _Stimulus()
    rate = config.request_rate or stimulus.request_rate
    concurrency = config.concurrency or stimulus.concurrency
    if rate:
        return f"rate:{rate:.6g}"
    if concurrency:
        return f"concurrency:{concurrency}"
    raise ImportFormatError(f"{where}: input_config: expected concurrency or request_rate (the load of the run)")


def import_genai_perf(raw: dict[str, Any], path: Path, argv: list[str]) -> ImportedRun:
    report = validated(_Report, raw, str(path))
    rps = report.request_throughput.avg
    if rps is None:
        raise ImportFormatError(f"{path}: request_throughput.avg: expected the run's requests/s")
    completed = whole(report.request_count.avg if report.request_count else None, f"{path}: request_count.avg")
    warnings = []
    if completed is None:
        completed = 0
        warnings.append(f"warning: {path} holds no request_count (older genai-perf releases): the point keeps "
                        "its rates and latencies but stores 0 requests over 0 s, and validate compare skips it")
    isl = report.input_sequence_length.avg if report.input_sequence_length else None
    output_rate = report.output_token_throughput.avg if report.output_token_throughput else None
    tpot = fields_of(report.inter_token_latency, "tpot_s")
    point = make_point(
        str(path), load=_load(report.input_config, str(path)), completed=completed, failed=0,
        duration_s=completed / rps if completed and rps else 0.0, requests_per_s=rps,
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
                                       "request_count_in_file": report.request_count is not None})
    return ImportedRun([point], [], metadata, warnings=warnings)
