"""Where the host's time went during a point: the load client's CPU and event-loop lag, and the CPU of each
process of a server on this machine.

A TTFT measured by the client includes everything between the client's clock and the engine's: the client's own
event loop (a stamp taken late when the loop is busy), the server's HTTP front-end (a single Python process that
parses every request and writes every streamed chunk) and the engine. The engine's /metrics time only the last.
These figures say which of the others was busy: a client whose loop lagged, or a front-end process near one full
core, is a queue the engine's counters do not see.

- client: CPU seconds of this process (user + system, all threads) over the point, per wall second; and the lag of
  its event loop (a task that asks to wake every ``LAG_TICK_S`` and records how late it woke).
- server: every process that holds a listening socket on the target's local port, and all their descendants
  (Linux /proc; a server on another machine, or a system without /proc, gives none and says so). CPU per wall
  second is summed by process name (``/proc/PID/comm``: vLLM names its engine core ``VLLM::EngineCor``, SGLang its
  scheduler ``sglang::schedu``), so a name is a role, not a pid.
"""

from __future__ import annotations

import asyncio
import os
import resource
import time
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

LAG_TICK_S = 0.005  # the loop-lag probe's period: short beside a decode step, long beside its own cost
PROC = Path("/proc")
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0", "[::1]"}
TCP_LISTEN = "0A"


class HostTelemetry(BaseModel):
    """The host's busy processes over one point's measured requests (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    duration_s: float = Field(ge=0, description="wall seconds the figures cover")
    client_cpu_cores: float = Field(ge=0, description="the load client's CPU seconds per wall second")
    client_loop_lag_mean_s: float = Field(ge=0, description="mean lateness of the client's event loop")
    client_loop_lag_p99_s: float = Field(ge=0, description="99th percentile of that lateness")
    client_loop_lag_max_s: float = Field(ge=0, description="its largest")
    server_cpu_cores: dict[str, float] = Field(
        default_factory=dict, description="the server's CPU seconds per wall second, summed by process name")
    server_note: str | None = Field(default=None, description="why no server process was read, when none was")

    def describe(self) -> str:
        parts = [f"client {self.client_cpu_cores:.2f} cores, loop lag mean {self.client_loop_lag_mean_s * 1e3:.1f} ms"
                 f" / max {self.client_loop_lag_max_s * 1e3:.0f} ms"]
        busiest = sorted(self.server_cpu_cores.items(), key=lambda kv: -kv[1])[:3]
        if busiest:
            parts.append("server " + ", ".join(f"{name} {cores:.2f}" for name, cores in busiest))
        elif self.server_note:
            parts.append(self.server_note)
        return "; ".join(parts)


def _cpu_self_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds) of one process from /proc/PID/stat; None when it is gone or unreadable."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # "pid (comm) state ppid ..."; comm may hold spaces and parentheses, so split after the last ')'.
    fields = text[text.rfind(")") + 2:].split()
    try:
        return int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (IndexError, ValueError):
        return None


def _comm(pid: int) -> str:
    try:
        return (PROC / str(pid) / "comm").read_text().strip() or "?"
    except OSError:
        return "?"


def _pids() -> list[int]:
    return [int(p.name) for p in PROC.iterdir() if p.name.isdigit()]


def _listening_inodes(port: int) -> set[str]:
    inodes = set()
    for table in ("net/tcp", "net/tcp6"):
        try:
            lines = (PROC / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) > 9 and f[3] == TCP_LISTEN and int(f[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f[9])
    return inodes


def _holders(inodes: set[str], pids: list[int]) -> set[int]:
    """Those of `pids` with a file descriptor on one of these sockets (only those this user may read)."""
    wanted = {f"socket:[{i}]" for i in inodes}
    found = set()
    for pid in pids:
        try:
            fds = list((PROC / str(pid) / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) in wanted:
                    found.add(pid)
                    break
            except OSError:
                continue
    return found


def server_processes(base_url: str) -> tuple[dict[int, str], str | None]:
    """pid -> name of every process serving ``base_url`` on this machine (listeners and their descendants),
    or ({}, why not)."""
    parts = urlsplit(base_url)
    if parts.hostname not in LOCAL_HOSTS:
        return {}, f"server processes not read (the server is not on this machine: {parts.hostname})"
    if not (PROC / "net/tcp").exists():
        return {}, "server processes not read (no /proc on this system)"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    pids = _pids()
    roots = _holders(_listening_inodes(port), pids)
    if not roots:
        return {}, f"server processes not read (no readable process listens on port {port})"
    parent = {pid: st[0] for pid in pids if (st := _stat(pid)) is not None}
    tree, grew = set(roots), True
    while grew:
        children = {pid for pid, ppid in parent.items() if ppid in tree} - tree
        tree |= children
        grew = bool(children)
    return {pid: _comm(pid) for pid in sorted(tree)}, None


class HostSampler:
    """``async with HostSampler(base_url) as host:`` around a point, ``await host.start()`` when its measured
    requests begin; ``host.summary()`` after. Never raises for what it reads."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.lags_s: list[float] = []
        self._task: asyncio.Task | None = None
        self._t0 = self._t1 = 0.0
        self._cpu0 = self._cpu1 = 0.0
        self._server: dict[int, str] = {}
        self._server_note: str | None = None
        self._server_cpu0: dict[int, float] = {}
        self._server_cpu1: dict[int, float] = {}

    def _server_cpu(self) -> dict[int, float]:
        return {pid: st[1] for pid in self._server if (st := _stat(pid)) is not None}

    async def _probe(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            asked = loop.time()
            await asyncio.sleep(LAG_TICK_S)
            self.lags_s.append(max(loop.time() - asked - LAG_TICK_S, 0.0))

    async def start(self) -> None:
        self._server_cpu0 = self._server_cpu()
        self._cpu0, self._t0 = _cpu_self_s(), time.perf_counter()
        self._task = asyncio.create_task(self._probe())

    async def __aenter__(self) -> HostSampler:
        # The scan of /proc runs here, before the point's requests, not in start() when they begin.
        try:
            self._server, self._server_note = server_processes(self.base_url)
        except OSError as err:  # /proc changing under the scan
            self._server, self._server_note = {}, f"server processes not read ({err})"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is None:
            return
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass
        self._t1, self._cpu1 = time.perf_counter(), _cpu_self_s()
        self._server_cpu1 = self._server_cpu()

    def summary(self) -> HostTelemetry | None:
        """None when the point never started its measured requests."""
        if self._task is None or self._t1 <= self._t0:
            return None
        wall = self._t1 - self._t0
        by_name: dict[str, float] = {}
        for pid, cpu1 in self._server_cpu1.items():
            if pid in self._server_cpu0:
                name = self._server[pid]
                by_name[name] = by_name.get(name, 0.0) + max(cpu1 - self._server_cpu0[pid], 0.0) / wall
        lags = sorted(self.lags_s) or [0.0]
        return HostTelemetry(
            duration_s=wall, client_cpu_cores=max(self._cpu1 - self._cpu0, 0.0) / wall,
            client_loop_lag_mean_s=sum(lags) / len(lags), client_loop_lag_p99_s=lags[min(len(lags) - 1,
                                                                                         int(0.99 * len(lags)))],
            client_loop_lag_max_s=lags[-1], server_cpu_cores={k: round(v, 4) for k, v in sorted(by_name.items())},
            server_note=self._server_note if not self._server else None)
