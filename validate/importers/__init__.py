"""Import other tools' reports into points.jsonl form (docs/formats.md): ``vllm bench serve --save-result``,
guidellm (v0.3-0.7 and the current CLI's report), AIPerf (``profile_export_aiperf.json`` and
``profile_export.jsonl``), genai-perf (``profile_export_genai_perf.json``), llm-d Benchmark Reports v0.2.x
(JSON or YAML) and InferenceX result rows (JSON Lines).

The format is told from the content (and the file name where two formats share a shape). Every file is read
through a strict pydantic model of the fields used (numbers must be JSON numbers, finite and not negative;
counts integers; per-request lists of one length). Anything else is an ``ImportFormatError: FILE[:LINE]:
field: what was expected`` on one line. Keys that are not read are ignored.

Two formats read a second file beside the one given (an AIPerf per-record file its summary, a genai-perf
summary perf_analyzer's per-request export); given too, that file is not imported a second time.
"""

from __future__ import annotations

import json
from pathlib import Path

from validate.errors import ImportFormatError, ValidateError
from validate.importers import aiperf, aiperf_records, benchmark_report, genai_perf, guidellm, inferencex, vllm_bench
from validate.importers.common import ImportedRun, load_json, load_jsonl, load_yaml, read_bytes
from validate.importers.guidellm import GuidellmReport, guidellm_load_label, import_guidellm
from validate.importers.vllm_bench import VllmBenchFile, import_vllm_bench, summarize_fields, vllm_load_label
from validate.results import PointResult, RequestRecord, RunMetadata

__all__ = ["GuidellmReport", "ImportedRun", "VllmBenchFile", "guidellm_load_label", "import_each", "import_file",
           "import_files", "import_guidellm", "import_runs", "import_vllm_bench", "summarize_fields",
           "vllm_load_label"]

KNOWN = ("a `vllm bench serve --save-result` file, a guidellm report, an AIPerf or genai-perf export, an llm-d "
         "Benchmark Report or InferenceX rows")


def _commented_lines(data: bytes) -> bool:
    """'#' header lines, then JSON objects (InferenceX raw files of the public corpus)."""
    lines = [line.strip() for line in data.splitlines() if line.strip()]
    return bool(lines) and lines[0].startswith(b"#") and any(line.startswith(b"{") for line in lines[:50])


def _one_object_per_line(data: bytes) -> bool:
    first = data.strip().split(b"\n", 1)[0]
    try:
        return b"\n" in data.strip() and isinstance(json.loads(first), dict)
    except (ValueError, RecursionError):
        return False


def _lines(path: Path, data: bytes, argv: list[str]) -> list[ImportedRun]:
    lines = load_jsonl(path, data)
    if not lines:
        raise ImportFormatError(f"{path}: holds no JSON lines")
    first = lines[0][1]
    if aiperf_records.is_aiperf_record(first):
        return [aiperf_records.import_records(lines, path, argv)]
    if inferencex.is_inferencex(first):
        return inferencex.import_inferencex(path, data.decode("utf-8"), argv)
    raise ImportFormatError(f"{path}:{lines[0][0]}: neither an AIPerf record (metadata, metrics) nor an InferenceX "
                            "result row (hardware, framework, conc, metrics)")


