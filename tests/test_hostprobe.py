"""The campaign's host probe (scripts/device/hostprobe.py) against the real CPU vLLM server: it finds the engine
core, pins its main thread alone on a CPU, sees where the server's threads ran while a request was served, and
puts every thread back as it found it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "device"))
import hostprobe  # noqa: E402


def affinities(root: int) -> dict[int, set[int]]:
    out = {}
    for pid in hostprobe.descendants(root):
        for tid in hostprobe.threads(pid):
            try:
                out[tid] = os.sched_getaffinity(tid)
            except OSError:
                pass
    return out


def restore(saved: dict[int, set[int]]) -> None:
    for tid, cpus in saved.items():
        try:
            os.sched_setaffinity(tid, cpus)
        except OSError:
            pass


def test_cpu_times_and_shares_are_fractions():
    before = hostprobe.cpu_times()
    hostprobe.loop_s(50_000, 1)
    shares = hostprobe.cpu_shares(before, hostprobe.cpu_times())
    assert set(shares) == set(before)
    assert all(0 <= v["busy"] <= 1 and 0 <= v["steal"] <= 1 for v in shares.values())


def test_a_spinner_on_the_same_cpu_slows_the_loop():
    cpu = hostprobe.cpus()[-1]
    before = hostprobe.timed_on(cpu, 2_000_000, 1)
    with hostprobe.Spinner(cpu):
        shared = hostprobe.timed_on(cpu, 2_000_000, 1)  # long enough to span the scheduler's time slices
    alone = min(before, hostprobe.timed_on(cpu, 2_000_000, 1))  # the quieter of two readings around it
    # one more busy loop on the CPU: 2x alone, and still (n + 2) / (n + 1) > 1.15 beside up to 5 other busy tasks
    assert shared > 1.15 * alone


def test_probe_pins_the_engine_core_and_samples_it(vllm_server):
    root = vllm_server.engine.pid
    saved = affinities(root)
    own = os.sched_getaffinity(0)
    try:
        probe = hostprobe.probe_at_ready(root)
        engine = probe["engine_core_pid"]
        assert engine is not None and hostprobe.process_name(engine).startswith("VLLM::EngineCor")
        assert set(probe["loop_s"]) == set(hostprobe.cpus()) and all(v > 0 for v in probe["loop_s"].values())
        applied, spinner = hostprobe.apply_condition(root, probe, {"pin": "fast", "spin": "none"})
        assert spinner is None and applied["failed"] == []
        assert os.sched_getaffinity(engine) == {applied["main_cpu"]}
        others = [t for t in hostprobe.threads(engine) if t != engine]
        assert others and all(applied["main_cpu"] not in os.sched_getaffinity(t) for t in others)
        with hostprobe.ThreadSampler(root, avoid={applied["main_cpu"]}) as sampler:
            r = httpx.post(f"{vllm_server.base_url}/v1/completions", timeout=120,
                           json={"model": vllm_server.model, "prompt": "w1 w2 w3", "max_tokens": 8})
            assert r.status_code == 200
        summary = sampler.summary()
        assert summary["wall_s"] > 0 and set(summary["cpus"]) == set(hostprobe.cpu_times())
        main = [t for t in summary["threads"] if t["tid"] == engine]
        assert all(set(t["on_cpu"]) <= {applied["main_cpu"]} for t in main)
        assert applied["main_cpu"] in hostprobe.speed_map()  # measured from the pinned campaign too
        hostprobe.unpin(root)
        assert os.sched_getaffinity(engine) == set(range(os.cpu_count()))
    finally:
        restore(saved)
        os.sched_setaffinity(0, own)
