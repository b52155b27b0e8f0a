"""Result records and the --out folder: points.jsonl, requests.jsonl, metadata.json.

Every load point is appended to points.jsonl (flushed and fsynced) as soon as it completes, after its
requests went to requests.jsonl, so an interrupted run keeps every finished point and a rerun of the
same command skips them. All times are in seconds, all rates per second (SI units in every name).

Reading is strict: every line must be a record (finite, non-negative numbers), else ResultsError
``FILE:LINE: field: what was expected`` on one line. The one exception is the last line of a JSONL
file, which a run killed mid-write can leave torn: readers skip it, and a resume drops it from the
file (with a warning) before anything is appended, so a new line is never glued onto a fragment.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from validate.engines.config import EngineFacts
from validate.errors import ResultsError, one_line
from validate.gpu_telemetry import GpuTelemetry
from validate.host_telemetry import HostTelemetry
from validate.telemetry import EngineTelemetry, TelemetrySeries

POINTS_FILE = "points.jsonl"
REQUESTS_FILE = "requests.jsonl"
TELEMETRY_FILE = "telemetry.jsonl"  # the engine's /metrics series, one line per point (validate.telemetry)
METADATA_FILE = "metadata.json"
MAX_JSON_BYTES = 64 * 2**20  # metadata.json, scenario.json, facts.json, excluded.json

Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]
PerSecond = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Tokens = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0)]
Record = TypeVar("Record", bound=BaseModel)


class RequestRecord(BaseModel):
    """One request as the client saw it. Times are relative to the start of its load point."""

    model_config = ConfigDict(extra="forbid")

    load: str
    index: Count
    start_s: Seconds
    end_s: Seconds
    ttft_s: Seconds | None = None
    e2e_latency_s: Seconds | None = None
    itls_s: list[Seconds] = Field(default_factory=list, description="one gap per output token after the first")
    num_chunks: Count = 0
    input_tokens: Count = 0
    output_tokens: Count = 0
    requested_input_tokens: Count = 0
    requested_output_tokens: Count = 0
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class PointResult(BaseModel):
    """Summary of one load point (one line of points.jsonl)."""

    model_config = ConfigDict(extra="allow")

    load: str
    completed: Count
    failed: Count
    duration_s: Seconds
    requests_per_s: PerSecond
    output_tokens_per_s: PerSecond
    total_tokens_per_s: PerSecond
    input_tokens_per_s: PerSecond | None = None
    mean_ttft_s: Seconds | None = None
    median_ttft_s: Seconds | None = None
    p90_ttft_s: Seconds | None = None
    p99_ttft_s: Seconds | None = None
    mean_itl_s: Seconds | None = None
    median_itl_s: Seconds | None = None
    p90_itl_s: Seconds | None = None
    p99_itl_s: Seconds | None = None
    mean_tpot_s: Seconds | None = None
    median_tpot_s: Seconds | None = None
    p90_tpot_s: Seconds | None = None
    p99_tpot_s: Seconds | None = None
    mean_e2e_latency_s: Seconds | None = None
    median_e2e_latency_s: Seconds | None = None
    p90_e2e_latency_s: Seconds | None = None
    p99_e2e_latency_s: Seconds | None = None
    isl: Tokens | None = Field(default=None, description="mean input tokens of completed requests")
    osl: Tokens | None = Field(default=None, description="mean output tokens of completed requests")
    total_input_tokens: Count = 0
    total_output_tokens: Count = 0
    target_rate_per_s: PerSecond | None = None
    max_concurrency: Count | None = Field(default=None, description="most requests in flight at once")
    mean_concurrency: Tokens | None = Field(default=None, description="sum of e2e latencies / duration")
    warmup_requests: Count = 0
    # how the point's requests were sent (one folder can hold points of several sweeps; metadata.json keeps only
    # the latest sweep's options): None in points written before 2026-12-04, whose folder's metadata then holds them
    arrivals: Literal["constant", "poisson", "gamma"] | None = None
    gamma_shape: float | None = Field(default=None, gt=0)
    seed: int | None = Field(default=None, ge=0, le=2**32 - 1)
    errors: list[str] = Field(default_factory=list, description="up to 5 distinct error strings")
    source: str = "validate"
    engine_telemetry: EngineTelemetry | None = Field(default=None, description="the engine's own counters (/metrics)")
    gpu_telemetry: GpuTelemetry | None = Field(default=None, description="power, clocks and energy (NVML)")
    host_telemetry: HostTelemetry | None = Field(default=None, description="the client's CPU and loop lag, the "
                                                 "server's CPU by process (validate.host_telemetry)")
    telemetry_note: str | None = Field(default=None, description="why a telemetry part is absent")


class RunMetadata(BaseModel):
    """What was measured, with what, where and when (metadata.json)."""

    model_config = ConfigDict(extra="allow")

    validate_command: list[str]
    started_at: str
    host: str
    engine: str | None = None
    engine_version: str | None = None
    engine_argv: list[str] = Field(default_factory=list)
    engine_facts: EngineFacts | None = None
    engine_ready_after_s: float | None = None
    base_url: str | None = None
    gpu_id: str | None = Field(default=None, description="--gpu as given (for compare)")
    gpu_name: str | None = None
    gpu_count: int | None = None
    cpu_model: str | None = None
    model_id: str | None = None
    served_model_name: str | None = None
    config_sha256: str | None = None
    workload: dict[str, Any] = Field(default_factory=dict)
    profile: str | None = None
    python: str | None = None




class ScenarioFile(BaseModel):
    """scenario.json beside a run (campaign scripts): the configuration when metadata.json lacks it."""

    model_config = ConfigDict(extra="allow", strict=True)

    model: str | None = None
    gpu: str | None = None
    engine: str | None = None
    engine_argv: list[str] | None = None
    precision: str | None = None
    kv_precision: str | None = None


class FactsFile(BaseModel):
    """facts.json beside a run: what the engine's log said at start-up (only kv_cache_tokens is read)."""

    model_config = ConfigDict(extra="allow", strict=True)

    kv_cache_tokens: Count | None = None


