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
from capacity.estimate import estimate  # noqa: E402
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
            for method in ("closed-form", "simulate"):
                e = g.get(f"{method}_err_{pk}")
                cells.append(f"{method[:6]} {pk[:4]} {np.nanmean(np.abs(e)) * 100:5.1f}%" if e is not None else "")
        lines.append(" | ".join(cells))
    print("\n".join(lines))
    print(f"simulator time per point: median {df['simulate_s'].median() * 1e3:.0f} ms, max {df['simulate_s'].max():.2f} s")


if __name__ == "__main__":
    main()
