"""Fit the power model's three shares of TDP (capacity/model/power.py) on NVML power of committed points and write
capacity/calibrations/power.json and docs/power.md. Declared split: the dense Llama-3.1-8B points of the
sittings TRAIN_SITTINGS names train (sitting 9 first; each later one was named before the fit ran); every other
point, MoE and other dense models, and a new sitting's Llama points, is held out.

    .venv/bin/python scripts/power_report.py           # write both
    .venv/bin/python scripts/power_report.py --check   # exit 1 when either differs from what the data gives

Each point is priced at its own measured request rate and mean running batch (the engine's counters), so the
comparison checks the power model alone, not the throughput model. Caveat: the weights were random (vLLM's dummy
load format); power with real weights may differ, and MoE routing with random weights is uneven (sitting 9).
"""

from __future__ import annotations

import argparse
import glob
import json
import statistics
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from capacity.estimate import plan_for, request_work_s  # noqa: E402
from capacity.model.power import POWER_FILE, PowerCoefficients, mean_power_w  # noqa: E402
from validate.compare import load_run, point_scenario  # noqa: E402

DATA = REPO / "data/measurements/h200/vllm-0.26.0"
TRAIN_MODELS = ("meta-llama/Llama-3.1-8B",)
# the sittings whose Llama-3.1-8B points the shipped fit trains on (the last one added 2026-12-03, sitting 20); a
# later sitting's points are held out like every other model's until this line names it
TRAIN_SITTINGS = ("sitting-9", "sitting-11", "sitting-12", "sitting-14", "sitting-15", "sitting-17", "sitting-20")
OUT_JSON = REPO / "capacity/calibrations" / POWER_FILE
OUT_DOC = REPO / "docs/power.md"


def points() -> list[dict]:
    """Every committed point with NVML power, its work per request and its measured rate."""
    out = []
    for folder in sorted({str(Path(p).parent) for p in glob.glob(str(DATA / "*/*/*/points.jsonl"))}):
        run = load_run(folder)
        for p in run.points:
            g = p.gpu_telemetry
            if g is None or not g.mean_power_w or not p.requests_per_s or p.completed == 0:
                continue
            s = point_scenario(run, p)
            plan = plan_for(s)
            running = (p.engine_telemetry.mean_running if p.engine_telemetry and p.engine_telemetry.mean_running
                       else p.mean_concurrency or 1.0)
            m, c = request_work_s(plan, s, running)  # the estimate's own path (speculation included)
            out.append({"run": str(Path(folder).relative_to(DATA)), "model": s.model, "load": p.load,
                        "rps": float(p.requests_per_s) / plan.replicas, "running": float(running),
                        "memory_s": float(m), "compute_s": float(c), "tdp_w": plan.gpu.tdp_watts,
                        "measured_w": float(g.mean_power_w), "gpu": plan.gpu.id})
    return out


def fit(train: list[dict]) -> tuple[float, float, float]:
    """Non-negative least squares of measured ÷ TDP on (1, R·M, R·C), relative errors weighted alike."""
    from scipy.optimize import nnls

    A = np.array([[1.0, p["rps"] * p["memory_s"], p["rps"] * p["compute_s"]] for p in train])
    y = np.array([p["measured_w"] / p["tdp_w"] for p in train])
    w = 1.0 / y
    x, _ = nnls(A * w[:, None], y * w)
    return float(x[0]), float(x[1]), float(x[2])


def build() -> tuple[PowerCoefficients, list[dict]]:
    pts = points()
    train = [p for p in pts if p["model"] in TRAIN_MODELS and p["run"].split("/")[0] in TRAIN_SITTINGS]
    held = [p for p in pts if p not in train]
    idle, mem, comp = fit(train)
    k = PowerCoefficients(idle=round(idle, 6), memory=round(mem, 6), compute=round(comp, 6), gpu=train[0]["gpu"],
                          source="fitted by scripts/power_report.py on NVML mean power of the Llama-3.1-8B points of "
                                 f"{', '.join(TRAIN_SITTINGS)} (vLLM 0.26.0, one H200, random dummy weights); every "
                                 "other point held out",
                          fitted_on=sorted(f"{p['run']} {p['load']}" for p in train),
                          held_out=sorted(f"{p['run']} {p['load']}" for p in held))
    for p in pts:
        p["predicted_w"] = float(mean_power_w(p["tdp_w"], p["rps"], p["memory_s"], p["compute_s"], k))
        p["error"] = p["predicted_w"] / p["measured_w"] - 1
        p["split"] = "fitted" if p in train else "held out"
    med = statistics.median(abs(p["error"]) for p in held) if held else None
    return k.model_copy(update={"held_out_median_abs_error": None if med is None else round(med, 4)}), pts


