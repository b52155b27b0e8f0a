"""Summarize a vLLM worker's torch-profiler trace (Kineto chrome-trace JSON, gzipped or not) into one small JSON:
for every engine step (vLLM's `execute_context_N(T)_generation_M(G)` annotation) the CPU time of the step's
launches, the GPU time of the kernels those launches started (their union, so overlapping streams count once),
where the GPU waited for the CPU, and the CPU calls that wait for the GPU. It tells a launch-bound step (GPU idle
between kernels, busy ≪ span) from a GPU-bound one (busy ≈ span) and names the host calls that block.

Runs on the GPU machine with the standard library only:
    python3 scripts/device/trace_summary.py TRACE.json.gz [MORE ...] --out SUMMARY.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from collections import defaultdict
from pathlib import Path

STEP = re.compile(r"^execute_context_(\d+)\((\d+)\)_generation_(\d+)\((\d+)\)$")
LAUNCH_CATS = {"cuda_runtime", "cuda_driver"}
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
BLOCKING = ("Synchronize", "cudaMemcpy", "cuMemcpy")  # host calls that can wait for the GPU


def read_events(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        trace = json.load(f)
    return [e for e in trace.get("traceEvents", []) if e.get("ph") == "X" and "dur" in e]


def union_s(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of [start, end) intervals, in the trace's unit."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def summarize(events: list[dict]) -> dict:
    steps = sorted((e for e in events if e.get("cat") == "user_annotation" and STEP.match(e["name"])),
                   key=lambda e: e["ts"])
    launches = sorted((e for e in events if e.get("cat") in LAUNCH_CATS), key=lambda e: e["ts"])
    gpu_by_corr = defaultdict(list)  # a CUDA graph's launch starts many kernels under one correlation id
    for e in events:
        if e.get("cat") in GPU_CATS and "correlation" in e.get("args", {}):
            gpu_by_corr[e["args"]["correlation"]].append(e)
    spans = [e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("gpu_model_runner:")]
    cpu_ops = [e for e in events if e.get("cat") == "cpu_op"]
    out = []
    for i, st in enumerate(steps):
        a = st["ts"]
        b = steps[i + 1]["ts"] if i + 1 < len(steps) else a + st["dur"]
        ctx_n, ctx_t, gen_n, gen_t = (int(x) for x in STEP.match(st["name"]).groups())
        mine = [e for e in launches if a <= e["ts"] < b]
        kernels = [k for e in mine for k in gpu_by_corr.get(e.get("args", {}).get("correlation"), ())]
        blocking = defaultdict(float)
        for e in mine:
            if any(k in e["name"] for k in BLOCKING):
                blocking[e["name"]] += e["dur"]
        phase = defaultdict(float)
        for e in spans:
            if a <= e["ts"] < b:
                phase[e["name"].split(": ", 1)[1]] += e["dur"]
        row = {"context_requests": ctx_n, "context_tokens": ctx_t, "generation_requests": gen_n,
               "generation_tokens": gen_t, "annotation_us": round(st["dur"], 1), "until_next_step_us": round(b - a, 1),
               "launches": len(mine), "launch_us": round(sum(e["dur"] for e in mine), 1),
               "gpu_ops": len(kernels), "phase_us": {k: round(v, 1) for k, v in phase.items()},
               "blocking_us": {k: round(v, 1) for k, v in sorted(blocking.items(), key=lambda kv: -kv[1])[:6]}}
        if kernels:
            first = min(k["ts"] for k in kernels)
            last = max(k["ts"] + k["dur"] for k in kernels)
            row.update(gpu_first_after_step_start_us=round(first - a, 1), gpu_span_us=round(last - first, 1),
                       gpu_busy_us=round(union_s([(k["ts"], k["ts"] + k["dur"]) for k in kernels]), 1),
                       gpu_last_end_after_step_start_us=round(last - a, 1))
        out.append(row)
    # the host ops that took the most time inside prefill steps (inclusive time, top level and nested alike)
    by_op = defaultdict(lambda: [0, 0.0])
    prefill = [(s["ts"], s["ts"] + s["dur"]) for s in steps if int(STEP.match(s["name"]).group(2)) > 0]
    for e in cpu_ops:
        if any(a <= e["ts"] < b for a, b in prefill):
            by_op[e["name"]][0] += 1
            by_op[e["name"]][1] += e["dur"]
    top = sorted(by_op.items(), key=lambda kv: -kv[1][1])[:25]
    return {"steps": out, "prefill_steps": len(prefill),
            "prefill_cpu_ops_top": [{"name": k, "calls": n, "total_us": round(t, 1)} for k, (n, t) in top]}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("traces", nargs="+")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    result = {}
    for t in a.traces:
        try:
            result[Path(t).name] = summarize(read_events(Path(t)))
        except (OSError, ValueError, KeyError) as exc:  # a torn or foreign trace: say so, keep the others
            result[Path(t).name] = {"error": f"{type(exc).__name__}: {exc}"}
    Path(a.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
