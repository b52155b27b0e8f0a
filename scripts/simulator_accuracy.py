"""Closed forms against the step simulator on every committed vLLM measurement, and sitting 7's predictions
made before it ran against what it measured: writes docs/load-model.md (tests/test_load_model_doc.py fails
when the doc drifts from the data and the shipped calibrations).

Three predictions per point, all with the shipped calibration (fitted on the training split of
docs/accuracy.md; nothing here is fitted): the closed forms, the simulator drawing its own arrivals and
lengths from the run's workload, and the simulator replaying what the run really sent (a rate point's send
times and lengths, a closed loop's lengths in order), which removes the sample noise of a finite test.

    python scripts/simulator_accuracy.py [--out every-point.csv] [--doc docs/load-model.md]
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
from capacity.estimate import calibration_for, estimate, plan_for, simulation_setup  # noqa: E402
from capacity.loadmodel.simulate import simulate  # noqa: E402
from validate.calibration_plan import PLAN_PATH, load_measured_plan, trains_on  # noqa: E402
from validate.compare import load_run, point_scenario, recorded_requests  # noqa: E402

METRICS = {"mean_ttft_s": "ttft_s", "mean_itl_s": "itl_s", "requests_per_s": "requests_per_s"}


def replay_options(run_dir: Path, load: str) -> dict | None:
    """Replay what was sent: a rate point's send times and lengths (trace), a closed loop's lengths in order."""
    df = recorded_requests(run_dir, load)
    if df is None or df["input_tokens"].isna().any():
        return None
    lengths = {"trace_isl": tuple(int(x) for x in df["input_tokens"]), "trace_osl": tuple(int(x) for x in df["output_tokens"])}
    if load.startswith("rate"):
        return {"trace_send_s": tuple(float(x) for x in df["start_s"]), **lengths}
    if load.startswith("concurrency"):
        return lengths
    return None


def ttft_key(scenario, load: str) -> str:
    """What the model is given to predict a point's TTFT: its scenario, less the seed, and for a lone request less
    the request count and output length (neither changes a lone prompt's TTFT). Points with one key get one
    prediction, whatever server or round measured them."""
    s = scenario.model_dump(exclude={"seed"})
    if load.startswith("sync"):
        s.pop("num_requests", None)
        s.pop("osl", None)
        s["load"] = "sync"
    return json.dumps(s, sort_keys=True, default=str)


def rows(paths: list[str]) -> list[dict]:
    out = []
    measured_plan = load_measured_plan(PLAN_PATH)  # read once: every point asks it whether a fit trains on it
    for path in paths:
        try:
            run = load_run(ROOT / path)
        except Exception as exc:  # a folder that is not a run: say so and go on
            print(f"skip {path}: {exc}", file=sys.stderr)
            continue
        if run.scenario.get("engine") not in (None, "vllm"):
            continue
        for p in run.points:
            if not p.completed:
                continue
            scenario = point_scenario(run, p)  # the run's length spread and arrivals come with it
            row = {"run": path, "load": p.load, "kind": p.load.split(":")[0], "ttft_key": ttft_key(scenario, p.load),
                   "split": "fitted" if trains_on(PLAN_PATH, ROOT / path, "vllm", run.scenario.get("precision", "bf16"),
                                                  int(run.scenario.get("tp", 1)), p.load, measured_plan) else "held out"}
            for method in ("closed-form", "simulate"):
                try:
                    t0 = time.perf_counter()
                    e = estimate(scenario.model_copy(update={"method": method}))
                    row[f"{method}_s"] = time.perf_counter() - t0
                except CapacityError as exc:
                    row[f"{method}_error"] = str(exc)
                    continue
                for mk, pk in METRICS.items():
                    meas = getattr(p, mk)
                    row[f"measured_{pk}"] = meas
                    row[f"{method}_{pk}"] = getattr(e, pk)
                    row[f"{method}_err_{pk}"] = getattr(e, pk) / meas - 1 if meas else np.nan
            replay = replay_options(ROOT / path, p.load)
            if replay is not None:  # the simulator fed with what was really sent
                s = scenario
                plan = plan_for(s)
                value = float(p.load.split(":")[1]) if ":" in p.load else 1.0
                try:
                    setup = simulation_setup(plan, calibration_for(s, plan), s, p.load.split(":")[0], value,
                                             len(replay["trace_isl"]), replay)
                except CapacityError:  # a scenario the simulator refuses (it says why)
                    out.append(row)
                    continue
                sim = simulate(*setup, s.isl, s.osl).summary()
                for mk, pk in METRICS.items():
                    meas = getattr(p, mk)
                    row[f"replay_{pk}"] = sim[pk]
                    row[f"replay_err_{pk}"] = sim[pk] / meas - 1 if meas else np.nan
            out.append(row)
    return out


ROOT = Path(__file__).resolve().parents[1]
DATA = "data/measurements/h200/vllm-0.26.0"
BEFORE = "data/predictions/h200-vllm-0.26.0-load-regimes-s7.before.jsonl"
SITTING = "sitting-7"
NAMES = {"ttft_s": "TTFT", "itl_s": "ITL", "requests_per_s": "req/s"}


def pct(x: float) -> str:
    return "–" if x is None or not np.isfinite(x) else f"{x * 100:+.0f} %"


def mape(series) -> str:
    v = np.abs(np.asarray(series, dtype=float))
    v = v[np.isfinite(v)]
    return f"{v.mean() * 100:.1f} %" if len(v) else "–"


def summary_table(df: pd.DataFrame) -> list[str]:
    head = "| load kind | points | " + " | ".join(f"{NAMES[pk]} closed / sim / replay" for pk in METRICS.values()) + " |"
    lines = [head, "|" + "---|" * (2 + len(METRICS))]
    for kind, g in [("all", df), *df.groupby("kind")]:
        cells = [" / ".join(mape(g[f"{m}_err_{pk}"]) if f"{m}_err_{pk}" in g else "–"
                            for m in ("closed-form", "simulate", "replay")) for pk in METRICS.values()]
        lines.append(f"| {kind} | {len(g)} | " + " | ".join(cells) + " |")
    return lines


def quantiles(series) -> str:
    v = np.abs(np.asarray(series, dtype=float))
    v = v[np.isfinite(v)]
    if not len(v):
        return "–"
    return " / ".join(f"{x * 100:.1f}" for x in (np.median(v), np.quantile(v, 0.9), v.max())) + " %"


def heldout_table(df: pd.DataFrame) -> list[str]:
    """The simulator on the points no fit of the calibration plan trains on: median / 90th percentile / worst."""
    held = df[df["split"] == "held out"]
    head = "| load kind | points | " + " | ".join(f"{NAMES[pk]} median / p90 / worst" for pk in METRICS.values()) + " |"
    lines = [head, "|" + "---|" * (2 + len(METRICS))]
    for kind, g in held.groupby("kind"):
        cells = [quantiles(g[f"simulate_err_{pk}"]) for pk in METRICS.values()]
        lines.append(f"| {kind} | {len(g)} | " + " | ".join(cells) + " |")
    return lines


def least_worst(values) -> float:
    """The smallest worst-case |predicted ÷ measured − 1| one prediction can have over these measurements:
    (max − min) ÷ (max + min), reached at the prediction 2·min·max ÷ (min + max)."""
    lo, hi = float(np.min(values)), float(np.max(values))
    return (hi - lo) / (hi + lo)


def repeats_table(df: pd.DataFrame) -> tuple[list[str], int, int]:
    """Points measured more than once (same TTFT key, other servers or rounds): how far apart they came and the least
    worst-case TTFT error any prediction from the scenario can have on them. Returns (lines, groups, groups > 30 %)."""
    lines = ["| first run | load | points (servers) | measured TTFT, ms | least worst error | simulator's worst |",
             "|---|---|---|---|---|---|"]
    groups = []
    for _, g in df.groupby("ttft_key"):
        if len(g) < 2:
            continue
        groups.append((least_worst(g["measured_ttft_s"]), g))
    over = 0
    for lw, g in sorted(groups, key=lambda x: -x[0]):
        over += lw > WORST_TARGET
        ms = ", ".join(f"{x * 1e3:.0f}" for x in sorted(g["measured_ttft_s"]))
        worst = np.nanmax(np.abs(g["simulate_err_ttft_s"].to_numpy(float)))
        lines.append(f"| {'/'.join(g['run'].iloc[0].split('/')[-3:])} | {g['load'].iloc[0].split(':')[0]} | "
                     f"{len(g)} ({g['run'].nunique()}) | {ms} | {lw * 100:.0f} % | {worst * 100:.0f} % |")
    return lines, len(groups), over


WORST_TARGET = 0.30  # issue 16's worst-case TTFT target on held-out points


def before_table(df: pd.DataFrame) -> list[str]:
    """Sitting 7: what each load model said before it ran (the committed predictions) and what it says now."""
    pred = [json.loads(x) for x in (ROOT / BEFORE).read_text().splitlines() if x.strip()]
    by = {(p["run"], p["load"], p["method"]): p for p in pred}
    lines = ["| run | load | measured TTFT / ITL / req/s | before: closed forms | before: simulator | now: simulator | now: replay |",
             "|---|---|---|---|---|---|---|"]
    for _, r in df[df["run"].str.contains(f"/{SITTING}/")].iterrows():
        key = "/".join(r["run"].split("/")[-2:])
        meas = f"{r['measured_ttft_s'] * 1e3:.0f} ms / {r['measured_itl_s'] * 1e3:.1f} ms / {r['measured_requests_per_s']:.2f}"

        def errs(p: dict | None) -> str:
            if not p or p.get("error"):
                return "–"
            return " / ".join(pct(p[pk] / r[f"measured_{pk}"] - 1) for pk in METRICS.values())

        now = " / ".join(pct(r[f"simulate_err_{pk}"]) for pk in METRICS.values())
        rep = " / ".join(pct(r.get(f"replay_err_{pk}", np.nan)) for pk in METRICS.values())
        lines.append(f"| {key} | {r['load']} | {meas} | {errs(by.get((key, r['load'], 'closed-form')))} | "
                     f"{errs(by.get((key, r['load'], 'simulate')))} | {now} | {rep} |")
    return lines


def render(df: pd.DataFrame) -> str:
    rep_lines, rep_n, rep_over = repeats_table(df)
    s7 = df[df["run"].str.contains(f"/{SITTING}/")]
    llama = s7[s7["run"].str.contains("Llama")]
    moe = s7[s7["run"].str.contains("A3B")]
    lines = [
        "# Load model: closed forms and the step simulator",
        "",
        "Generated by `python scripts/simulator_accuracy.py --doc docs/load-model.md` from the committed vLLM 0.26.0",
        "measurements on one H200 and the shipped calibrations; `tests/test_load_model_doc.py` fails when it drifts.",
        "Errors are predicted ÷ measured − 1; tables give mean absolute errors.",
        "",
        "Three predictions per point, all with the shipped calibration (fitted with the closed forms on the training",
        "split of [accuracy.md](accuracy.md); nothing is refitted here):",
        "- **closed**: the closed forms of `capacity/loadmodel/workload.py` (lockstep waves, steady state, M/D/1 queueing);",
        "- **sim**: the step simulator (`capacity/loadmodel/simulate.py`, `capacity simulate`) drawing arrivals and",
        "  lengths from the run's workload (`--length-dist`, `--arrivals`, `--seed`) as validate draws them",
        "  (capacity/loads/draws.py): the same gaps for every committed rate point, the same lengths for runs from",
        "  2026-12-04 (earlier runs drew theirs interleaved with the prompts' token ids: another sample);",
        "- **replay**: the simulator fed what the run really sent (a rate point's send times and lengths, a closed",
        "  loop's lengths in order), which removes the sample noise of a finite test.",
        "",
        "## Every committed point",
        "",
        "Except the points `data/measurements/h200/vllm-0.26.0/excluded.json` lists with their reason (kernels compiling",
        "while the point was timed; decode faster than its roofline under random dummy routing): `validate compare`",
        "leaves them out, as in accuracy.md.",
        "",
        *summary_table(df),
        "",
        f"Simulator time per point: median {df['simulate_s'].median() * 1e3:.0f} ms, worst {df['simulate_s'].max():.2f} s"
        " (this machine, while other work ran).",
        "",
        "## Held-out points (the simulator)",
        "",
        "Points no fit of `data/measurements/h200/calibration-plan.toml` trains on (held-out shapes, runs and",
        "sittings the plan does not name, other precisions, TP > 1): |error| of the simulator's prediction.",
        "",
        *heldout_table(df),
        "",
        "## Repeats: how close any prediction can come",
        "",
        "Points measured more than once with the same scenario (so the model, which has no input for the host's",
        "speed at the time, gives them one prediction) on other servers or rounds. The least worst error is the",
        "smallest worst-case |error| any single prediction can have on the group: (max − min) ÷ (max + min).",
        f"{rep_over} of {rep_n} groups are above {WORST_TARGET * 100:.0f} %: on those no prediction from the scenario can meet",
        "a 30 % worst case, so a worst-case TTFT target of 30 % over every held-out point is unreachable on these",
        "measurements by any model without a host-speed input (the vCPUs' speed changes within seconds, sitting 25).",
        "",
        *rep_lines,
        "",
        "## Sitting 7: long closed loops and Poisson arrivals with length spreads (never fitted)",
        "",
        f"Predicted before the run (`{BEFORE}`). The file records HEAD {json.loads((ROOT / BEFORE).read_text().splitlines()[0])['predicted_at_commit']},"
        " but the simulator that made its `simulate` rows was still uncommitted then: it was committed together with",
        "the predictions as 7905cb3, which is also the tree that ran on the device. The model changed once after the",
        "run (eager launches add to the step instead of flooring it, refitted on the training split, which does not",
        "include sitting 7). Each cell: TTFT / ITL / req/s.",
        "",
        *before_table(df),
        "",
        f"Held out, now, with replay: Llama-3.1-8B TTFT {mape(llama['replay_err_ttft_s'])}, ITL {mape(llama['replay_err_itl_s'])},"
        f" req/s {mape(llama['replay_err_requests_per_s'])} (mean absolute, {len(llama)} points); Qwen3-30B-A3B TTFT"
        f" {mape(moe['replay_err_ttft_s'])}, ITL {mape(moe['replay_err_itl_s'])}, req/s {mape(moe['replay_err_requests_per_s'])}"
        f" ({len(moe)} points).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--glob", default=f"{DATA}/*/*/*")
    ap.add_argument("--out", help="every point as CSV")
    ap.add_argument("--doc", help="write the markdown report here")
    a = ap.parse_args()
    paths = sorted(str(Path(p).parent.relative_to(ROOT)) for p in glob.glob(str(ROOT / a.glob) + "/points.jsonl"))
    df = pd.DataFrame(rows(paths))
    if a.out:
        df.to_csv(a.out, index=False)
    if a.doc:
        Path(a.doc).write_text(render(df))
    print("\n".join(summary_table(df) + [""] + heldout_table(df)))


if __name__ == "__main__":
    main()
