"""The fleet store: ``DIR/fleet.jsonl`` (the index, one line per state change of a job), ``DIR/jobs/<job id>/``
(each job's folder, exactly as ``validate run --out`` writes it) and ``DIR/logs/`` (each attempt's output).

States: queued -> running -> done | retrying (-> running ...) | failed. Only the driver (``validate fleet``)
writes the index, flushed and fsynced per line. A driver killed mid-write can leave a torn last line: readers
skip it and ``FleetIndex.open`` cuts it (with a warning) before anything is appended.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from validate.errors import ResultsError, one_line

INDEX_FILE = "fleet.jsonl"
State = Literal["queued", "running", "retrying", "done", "failed"]


class IndexRecord(BaseModel):
    """One state change of one job (one line of fleet.jsonl)."""

    model_config = ConfigDict(extra="forbid")

    job_id: str
    state: State
    at_unix_s: float = Field(default_factory=time.time)
    attempt: int = Field(0, ge=0, description="1 for the first run of the job in its history, 2 for the next ...")
    config: dict[str, Any] | None = Field(None, description="queued: the job's axis values")
    argv: list[str] | None = Field(None, description="queued: its `validate run` arguments without --out")
    num_points: int | None = None
    node: str | None = Field(None, description="running: the Ray node's address")
    pid: int | None = Field(None, description="running: the Ray worker process")
    points: int | None = Field(None, description="done/failed/retrying: points stored in the job's folder")
    elapsed_s: float | None = Field(None, description="done/failed/retrying: seconds of this attempt")
    error: str | None = None
    log_tail: list[str] = Field(default_factory=list, description="failed/retrying: the attempt's last log lines")


class JobHistory(BaseModel):
    last: IndexRecord
    attempts: int = Field(description="attempts started (running records)")
    failed_attempts: int = Field(description="attempts that ended in retrying or failed")


def _read(path: Path) -> tuple[list[IndexRecord], list[str], str | None]:
    """(records, their lines, the torn last line or None)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return [], [], None
    except OSError as err:
        raise ResultsError(f"{path}: cannot read: {one_line(err)}") from None
    numbered = [(n, line) for n, line in enumerate(raw.decode("utf-8", errors="replace").split("\n"), 1)
                if line.strip()]
    records, lines = [], []
    for i, (number, line) in enumerate(numbered):
        try:
            records.append(IndexRecord.model_validate_json(line))
            lines.append(line)
        except ValidationError as err:
            if i == len(numbered) - 1:
                return records, lines, line
            raise ResultsError(f"{path}:{number}: {one_line(err)}") from None
    return records, lines, None


class FleetIndex:
    """DIR/fleet.jsonl of one fleet folder."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / INDEX_FILE

    def open(self) -> list[str]:
        """Create the folder; cut a torn last line. Returns the warnings to print."""
        try:
            (self.folder / "jobs").mkdir(parents=True, exist_ok=True)
            (self.folder / "logs").mkdir(exist_ok=True)
        except OSError as err:
            raise ResultsError(f"cannot create --out folder {self.folder}: {one_line(err)}") from None
        _, lines, torn = _read(self.path)
        if torn is None:
            self.path.touch()
            return []
        tmp = self.path.with_name(INDEX_FILE + ".tmp")
        tmp.write_text("".join(line + "\n" for line in lines))
        os.replace(tmp, self.path)
        return [f"warning: dropped the torn last line of {self.path} ({len(torn)} characters, left by a fleet "
                f"stopped mid-write: {torn[:40]!r})"]

    def records(self) -> list[IndexRecord]:
        return _read(self.path)[0]

    def append(self, record: IndexRecord) -> None:
        with open(self.path, "ab") as f:
            f.write((record.model_dump_json(exclude_defaults=True) + "\n").encode())
            f.flush()
            os.fsync(f.fileno())

    def histories(self) -> dict[str, JobHistory]:
        out: dict[str, JobHistory] = {}
        for r in self.records():
            h = out.get(r.job_id)
            attempts = (h.attempts if h else 0) + (r.state == "running")
            failed = (h.failed_attempts if h else 0) + (r.state in ("retrying", "failed"))
            out[r.job_id] = JobHistory(last=r, attempts=attempts, failed_attempts=failed)
        return out

    def job_folder(self, job_id: str) -> Path:
        return self.folder / "jobs" / job_id

    def log_path(self, job_id: str, attempt: int) -> Path:
        return self.folder / "logs" / f"{job_id}.{attempt}.log"

    def lock_path(self, job_id: str) -> Path:
        return self.folder / "logs" / f"{job_id}.lock"


def count_points(job_folder: Path) -> int:
    """Stored load points of a job folder (complete lines of points.jsonl), without parsing them."""
    try:
        data = (job_folder / "points.jsonl").read_bytes()
    except OSError:
        return 0
    return data.count(b"\n")
