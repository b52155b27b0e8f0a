"""Decode step time at large batch, read from vLLM's own periodic stats lines (validate/steplog.py), against
the model's step. Usage: python scripts/step_log_analysis.py [RUN_DIR ...] (default: every run under
data/measurements/h200/vllm-0.26.0 with a server.log.gz).
"""

from __future__ import annotations

import sys
from pathlib import Path

from capacity import Scenario
from capacity.estimate import calibration_for, plan_for
from capacity.steptime import step_parts
from validate.compare import load_run
from validate.steplog import decode_windows, server_log_text
ROOT = Path("data/measurements/h200/vllm-0.26.0")


def windows(run: Path, min_running: int = 8) -> list[tuple[int, float, float]]:
    """(running, step seconds, KV usage fraction) of every pure-decode stats window."""
    return [(w.running, w.step_s, w.kv_usage) for w in decode_windows(server_log_text(run) or "", min_running)]


def rows(run: Path) -> list[dict]:
    """`run` is a server's folder (server.log.gz, scenario.json, facts.json, one folder per shape)."""
    shape_dirs = sorted(p.parent for p in run.glob("*/points.jsonl"))
    if not shape_dirs:
        return []
    measured = load_run(shape_dirs[0])  # model, GPU, precision, TP/EP as the comparison reads them
    s = Scenario(**{**measured.scenario, "isl": 1024, "osl": 128})
    plan = plan_for(s)
    cal = calibration_for(s, plan)
    capacity = measured.facts.get("kv_cache_tokens") or plan.memory.kv_capacity_tokens
    out = []
    for running, step_s, usage in windows(run):
        context = usage * capacity / running
        parts = step_parts(plan.costs, cal.efficiency, running, context, 0.0, 0.0)
        out.append({"run": run.name, "tp": s.tp, "running": running, "context": context, "measured_s": step_s,
                    "model_s": float(parts.time_s), "model_gpu_s": float(parts.gpu_s),
                    "model_host_s": float(parts.host_s), "model_overhead_s": float(parts.overhead_s)})
    return out


def main() -> None:
    runs = [Path(a) for a in sys.argv[1:]] or sorted(p.parent for p in ROOT.glob("sitting-*/*/server.log.gz"))
    print(f"{'run':32s} {'tp':>2s} {'running':>7s} {'context':>7s} {'measured ms':>11s} {'model ms':>8s} "
          f"{'model GPU ms':>12s} {'excess µs/seq':>13s}")
    for run in runs:
        for r in rows(run):
            excess = (r["measured_s"] - r["model_gpu_s"]) / r["running"] * 1e6
            print(f"{r['run'][:32]:32s} {r['tp']:2d} {r['running']:7d} {r['context']:7.0f} {r['measured_s'] * 1e3:11.1f} "
                  f"{r['model_s'] * 1e3:8.1f} {r['model_gpu_s'] * 1e3:12.1f} {excess:13.1f}")


if __name__ == "__main__":
    main()