class ExcludedPoint(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    run: str
    load: str


class ExcludedFile(BaseModel):
    """excluded.json: points left out of comparisons, each with its run folder, load and a reason."""

    model_config = ConfigDict(extra="allow", strict=True)

    points: list[ExcludedPoint] = Field(default_factory=list)


def read_json_file(path: Path, model: type[Record]) -> Record:
    """One JSON file through its model; any fault is ResultsError ``FILE: field: what was expected``."""
    try:
        if path.stat().st_size > MAX_JSON_BYTES:
            raise ResultsError(f"{path}: larger than {MAX_JSON_BYTES // 2**20} MiB")
        raw = path.read_bytes()
    except OSError as err:
        raise ResultsError(f"{path}: cannot read: {one_line(err)}") from None
    try:
        return model.model_validate_json(raw)
    except ValidationError as err:
        raise ResultsError(f"{path}: {one_line(err)}") from None


class _Line(BaseModel):
    text: str
    number: int


def _jsonl(path: Path, model: type[Record]) -> tuple[list[tuple[str, Record]], _Line | None]:
    """(every good line with its record, the torn last line or None). A bad line before the last is an error."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return [], None
    except OSError as err:
        raise ResultsError(f"{path}: cannot read: {one_line(err)}") from None
    lines = raw.decode("utf-8", errors="replace").split("\n")
    numbered = [(n, line) for n, line in enumerate(lines, 1) if line.strip()]
    good: list[tuple[str, Record]] = []
    for i, (number, line) in enumerate(numbered):
        try:
            good.append((line, model.model_validate_json(line)))
        except ValidationError as err:
            if i == len(numbered) - 1:
                return good, _Line(text=line, number=number)
            raise ResultsError(f"{path}:{number}: {one_line(err)}") from None
    return good, None  # a last line without its newline gets one before the next append (_fsync_append)


def _fsync_append(path: Path, lines: list[str]) -> None:
    with open(path, "ab") as f:
        if f.tell() > 0:
            with open(path, "rb") as r:
                r.seek(-1, os.SEEK_END)
                if r.read(1) != b"\n":  # never glue a line onto an unterminated last line
                    f.write(b"\n")
        f.write("".join(line + "\n" for line in lines).encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())


def _replace(path: Path, lines: list[str]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class ResultsDir:
    """The --out folder of one run (created if missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ResultsError(f"cannot create --out folder {self.path}: {one_line(err)}") from None

    def points(self) -> list[PointResult]:
        """Stored points; a torn last line (killed mid-write) is skipped."""
        return [p for _, p in _jsonl(self.path / POINTS_FILE, PointResult)[0]]

    def requests(self) -> list[RequestRecord]:
        """Stored requests; a torn last line (killed mid-write) is skipped."""
        return [r for _, r in _jsonl(self.path / REQUESTS_FILE, RequestRecord)[0]]

    def drop_torn_lines(self) -> list[str]:
        """Remove a torn last line from points.jsonl and requests.jsonl; one warning line per file cut."""
        warnings = []
        for name, model in ((POINTS_FILE, PointResult), (REQUESTS_FILE, RequestRecord),
                            (TELEMETRY_FILE, TelemetrySeries)):
            path = self.path / name
            good, torn = _jsonl(path, model)
            if torn is not None:
                _replace(path, [line for line, _ in good])
                warnings.append(f"warning: dropped the torn last line {torn.number} of {path} ({len(torn.text)} "
                                f"characters, left by a run stopped mid-write: {torn.text[:40]!r})")
        return warnings

    def drop_points(self, loads: set[str]) -> None:
        """Remove the points of these loads from points.jsonl (to measure them again)."""
        good, _ = _jsonl(self.path / POINTS_FILE, PointResult)
        kept = [line for line, p in good if p.load not in loads]
        if len(kept) != len(good):
            _replace(self.path / POINTS_FILE, kept)

    def append_point(self, point: PointResult) -> None:
        _fsync_append(self.path / POINTS_FILE, [point.model_dump_json()])

    def append_requests(self, records: list[RequestRecord]) -> None:
        _fsync_append(self.path / REQUESTS_FILE, [r.model_dump_json() for r in records])

    def append_telemetry(self, series: TelemetrySeries) -> None:
        _fsync_append(self.path / TELEMETRY_FILE, [series.model_dump_json()])

    def telemetry(self) -> list[TelemetrySeries]:
        """Stored /metrics series, one per point; a torn last line is skipped."""
        return [t for _, t in _jsonl(self.path / TELEMETRY_FILE, TelemetrySeries)[0]]

    def drop_orphan_requests(self, kept_loads: set[str]) -> None:
        """Remove requests and telemetry of points that never reached points.jsonl (a run killed in between)."""
        for name, model in ((REQUESTS_FILE, RequestRecord), (TELEMETRY_FILE, TelemetrySeries)):
            path = self.path / name
            good, torn = _jsonl(path, model)
            kept = [line for line, r in good if r.load in kept_loads]
            if len(kept) != len(good) or torn is not None:
                _replace(path, kept)

    def read_metadata(self) -> RunMetadata | None:
        path = self.path / METADATA_FILE
        if not path.exists():
            return None
        return read_json_file(path, RunMetadata)

    def write_metadata(self, metadata: RunMetadata) -> None:
        path = self.path / METADATA_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(metadata.model_dump_json(indent=1))
        os.replace(tmp, path)
