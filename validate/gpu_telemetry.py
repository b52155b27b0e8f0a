"""GPU power, clocks, utilization and memory during a load point, and the energy it took.

Read through NVML (the ``pynvml`` module of ``nvidia-ml-py``) where it imports, else by polling ``nvidia-smi``;
on a machine with neither (the CPU build) there is no GPU telemetry and the point says why instead of a number.
The GPUs read are those of ``CUDA_VISIBLE_DEVICES`` (all when unset). Samples are taken every ``interval_s`` on a
thread, so the client's event loop never waits for them.

Energy is the mean of the summed power over the point times its duration (samples are evenly spaced), so joules
per output token = mean power x duration / output tokens of the point (warm-up excluded, as the duration is).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time

from pydantic import BaseModel, ConfigDict, Field

MIB = 2**20
MHZ = 1e6
SMI_FIELDS = "index,power.draw,clocks.sm,clocks.mem,utilization.gpu,memory.used"


class GpuSample(BaseModel):
    model_config = ConfigDict(frozen=True)

    t_s: float
    power_w: float  # summed over the GPUs read
    sm_clock_hz: float  # mean over them
    memory_clock_hz: float
    utilization: float  # 0..1, mean
    memory_used_bytes: float  # summed


class GpuTelemetry(BaseModel):
    """One point's GPU figures (SI units: W, J, Hz, bytes; utilization 0..1)."""

    model_config = ConfigDict(extra="forbid")

    source: str
    gpu_indices: list[int]
    samples: int = Field(ge=0)
    mean_power_w: float | None = None
    max_power_w: float | None = None
    energy_j: float | None = None
    joules_per_output_token: float | None = None
    joules_per_request: float | None = None
    mean_sm_clock_hz: float | None = None
    mean_memory_clock_hz: float | None = None
    mean_utilization: float | None = None
    max_memory_used_bytes: float | None = None


def _visible(count: int) -> list[int]:
    text = os.environ.get("CUDA_VISIBLE_DEVICES")
    if text is None:
        return list(range(count))
    out = []
    for part in text.split(","):
        part = part.strip()
        if part.isdigit() and int(part) < count:
            out.append(int(part))
    return out


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:  # "[N/A]", "[Not Supported]"
        return None
    return value


class _Nvml:
    name = "nvml"

    def __init__(self) -> None:
        import pynvml  # nvidia-ml-py; ImportError or NVMLError when absent

        pynvml.nvmlInit()
        self.nvml = pynvml
        self.indices = _visible(pynvml.nvmlDeviceGetCount())
        self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in self.indices]

    def read(self) -> list[tuple[float, float, float, float, float]]:
        n = self.nvml
        rows = []
        for h in self.handles:
            rows.append((n.nvmlDeviceGetPowerUsage(h) / 1000.0, n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM) * MHZ,
                         n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM) * MHZ,
                         n.nvmlDeviceGetUtilizationRates(h).gpu / 100.0, float(n.nvmlDeviceGetMemoryInfo(h).used)))
        return rows


class _Smi:
    name = "nvidia-smi"

    def __init__(self) -> None:
        self.exe = shutil.which("nvidia-smi")
        if self.exe is None:
            raise FileNotFoundError("nvidia-smi")
        rows = self._query()
        self.indices = _visible(len(rows))

    def _query(self) -> list[list[str]]:
        out = subprocess.run([self.exe, f"--query-gpu={SMI_FIELDS}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10, check=True).stdout
        return [[f.strip() for f in line.split(",")] for line in out.splitlines() if line.strip()]

    def read(self) -> list[tuple[float, float, float, float, float]]:
        rows = []
        for fields in self._query():
            if len(fields) < 6 or not fields[0].isdigit() or int(fields[0]) not in self.indices:
                continue
            power, sm, mem, util, used = (_number(f) for f in fields[1:6])
            if None in (power, sm, mem, util, used):
                continue
            rows.append((power, sm * MHZ, mem * MHZ, util / 100.0, used * MIB))
        return rows


def open_reader() -> tuple[_Nvml | _Smi | None, str]:
    """(reader, how) — NVML, else nvidia-smi, else None with the reason."""
    reasons = []
    for kind in (_Nvml, _Smi):
        try:
            reader = kind()
        except Exception as err:  # noqa: BLE001 — any failure to open a reader means: try the next one
            reasons.append(f"{kind.name}: {type(err).__name__}: {err}"[:160])
            continue
        if reader.indices:
            return reader, reader.name
        reasons.append(f"{kind.name}: no visible GPU")
    return None, "no GPU telemetry (" + "; ".join(reasons) + ")"


class GpuSampler:
    """``with GpuSampler(reader) as s:`` around a point; ``s.summary(duration_s, output_tokens, requests)`` after."""

    def __init__(self, reader: _Nvml | _Smi, interval_s: float = 0.5) -> None:
        self.reader = reader
        self.interval_s = interval_s
        self.samples: list[GpuSample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpu-telemetry", daemon=True)
        self._t0 = 0.0

    def _take(self) -> None:
        try:
            rows = self.reader.read()
        except Exception:  # noqa: BLE001 — a failed read is a missing sample, never a failed point
            return
        if not rows:
            return
        k = len(rows)
        self.samples.append(GpuSample(
            t_s=time.perf_counter() - self._t0, power_w=sum(r[0] for r in rows), sm_clock_hz=sum(r[1] for r in rows) / k,
            memory_clock_hz=sum(r[2] for r in rows) / k, utilization=sum(r[3] for r in rows) / k,
            memory_used_bytes=sum(r[4] for r in rows)))

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._take()

    def __enter__(self) -> GpuSampler:
        self._t0 = time.perf_counter()
        self._take()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=15)
        self._take()

    def summary(self, duration_s: float, output_tokens: int, requests: int) -> GpuTelemetry:
        s = self.samples
        out = GpuTelemetry(source=self.reader.name, gpu_indices=list(self.reader.indices), samples=len(s))
        if not s:
            return out
        mean_power_w = sum(x.power_w for x in s) / len(s)
        energy_j = mean_power_w * duration_s
        out.mean_power_w, out.max_power_w, out.energy_j = mean_power_w, max(x.power_w for x in s), energy_j
        out.joules_per_output_token = energy_j / output_tokens if output_tokens else None
        out.joules_per_request = energy_j / requests if requests else None
        out.mean_sm_clock_hz = sum(x.sm_clock_hz for x in s) / len(s)
        out.mean_memory_clock_hz = sum(x.memory_clock_hz for x in s) / len(s)
        out.mean_utilization = sum(x.utilization for x in s) / len(s)
        out.max_memory_used_bytes = max(x.memory_used_bytes for x in s)
        return out
