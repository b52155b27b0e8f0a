"""Closed forms against the step simulator on every committed vLLM measurement: which one is closer.

Both use the shipped calibration (fitted with the closed forms on the training split of
docs/accuracy.md), so the simulator is scored on the closed forms' parameters: nothing is refitted.
Prints mean absolute error per load kind and metric; `--out FILE.csv` keeps every point.

    python scripts/simulator_accuracy.py [--out sim.csv] [--glob 'data/measurements/h200/vllm-0.26.0/*/*/*']
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from capacity.errors import CapacityError  # noqa: E402
from capacity.estimate import calibration_for, estimate, plan_for  # noqa: E402
from capacity.simulate import EngineContext, Traffic, simulate  # noqa: E402
from validate.compare import load_run, point_scenario  # noqa: E402

METRICS = {"mean_ttft_s": "ttft_s", "mean_itl_s": "itl_s", "requests_per_s": "requests_per_s"}


def workload_options(run_dir: Path) -> dict:
    meta = run_dir / "metadata.json"
    if not meta.exists():
        return {}
    w = json.loads(meta.read_text()).get("workload", {})
    kind, _, ratio = str(w.get("length_dist", "fixed")).partition(":")
    out = {"arrivals": w.get("arrivals", "constant") if w.get("arrivals") in ("constant", "poisson") else "constant"}
    if kind in ("uniform", "normal"):
        out.update(length_dist=kind, length_ratio=float(ratio))
    return out


def recorded_requests(run_dir: Path, load: str) -> pd.DataFrame | None:
    """The point's requests in send order (requests.csv as the campaign packs it, or requests.jsonl)."""
    csv, jsonl = run_dir / "requests.csv", run_dir / "requests.jsonl"
    if csv.exists():
        df = pd.read_csv(csv)
    elif jsonl.exists():
        df = pd.DataFrame([json.loads(x) for x in jsonl.read_text().splitlines() if x.strip()])
    else:
        return None
    df = df[(df["load"] == load)]
    return df.sort_values("start_s") if len(df) else None


def replay_options(run_dir: Path, load: str) -> dict | None:
    """Replay what was sent: a rate point's send times and lengths (trace), a closed loop's lengths in order."""
    df = recorded_requests(run_dir, load)
    if df is None or df["input_tokens"].isna().any():
        return None
    lengths = {"trace_isl": tuple(int(x) for x in df["input_tokens"]), "trace_osl": tuple(int(x) for x in df["output_tokens"])}
    if load.startswith("rate"):
        return {"kind": "trace", "trace_send_s": tuple(float(x) for x in df["start_s"]), **lengths}
    if load.startswith("concurrency"):
        return lengths
    return None


def rows(paths: list[str]) -> list[dict]:
    out = []
    for path in paths:
        try:
            run = load_run(path)
        except Exception as exc:  # a folder that is not a run: say so and go on
            print(f"skip {path}: {exc}", file=sys.stderr)
            continue
        if run.scenario.get("engine") not in (None, "vllm"):
            continue
        opts = workload_options(Path(path))
        for p in run.points:
            if not p.completed:
                continue
            row = {"run": path, "load": p.load, "kind": p.load.split(":")[0]}
            for method in ("closed-form", "simulate"):
                try:
                    t0 = time.perf_counter()
                    e = estimate(point_scenario(run, p, method=method, **opts))
                    row[f"{method}_s"] = time.perf_counter() - t0
                except CapacityError as exc:
                    row[f"{method}_error"] = str(exc)
                    continue
                for mk, pk in METRICS.items():
                    meas = getattr(p, mk)
                    row[f"measured_{pk}"] = meas
                    row[f"{method}_{pk}"] = getattr(e, pk)
                    row[f"{method}_err_{pk}"] = getattr(e, pk) / meas - 1 if meas else np.nan
            replay = replay_options(Path(path), p.load)
            if replay is not None:  # the simulator fed with what was really sent
                s = point_scenario(run, p)
                plan = plan_for(s)
                longest = max(a + b for a, b in zip(replay["trace_isl"], replay["trace_osl"])) + 2
                engine = EngineContext.build(plan, calibration_for(s, plan).efficiency, False, longest)
                kind = replay.pop("kind", p.load.split(":")[0])
                value = float(p.load.split(":")[1]) if ":" in p.load else 1.0
                sim = simulate(engine, Traffic(kind=kind, value=value, num_requests=len(replay["trace_isl"]), **replay),
                               s.isl, s.osl).summary()
                for mk, pk in METRICS.items():
                    meas = getattr(p, mk)
                    row[f"replay_{pk}"] = sim[pk]
                    row[f"replay_err_{pk}"] = sim[pk] / meas - 1 if meas else np.nan
            out.append(row)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--glob", default="data/measurements/h200/vllm-0.26.0/*/*/*")
    ap.add_argument("--out")
    a = ap.parse_args()
    paths = sorted(str(Path(p).parent) for p in glob.glob(a.glob + "/points.jsonl"))
    df = pd.DataFrame(rows(paths))
    if a.out:
        df.to_csv(a.out, index=False)
    lines = []
    for kind, g in [("all", df), *df.groupby("kind")]:
        cells = [f"{kind:12s} n={len(g):3d}"]
        for pk in METRICS.values():
            for method in ("closed-form", "simulate", "replay"):
                e = g.get(f"{method}_err_{pk}")
                cells.append(f"{method[:6]} {pk[:4]} {np.nanmean(np.abs(e)) * 100:5.1f}%" if e is not None else "")
        lines.append(" | ".join(cells))
    print("\n".join(lines))
    print(f"simulator time per point: median {df['simulate_s'].median() * 1e3:.0f} ms, max {df['simulate_s'].max():.2f} s")


if __name__ == "__main__":
    main()
