"""What one attempt of one job does on its Ray worker: ``validate run ... --out DIR/jobs/<id>`` as a child process.

The child is the unchanged ``validate run`` (its engine launcher, client, resume of points.jsonl), so a job's
folder is exactly what a separate ``validate run`` writes. It gets SIGTERM if the worker dies (PR_SET_PDEATHSIG),
and stops its engine on the way out as ``validate run`` always does. Before starting, an attempt takes the job's
lock file and hands it to the child: a retry waits until the previous attempt's ``validate run`` is gone, so two
attempts never append to one points.jsonl.

This module imports no Ray: the task wrapper is made in runner.py.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from validate.fleet.store import INDEX_FILE, count_points

ERROR_LINE = re.compile(r"^([A-Z][A-Za-z]*(?:Error|Interrupted)): (.*)$")
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
NUM_TAIL_LINES = 8


class AttemptSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    job_id: str
    attempt: int
    argv: list[str]
    fleet_dir: str
    out: str
    log_path: str
    lock_path: str
    env: dict[str, str] = {}


class AttemptResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    rc: int
    node: str
    pid: int
    elapsed_s: float
    points: int
    error_type: str | None = None
    error: str | None = None
    log_tail: list[str] = []


def _die_with_parent() -> None:  # in the child, between fork and exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1
    except OSError:
        pass


def log_tail(path: Path, num_lines: int = NUM_TAIL_LINES) -> list[str]:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 64 * 1024))
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    lines = [ANSI.sub("", line).strip() for line in text.splitlines()]
    return [line[:2000] for line in lines if line][-num_lines:]


def last_error(lines: list[str]) -> tuple[str | None, str | None]:
    """(error type, message) of the last ``Type: message`` line `validate run` printed."""
    for line in reversed(lines):
        if m := ERROR_LINE.match(line):
            return m[1], m[2]
    return None, None


def node_address() -> str:
    try:
        import ray  # the worker always has it; the fallback is for running this module alone

        return str(ray.util.get_node_ip_address())
    except Exception:
        return socket.gethostname()


def run_attempt(spec: AttemptSpec, board: Any | None = None) -> AttemptResult:
    """Run one attempt to its end; never raises for a failing `validate run` (its exit code says)."""
    started = time.monotonic()
    node, pid = node_address(), os.getpid()
    if not (Path(spec.fleet_dir) / INDEX_FILE).exists():
        message = (f"{spec.fleet_dir} is not visible on node {node}: the fleet folder must be on a file system "
                   "every node mounts at the same path (NFS, a shared volume)")
        return AttemptResult(rc=2, node=node, pid=pid, elapsed_s=0.0, points=0, error_type="FleetStoreError",
                             error=message, log_tail=[])
    if board is not None:
        board.started.remote(spec.job_id, spec.attempt, pid, node)
    argv = [sys.executable, "-m", "validate.cli", *spec.argv, "--out", spec.out]
    log_path = Path(spec.log_path)
    with open(spec.lock_path, "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # the previous attempt's child holds it until it exits
        with open(log_path, "ab") as log:
            log.write(f"# attempt {spec.attempt} on {node} (worker pid {pid}): {' '.join(argv)}\n".encode())
            log.flush()
            child = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env={**os.environ, **spec.env}, pass_fds=(lock.fileno(),),
                                     preexec_fn=_die_with_parent)
            rc = child.wait()
    tail = log_tail(log_path)
    error_type, error = last_error(tail) if rc else (None, None)
    if rc and error is None:
        error = f"validate run exited with code {rc}"
    return AttemptResult(rc=rc, node=node, pid=pid, elapsed_s=time.monotonic() - started,
                         points=count_points(Path(spec.out)), error_type=error_type, error=error,
                         log_tail=tail if rc else [])
