"""Where the engine's host work runs, and how fast that CPU is: a probe for the campaign (Linux /proc and /sys only).

The eager MoE prefill step is host-bound and its host speed varied about 2x between server processes on one machine
(docs/measurement-log.md, sittings 23-24). This module gives the campaign what it needs to tie that to a cause:
- `speed_map`: each CPU's single-thread speed now (a fixed pure-Python loop, best of a few, pinned to that CPU);
- `sibling_scan`: how much a busy loop on each other CPU slows one CPU (a virtual CPU sharing a physical core with
  another, which the guest's topology does not show, slows by 1.3-2x);
- `ThreadSampler`: while a point runs, which CPU each thread of the server ran on and how much CPU it used, and each
  CPU's busy and steal share over the point (/proc/stat);
- `pin` / `Spinner`: put the engine core's main thread on one CPU with every other thread of the server (and the
  client) kept off it, and a busy loop on a chosen CPU, to test a placement.
Nothing here measures the engine; it records the host around the measurement.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

LOOP_N = 200_000
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def online_cpus() -> list[int]:
    """Every online CPU (/sys), whatever this thread's own affinity is now (a pinned campaign keeps off one)."""
    try:
        text = Path("/sys/devices/system/cpu/online").read_text().strip()
    except OSError:
        return cpus()
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def loop_s(n: int = LOOP_N, repeats: int = 5) -> float:
    """Best time of a fixed pure-Python loop on the current CPU set."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        x = 0
        for i in range(n):
            x += i
        best = min(best, time.perf_counter() - t0)
    return best


def timed_on(cpu: int, n: int = LOOP_N, repeats: int = 5) -> float:
    """The loop's best time pinned to one CPU (this thread's affinity is restored after)."""
    old = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {cpu})
        return loop_s(n, repeats)
    finally:
        os.sched_setaffinity(0, old)


def speed_map(cpu_list: list[int] | None = None) -> dict[int, float]:
    """Seconds of the loop on each online CPU (the pinned engine core's too), now."""
    return {c: timed_on(c) for c in (cpu_list or online_cpus())}


class Spinner:
    """A busy loop in its own process, pinned to one CPU, until stopped."""

    def __init__(self, cpu: int):
        self.cpu = cpu
        self.proc: subprocess.Popen | None = None

    def start(self) -> "Spinner":
        code = f"import os; os.sched_setaffinity(0, {{{self.cpu}}})\nwhile True: pass"
        self.proc = subprocess.Popen([sys.executable, "-c", code])
        time.sleep(0.05)  # let it start spinning
        return self

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> "Spinner":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def sibling_scan(cpu: int, others: list[int] | None = None) -> dict[int, float]:
    """Slowdown of the loop on `cpu` (time with a spinner on j / time alone) for each other CPU j."""
    alone = timed_on(cpu)
    out = {}
    for j in (others or [c for c in cpus() if c != cpu]):
        with Spinner(j):
            out[j] = timed_on(cpu) / alone
    return out


def topology() -> dict[int, dict]:
    """What the guest's /sys says of each CPU (a virtual machine may hide which CPUs share a physical core)."""
    out = {}
    for c in cpus():
        base = Path(f"/sys/devices/system/cpu/cpu{c}/topology")
        read = lambda name: (base / name).read_text().strip() if (base / name).exists() else None  # noqa: E731
        out[c] = {"core_id": read("core_id"), "package": read("physical_package_id"),
                  "siblings": read("thread_siblings_list")}
    return out


def cpu_times() -> dict[int, list[int]]:
    """/proc/stat per CPU: user nice system idle iowait irq softirq steal (ticks)."""
    out = {}
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("cpu") and line[3:4].isdigit():
            f = line.split()
            out[int(f[0][3:])] = [int(x) for x in f[1:9]]
    return out


def cpu_shares(before: dict[int, list[int]], after: dict[int, list[int]]) -> dict[int, dict[str, float]]:
    """Each CPU's busy and steal share of the ticks between two /proc/stat readings."""
    out = {}
    for c, a in after.items():
        d = [x - y for x, y in zip(a, before.get(c, a))]
        total = sum(d) or 1
        idle = d[3] + d[4]
        out[c] = {"busy": round((total - idle - d[7]) / total, 3), "steal": round(d[7] / total, 3)}
    return out


def _stat(path: Path) -> list[str] | None:
    try:
        text = path.read_text()
    except OSError:
        return None
    head, _, tail = text.rpartition(")")  # comm may hold spaces
    return [head.split("(", 1)[1]] + tail.split()


def descendants(root: int) -> list[int]:
    """root and every process below it."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            st = _stat(d / "stat")
            if st:
                children.setdefault(int(st[2]), []).append(int(d.name))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def process_name(pid: int) -> str:
    st = _stat(Path(f"/proc/{pid}/stat"))
    return st[0] if st else ""


def engine_core_pid(root: int) -> int | None:
    """The engine core's process below the server (vLLM names it VLLM::EngineCore; comm keeps 15 characters)."""
    for p in descendants(root):
        if process_name(p).startswith("VLLM::EngineCor"):
            return p
    return None


def threads(pid: int) -> list[int]:
    try:
        return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return []


class ThreadSampler:
    """Every `interval_s` (reading /proc costs about a millisecond), each thread of the server's processes: the CPU it last ran on while running, its CPU
    time. `summary()` keeps the threads that used at least 2 % of the window."""

    def __init__(self, root: int, interval_s: float = 0.05, avoid: set[int] = frozenset()):
        self.root, self.interval_s, self.avoid = root, interval_s, set(avoid)
        self.first: dict[int, tuple] = {}
        self.last: dict[int, tuple] = {}
        self.on_cpu: dict[int, Counter] = {}
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "ThreadSampler":
        self.t0, self.proc0 = time.monotonic(), cpu_times()
        self.pids = descendants(self.root)
        self.thread.start()
        return self

    def _run(self) -> None:
        if self.avoid and set(cpus()) - self.avoid:  # keep the sampler off a CPU under test
            os.sched_setaffinity(0, set(cpus()) - self.avoid)
        while not self.stop_flag.is_set():
            for pid in self.pids:
                for tid in threads(pid):
                    st = _stat(Path(f"/proc/{pid}/task/{tid}/stat"))
                    if not st:
                        continue
                    rec = (pid, st[0], int(st[12]) + int(st[13]))  # utime + stime
                    self.first.setdefault(tid, rec)
                    self.last[tid] = rec
                    if st[1] == "R":
                        self.on_cpu.setdefault(tid, Counter())[int(st[37])] += 1
            self.stop_flag.wait(self.interval_s)

    def __exit__(self, *exc) -> None:
        self.stop_flag.set()
        self.thread.join()
        self.wall_s, self.proc1 = time.monotonic() - self.t0, cpu_times()

    def summary(self) -> dict:
        busy = []
        for tid, (pid, comm, ticks) in self.last.items():
            cpu_s = (ticks - self.first[tid][2]) / CLK_TCK
            if cpu_s >= 0.02 * self.wall_s:
                busy.append({"pid": pid, "tid": tid, "process": process_name(pid), "comm": comm,
                             "cpu_s": round(cpu_s, 3), "on_cpu": dict(self.on_cpu.get(tid, Counter()).most_common())})
        busy.sort(key=lambda r: -r["cpu_s"])
        return {"wall_s": round(self.wall_s, 3), "threads": busy, "cpus": cpu_shares(self.proc0, self.proc1)}


def pin(server_root: int, engine_pid: int, main_cpu: int, rest: list[int]) -> list[str]:
    """The engine core's main thread alone on main_cpu; every other thread of the server, and this process (so
    the client it starts), on `rest`. Returns what could not be moved."""
    failed = []
    for pid in descendants(server_root):
        for tid in threads(pid):
            target = {main_cpu} if tid == engine_pid else set(rest)
            try:
                os.sched_setaffinity(tid, target)
            except OSError as exc:
                failed.append(f"{tid}: {exc}")
    os.sched_setaffinity(0, set(rest))
    return failed


def unpin(server_root: int) -> None:
    every = set(range(os.cpu_count() or 1))
    for pid in descendants(server_root):
        for tid in threads(pid):
            try:
                os.sched_setaffinity(tid, every)
            except OSError:
                pass
    os.sched_setaffinity(0, every)


def probe_at_ready(server_root: int) -> dict:
    """The host as the server starts measuring: the engine core's process, each CPU's speed, and for the fastest
    and slowest CPU (CPU 0 aside: interrupts) the CPU whose busy loop slows it most, if any slows it by 25 % or more."""
    speeds = speed_map()
    pool = [c for c in speeds if c != 0] or list(speeds)
    fast, slow = min(pool, key=speeds.get), max(pool, key=speeds.get)
    out = {"engine_core_pid": engine_core_pid(server_root), "topology": topology(), "loop_s": speeds,
           "fast": fast, "slow": slow, "scan": {}, "sibling": {}}
    for c in {fast, slow}:
        scan = sibling_scan(c)
        worst = max(scan, key=scan.get)
        out["scan"][c] = {j: round(r, 3) for j, r in scan.items()}
        out["sibling"][c] = worst if scan[worst] >= 1.25 else None
    quiet = [j for j in sorted(out["scan"][fast], key=out["scan"][fast].get) if j not in (fast, slow, 0)
             and j not in out["sibling"].values()]
    out["other"] = quiet[0] if quiet else None
    return out


def apply_condition(server_root: int, probe: dict, cond: dict) -> tuple[dict, Spinner | None]:
    """A shape's host condition: {"pin": "fast" | "slow" | "none", "spin": "sibling" | "other" | "none"}. Pinning
    puts the engine core's main thread alone on that CPU and keeps everything else off it and its sibling. Returns
    what was applied (CPUs named) and the spinner to stop after the shape's points."""
    unpin(server_root)
    pin_to = cond.get("pin", "none")
    applied: dict = {"pin": pin_to, "spin": cond.get("spin", "none")}
    main = probe.get(pin_to) if pin_to in ("fast", "slow") else None
    engine = probe.get("engine_core_pid")
    if main is not None and engine:
        sib = probe["sibling"].get(main)
        rest = [c for c in cpus() if c not in (main, sib)] or [c for c in cpus() if c != main]
        if rest:  # one CPU: nothing to pin
            applied.update(main_cpu=main, sibling=sib, failed=pin(server_root, engine, main, rest))
    spin_cpu = None
    if applied["spin"] == "sibling" and main is not None:
        spin_cpu = probe["sibling"].get(main)
    elif applied["spin"] == "other":
        spin_cpu = probe.get("other")
    applied["spin_cpu"] = spin_cpu
    spinner = Spinner(spin_cpu).start() if spin_cpu is not None else None
    return applied, spinner
