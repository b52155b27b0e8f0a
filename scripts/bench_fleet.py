"""Speed figures for `validate fleet` (targets, issue 19: a 1,000-configuration plan expands and schedules in under a
second; with K free workers N configurations take about N/K times one configuration plus the start of the cluster).

The N/K figure runs real `validate fleet` processes on a local Ray with jobs whose engine is the stub server
(tests/assets/stub-engine/python): every part of a job but the engine is real, so it shows the fleet's own
overhead and parallelism, not how engines contend for a machine. Run: python scripts/bench_fleet.py [--skip-ray]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from validate.fleet.jobs import expand
from validate.fleet.plan import FleetPlan

from benchtime import best_of  # scripts/benchtime.py (this script runs from scripts/)

REPO = Path(__file__).resolve().parents[1]
STUB = REPO / "tests" / "assets" / "stub-engine" / "python"
TINY = REPO / "tests" / "assets" / "tiny-llama"


def thousand_configurations() -> dict:
    """5 models x 5 GPUs x 2 precisions x 2 TP x 5 sequence limits x 2 shapes = 1,000, one exclusion."""
    return {"gpu_resources": {"h200-sxm": "H200", "h100-sxm": "H100"},
            "axes": {"model": ["meta-llama/Llama-3.1-8B", "Qwen/Qwen3-8B", "Qwen/Qwen3-32B", "Qwen/Qwen3-30B-A3B",
                               "google/gemma-3-27b-it"],
                     "gpu": ["h200-sxm", "h100-sxm", "b200", "mi300x", "l40s"], "precision": ["bf16", "fp8"],
                     "tp": [1, 2], "max_num_seqs": [64, 128, 256, 512, 1024],
                     "shape": [{"isl": 1024, "osl": 128}, {"isl": 128, "osl": 1024}]},
            "exclude": [{"gpu": "l40s", "tp": 1, "model": "Qwen/Qwen3-32B"}],
            "load": {"profile": "concurrency:1,2,4,8,16,32,64,128,256,512"}}


def bench_expand() -> None:
    raw = thousand_configurations()
    jobs = expand(FleetPlan.model_validate(raw))
    t = best_of(lambda: expand(FleetPlan.model_validate(raw)), 5)
    print(f"plan of 1,000 configurations ({len(jobs)} jobs after the exclusion): validated and expanded in "
          f"{t * 1e3:.0f} ms (target < 1 s)")


def bench_submit(num_tasks: int = 1000) -> None:
    import ray

    ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        task = ray.remote(lambda: None)
        ray.get(task.remote())  # a warm worker
        jobs = expand(FleetPlan.model_validate(thousand_configurations()))
        t0 = time.perf_counter()
        refs = [task.options(num_cpus=1, max_retries=0).remote() for _ in jobs[:num_tasks]]
        submitted = time.perf_counter() - t0
        ray.get(refs)
        print(f"{len(refs)} jobs submitted to Ray as tasks in {submitted * 1e3:.0f} ms, one CPU each (no-op tasks, "
              f"all ran after {time.perf_counter() - t0:.1f} s); with --max-parallel K the fleet submits K at a time")
    finally:
        ray.shutdown()


def stub_plan(folder: Path, num_configs: int) -> Path:
    plan = folder / f"plan-{num_configs}.toml"
    plan.write_text(f"""devices = "cpu"
served_model_name = "stub"
[env]
LLMCAP_STUB_PYTHON = "{sys.executable}"
LLMCAP_STUB_TOKEN_DELAY_S = "0.05"
[axes]
model = ["{TINY}"]
engine_python = ["{STUB}"]
max_num_seqs = {list(range(1, num_configs + 1))}
shape = [{{ isl = 16, osl = 16 }}]
[load]
profile = "concurrency:1,2"
num_requests = 8
warmup = 1
""")
    return plan


def fleet_times(plan: Path, out: Path, max_parallel: int) -> tuple[float, float, float]:
    """(wall s of the command, s until the first job ran, s from the first job start to the last job end)."""
    t0 = time.time()
    subprocess.run([sys.executable, "-m", "validate.cli", "fleet", str(plan), "--out", str(out), "--max-parallel",
                    str(max_parallel)], check=True, capture_output=True, cwd=REPO)
    wall = time.time() - t0
    records = [json.loads(line) for line in (out / "fleet.jsonl").read_text().splitlines()]
    first = min(r["at_unix_s"] for r in records if r["state"] == "running")
    last = max(r["at_unix_s"] for r in records if r["state"] == "done")
    return wall, first - t0, last - first


def bench_speedup(num_configs: int = 4, max_parallel: int = 2) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        wall1, start1, span1 = fleet_times(stub_plan(folder, 1), folder / "one", 1)
        wall_n, start_n, span_n = fleet_times(stub_plan(folder, num_configs), folder / "many", max_parallel)
    print(f"one configuration: {span1:.1f} s of jobs (cluster start {start1:.1f} s, command {wall1:.1f} s)")
    print(f"{num_configs} configurations, {max_parallel} at a time: {span_n:.1f} s of jobs = {span_n / span1:.2f} x one "
          f"(N/K = {num_configs / max_parallel:g}; cluster start {start_n:.1f} s, command {wall_n:.1f} s)")


if __name__ == "__main__":
    bench_expand()
    if "--skip-ray" not in sys.argv:
        bench_submit()
        bench_speedup()