def import_runs(path: Path, argv: list[str]) -> list[ImportedRun]:
    """Every results folder one file holds (several only for InferenceX rows of several configurations)."""
    data = read_bytes(path)
    if path.suffix in (".yaml", ".yml"):
        raw = load_yaml(path, data)
    elif path.suffix == ".jsonl" or _commented_lines(data):
        return _lines(path, data, argv)
    else:
        try:
            raw = load_json(path, data)
        except ImportFormatError:
            if _one_object_per_line(data):
                return _lines(path, data, argv)
            raise
    if not isinstance(raw, dict):
        raise ImportFormatError(f"{path}: expected a JSON object ({KNOWN}), got {type(raw).__name__}")
    if guidellm.is_guidellm(raw):
        return [import_guidellm(raw, path, argv)]
    if vllm_bench.is_vllm_bench(raw):
        return [import_vllm_bench(raw, path, argv)]
    if benchmark_report.is_benchmark_report(raw):
        return [benchmark_report.import_benchmark_report(raw, path, argv)]
    if genai_perf.is_genai_perf(raw, path):
        return [genai_perf.import_genai_perf(raw, path, argv)]
    if aiperf.is_aiperf_summary(raw, path):
        return [aiperf.import_summary(raw, path, argv)]
    if genai_perf.is_requests_export(raw):
        raise ImportFormatError(f"{path}: perf_analyzer's per-request export (response texts, no token counts); "
                                "import the genai-perf summary beside it (profile_export_genai_perf.json), which "
                                "counts its requests in this file")
    raise ImportFormatError(f"{path}: not {KNOWN} (none of their keys: request_throughput and completed; "
                            "benchmarks; records or input_config; run, results and version)")


def import_file(path: Path, argv: list[str]) -> tuple[list[PointResult], list[RequestRecord], RunMetadata]:
    """The points, requests and metadata of a file that holds one configuration."""
    runs = import_runs(path, argv)
    if len(runs) > 1:
        raise ImportFormatError(f"{path}: holds {len(runs)} configurations; import it with `validate import`, "
                                "which writes one folder per configuration")
    run = runs[0]
    return run.points, run.requests, run.metadata


def import_each(paths: list[Path], argv: list[str]) -> list[tuple[Path, list[ImportedRun] | ValidateError]]:
    """Each file's runs, or why it cannot be imported; a file that another one's import read beside itself (an
    AIPerf summary beside its per-record file, a genai-perf summary's per-request export) is left out."""
    outcomes: list[tuple[Path, list[ImportedRun] | ValidateError]] = []
    for path in paths:
        try:
            outcomes.append((path, import_runs(path, argv)))
        except ValidateError as err:
            outcomes.append((path, err))
    read = {p.resolve() for _, runs in outcomes if isinstance(runs, list) for run in runs for p in run.read_beside}
    return [(path, outcome) for path, outcome in outcomes if path.resolve() not in read]


def import_files(paths: list[Path], argv: list[str]) -> tuple[list[ImportedRun], list[str]]:
    """(results folders, warning lines) of one `validate import`. Several files of one configuration become one
    folder (their loads must differ); a file of several configurations must come alone."""
    outcomes = import_each(paths, argv)
    for _, outcome in outcomes:
        if isinstance(outcome, ValidateError):
            raise outcome
    paths = [path for path, _ in outcomes]
    found = [(path, run) for path, runs in outcomes for run in runs]
    warnings = [w for _, run in found for w in run.warnings]
    warnings += vllm_bench.prefix_cache_warnings(found)
    if len(paths) == 1 or len(found) == 1:
        return [run for _, run in found], warnings
    if any(run.folder for _, run in found):
        raise ImportFormatError(f"{paths[0]}: a file of several configurations (InferenceX rows) must be imported "
                                "alone")
    first_path, merged = found[0]
    seen = {p.load: first_path for p in merged.points}
    for path, run in found[1:]:
        model, expected = run.metadata.model_id, merged.metadata.model_id
        if model and expected and model != expected:
            raise ImportFormatError(f"{path}: model: expected {expected!r} as in {first_path} (one folder holds one "
                                    f"configuration; import the files separately), got {model!r}")
        for point in run.points:
            if point.load in seen:
                raise ImportFormatError(f"{path}: load {point.load}: also in {seen[point.load]}; one folder holds one "
                                        "point per load (import them into separate folders)")
            seen[point.load] = path
        merged.points += run.points
        merged.requests += run.requests
        merged.warnings += run.warnings
    sources = [str(p) for p in paths]
    merged.metadata.workload["imported_from"] = sources
    return [merged], warnings