def render_doc(k: PowerCoefficients, pts: list[dict]) -> str:
    def pc(x: float) -> str:
        return f"{x * 100:+.0f} %"

    def summary(split: str) -> str:
        g = [p for p in pts if p["split"] == split]
        return (f"{len(g)} points, median |error| {statistics.median(abs(p['error']) for p in g) * 100:.0f} %, "
                f"worst {pc(max((p['error'] for p in g), key=abs))}") if g else "none"

    lines = [
        "# GPU power and energy per token", "",
        "Generated by `python scripts/power_report.py` from the committed NVML power of the H200 points (vLLM "
        "0.26.0, sittings 9 on); `tests/test_power.py` fails when this page or `capacity/calibrations/power.json` drifts.", "",
        "The model (`capacity/model/power.py`): a GPU draws `idle` × TDP whenever it is on, plus `memory` × TDP times the "
        "share of each second its HBM would be saturated and `compute` × TDP times the share its tensor cores would "
        "be, at most TDP. The shares of a second come from the work each request does (bytes ÷ bandwidth and FLOPs ÷ "
        "peak of its prefill and of its part of each decode step at the running batch) times the request rate. Every "
        "estimate prints the predicted mean power, joules per output token and, with `--price-usd-per-kwh`, the "
        "electricity per million output tokens; the TDP bound stays beside them.", "",
        f"Fitted (declared before the fit: dense Llama-3.1-8B points of {', '.join(TRAIN_SITTINGS)} train, every "
        f"other point is held out): idle "
        f"**{k.idle:.3f}**, memory **{k.memory:.3f}**, compute **{k.compute:.3f}** of TDP ({k.gpu}, "
        f"{pts[0]['tdp_w']:.0f} W).", "",
        f"- fitted: {summary('fitted')}",
        f"- held out: {summary('held out')}", "",
        "Each point is priced at its own measured request rate and mean running batch (vLLM's counters), so the "
        "errors are the power model's, not the throughput model's. **Limits**: one GPU (H200), one engine, random "
        "dummy weights (real weights toggle differently; MoE routing with random weights is uneven, so the MoE "
        "points read fewer experts than real routing would), a constant clock. On other GPUs the shares are carried "
        "as shares of their TDP: an extrapolation no measurement has checked.", "",
        "| run | load | split | rate req/s | running | measured W | predicted W | error |",
        "|---|---|---|---|---|---|---|---|"]
    for p in sorted(pts, key=lambda p: (p["split"] != "fitted", p["run"], p["load"])):
        lines.append(f"| {p['run']} | {p['load']} | {p['split']} | {p['rps']:.3g} | {p['running']:.0f} | "
                     f"{p['measured_w']:.0f} | {p['predicted_w']:.0f} | {pc(p['error'])} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    k, pts = build()
    js, doc = k.model_dump_json(indent=1) + "\n", render_doc(k, pts)
    if a.check:
        stale = [str(p) for p, text in ((OUT_JSON, js), (OUT_DOC, doc)) if not p.is_file() or p.read_text() != text]
        if stale:
            print("stale: " + ", ".join(stale) + " (run python scripts/power_report.py)")
            return 1
        return 0
    OUT_JSON.write_text(js)
    OUT_DOC.write_text(doc)
    print(f"wrote {OUT_JSON} and {OUT_DOC}: idle {k.idle:.3f}, memory {k.memory:.3f}, compute {k.compute:.3f}; "
          f"held-out median |error| {k.held_out_median_abs_error}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
