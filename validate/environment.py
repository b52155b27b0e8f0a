"""Facts about the machine a run happens on: GPU (nvidia-smi), CPU model, host, time."""

from __future__ import annotations

import datetime
import platform
import shutil
import socket
import subprocess
from pathlib import Path


def gpu_names() -> list[str]:
    """One name per GPU from nvidia-smi, or [] where there is none."""
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def host_name() -> str:
    return socket.gethostname()


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def python_version() -> str:
    return platform.python_version()
