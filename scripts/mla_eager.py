"""Set `eager_mla_layer_overhead_s` (capacity/calibration.py's default) from the points the calibration plan names for
it (data/measurements/h200/calibration-plan.toml, its [[constant]] of that name), every other parameter at its shipped
value, as docs/measurement-log.md declares (2026-12-04, "an MLA layer's op-by-op launch").

    .venv/bin/python scripts/mla_eager.py

One parameter, least squares on log(predicted ÷ measured TTFT) over those sync points; prints the value and each
point's error before (0) and after. The plan's other points of the same servers are printed, never fitted.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from capacity.estimate import calibration_for, estimate_with_calibration, plan_for  # noqa: E402
from validate.calibration_plan import PLAN_PATH, data_dir, load_measured_plan, trains_on  # noqa: E402
from validate.compare import load_run, point_scenario  # noqa: E402

NAME = "eager_mla_layer_overhead_s"
GRID_S = np.linspace(0.0, 5e-3, 501)  # 10 µs steps up to the bound validate/calibrate.py allows


def lone_prompts():
    """(isl, scenario, measured TTFT s, set by it?) of every sync point of the servers the plan names for NAME."""
    plan = load_measured_plan(PLAN_PATH)
    const = next(c for c in plan.constant if c.name == NAME)
    servers = sorted({"/".join(r.split("/")[:2]) for r in const.runs})
    for server in servers:
        for points in sorted((data_dir(PLAN_PATH, const) / server).glob("*/points.jsonl")):
            run = load_run(points.parent)
            for p in run.points:
                if p.load == "sync" and p.mean_ttft_s:
                    s = point_scenario(run, p)
                    fitted = trains_on(PLAN_PATH, points.parent, const.engine, const.precision, 1, p.load, plan)
                    yield s.isl, s, p.mean_ttft_s, fitted


def ttft_with(s, value: float) -> float:
    cal = calibration_for(s, plan_for(s))
    cal = cal.model_copy(update={"efficiency": cal.efficiency.model_copy(update={NAME: value})})
    return estimate_with_calibration(s, cal).ttft_s


def main() -> None:
    pts = sorted(lone_prompts(), key=lambda x: x[0])
    fit = [(s, m) for _, s, m, fitted in pts if fitted]
    loss = [sum(math.log(ttft_with(s, v) / m) ** 2 for s, m in fit) for v in GRID_S]
    best = float(GRID_S[int(np.argmin(loss))])
    print(f"{NAME} = {best:.2e} s ({len(fit)} points)")
    for isl, s, m, fitted in pts:
        before, after = ttft_with(s, 0.0), ttft_with(s, best)
        print(f"  {isl:5d} tokens {'set it' if fitted else 'scored':6s} measured {m * 1e3:6.1f} ms  "
              f"before {before / m - 1:+6.1%}  after {after / m - 1:+6.1%}")


if __name__ == "__main__":
    main()
