"""Decode step time at large batch, read from vLLM's own periodic stats lines (validate/steplog.py), against
the model's step. Usage: python scripts/step_log_analysis.py [RUN_DIR ...] (default: every run under
data/measurements/h200/vllm-0.26.0 with a server.log.gz).
"""

from __future__ import annotations

import sys
from pathlib import Path

from capacity.estimate import calibration_for, plan_for
from capacity.model.steptime import step_parts
from validate.calibrate import step_samples
from validate.compare import load_run

ROOT = Path("data/measurements/h200/vllm-0.26.0")


def rows(run: Path) -> list[dict]:
    """`run` is a server's folder (server.log.gz, scenario.json, facts.json, one folder per shape): its
    pure-decode windows (validate.calibrate.step_samples) against the model's step with the shipped calibration."""
    samples = step_samples([load_run(p.parent) for p in sorted(run.glob("*/points.jsonl"))], min_running=8)
    if not samples:
        return []
    s = samples[0].scenario  # one server, one deployment
    eff = calibration_for(s, plan_for(s)).efficiency
    out = []
    for st in samples:
        parts = step_parts(st.costs, eff, st.running, st.context, 0.0, 0.0)
        out.append({"run": run.name, "tp": st.scenario.tp, "running": st.running, "context": st.context,
                    "measured_s": st.step_s, "model_s": float(parts.time_s), "model_gpu_s": float(parts.gpu_s),
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
