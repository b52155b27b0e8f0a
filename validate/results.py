"""Result records and the --out folder: points.jsonl, requests.jsonl, metadata.json.

Every load point is appended to points.jsonl (flushed and fsynced) as soon as it completes, after its
requests went to requests.jsonl, so an interrupted run keeps every finished point and a rerun of the
same command skips them. All times are in seconds, all rates per second (SI units in every name).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from validate.engines.config import EngineFacts
from validate.errors import ResultsError

POINTS_FILE = "points.jsonl"
REQUESTS_FILE = "requests.jsonl"
METADATA_FILE = "metadata.json"


class RequestRecord(BaseModel):
    """One request as the client saw it. Times are relative to the start of its load point."""

    model_config = ConfigDict(extra="forbid")

    load: str
    index: int
    start_s: float
    end_s: float
    ttft_s: float | None = None
    e2e_latency_s: float | None = None
    itls_s: list[float] = Field(default_factory=list, description="one gap per output token after the first")
    num_chunks: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    requested_input_tokens: int = 0
    requested_output_tokens: int = 0
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class PointResult(BaseModel):
    """Summary of one load point (one line of points.jsonl)."""

    model_config = ConfigDict(extra="allow")

    load: str
    completed: int
    failed: int
    duration_s: float
    requests_per_s: float
    output_tokens_per_s: float
    total_tokens_per_s: float
    input_tokens_per_s: float | None = None
    mean_ttft_s: float | None = None
    median_ttft_s: float | None = None
    p90_ttft_s: float | None = None
    p99_ttft_s: float | None = None
    mean_itl_s: float | None = None
    median_itl_s: float | None = None
    p90_itl_s: float | None = None
    p99_itl_s: float | None = None
    mean_tpot_s: float | None = None
    median_tpot_s: float | None = None
    p90_tpot_s: float | None = None
    p99_tpot_s: float | None = None
    mean_e2e_latency_s: float | None = None
    median_e2e_latency_s: float | None = None
    p90_e2e_latency_s: float | None = None
    p99_e2e_latency_s: float | None = None
    isl: float | None = Field(default=None, description="mean input tokens of completed requests")
    osl: float | None = Field(default=None, description="mean output tokens of completed requests")
    total_input_tokens: int = 0
    total_output_tokens: int = 0
    target_rate_per_s: float | None = None
    max_concurrency: int | None = Field(default=None, description="most requests in flight at once")
    mean_concurrency: float | None = Field(default=None, description="sum of e2e latencies / duration")
    warmup_requests: int = 0
    errors: list[str] = Field(default_factory=list, description="up to 5 distinct error strings")
    source: str = "validate"


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


def _fsync_append(path: Path, lines: list[str]) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
        f.flush()
        os.fsync(f.fileno())


class ResultsDir:
    """The --out folder of one run (created if missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ResultsError(f"cannot create --out folder {self.path}: {err}") from None

    def points(self) -> list[PointResult]:
        """Stored points; a torn last line (killed mid-write) is ignored."""
        path = self.path / POINTS_FILE
        if not path.exists():
            return []
        lines = path.read_text().splitlines()
        points = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                points.append(PointResult.model_validate_json(line))
            except ValidationError as err:
                if number == len(lines):
                    break
                raise ResultsError(f"{path}:{number} is not a load point: {err.errors()[0]['msg']}") from None
        return points

    def append_point(self, point: PointResult) -> None:
        _fsync_append(self.path / POINTS_FILE, [point.model_dump_json()])

    def append_requests(self, records: list[RequestRecord]) -> None:
        _fsync_append(self.path / REQUESTS_FILE, [r.model_dump_json() for r in records])

    def requests(self) -> list[RequestRecord]:
        path = self.path / REQUESTS_FILE
        if not path.exists():
            return []
        return [RequestRecord.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]

    def drop_orphan_requests(self, kept_loads: set[str]) -> None:
        """Remove requests of points that never reached points.jsonl (a run killed in between)."""
        path = self.path / REQUESTS_FILE
        if not path.exists():
            return
        lines = path.read_text().splitlines()
        kept = [line for line in lines if line.strip() and json.loads(line).get("load") in kept_loads]
        if len(kept) != len(lines):
            tmp = path.with_suffix(".tmp")
            tmp.write_text("".join(line + "\n" for line in kept))
            os.replace(tmp, path)

    def read_metadata(self) -> RunMetadata | None:
        path = self.path / METADATA_FILE
        if not path.exists():
            return None
        try:
            return RunMetadata.model_validate_json(path.read_text())
        except (ValidationError, ValueError) as err:
            raise ResultsError(f"{path} is not validate metadata: {err}") from None

    def write_metadata(self, metadata: RunMetadata) -> None:
        path = self.path / METADATA_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(metadata.model_dump_json(indent=1))
        os.replace(tmp, path)
