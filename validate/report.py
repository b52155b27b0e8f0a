"""`validate compare` and `validate calibrate`: the capacity model held against measured folders.

compare writes a markdown report (every point: measured, predicted, error, binding bound, measured
cost per million tokens) and, beside it, an HTML page of altair charts: predicted vs measured per
metric, and throughput vs latency with the measured points and the predicted curve.
calibrate fits the efficiency factors and writes the calibration file `capacity` reads.
These import the capacity model (numpy, pandas, sympy, altair): only when called.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from capacity.argtypes import float_in, output_file, output_folder
from validate.errors import UsageError

PRECISIONS = ("bf16", "fp8", "nvfp4", "mxfp4", "int4", "any")


def measured_cost(df, price_override: float | None):
    """$/M output and total tokens from measured throughput, whole GPU cost charged to each class."""
    from capacity.cost import usd_per_million_tokens
    from capacity.errors import CapacityError
    from capacity.hardware import load_gpu

    out, tot = [], []
    for _, r in df.iterrows():
        try:
            price = price_override or load_gpu(r["gpu"]).price_usd_per_gpu_hour
        except CapacityError:  # an unknown GPU id in an imported file: no price
            price = None
        hourly = price * r.get("tp", 1) if price else None
        m_out = r.get("measured_output_tokens_per_s")
        rps = r.get("measured_requests_per_s")
        out.append(usd_per_million_tokens(hourly, m_out) if m_out else None)
        tot.append(usd_per_million_tokens(hourly, rps * (r["isl"] + r["osl"])) if rps else None)
    return out, tot


def _markdown(df, summary) -> str:
    cols = ["model", "precision", "tp", "isl", "osl", "load", "measured_ttft_s", "predicted_ttft_s", "error_ttft_s",
            "measured_itl_s", "predicted_itl_s", "error_itl_s", "measured_requests_per_s", "predicted_requests_per_s",
            "error_requests_per_s", "decode_bound", "measured_usd_per_million_output_tokens"]
    cal = df[df["mode"] == "calibrated"][[c for c in cols if c in df]]
    lines = ["# Measured vs predicted", "", "Errors are predicted ÷ measured − 1.", "", "## Summary (mean absolute error)", "",
             summary.to_markdown(index=False, floatfmt=".3f"), "", "## Every point (calibrated model)", "",
             cal.to_markdown(index=False, floatfmt=".4g")]
    told = df[df["mode"] == "calibrated"]
    told = told[(told.get("telemetry", "") != "") | (told.get("flags", "") != "")] if "telemetry" in told else told.iloc[:0]
    if len(told):
        lines += ["", "## What the engine's counters say (its /metrics during each point; GPU power where measured)", "",
                  "A flag is a point whose counters or roofline contradict its workload: it did not run the traffic "
                  "it was meant to, so its error says little about the model.", "",
                  told[["model", "isl", "osl", "load", "telemetry", "flags"]].to_markdown(index=False)]
    return "\n".join(lines) + "\n"


def _charts(df, path: Path) -> None:
    import altair as alt

    cal = df[df["mode"] == "calibrated"].copy()
    cal["config"] = cal["model"].str.split("/").str[-1] + " " + cal["precision"] + " " + cal["isl"].astype(str) + "x" + cal["osl"].astype(str)
    charts = []
    for metric, title in (("ttft_s", "TTFT (s)"), ("itl_s", "ITL (s)"), ("requests_per_s", "requests/s")):
        base = alt.Chart(cal).encode(
            x=alt.X(f"measured_{metric}:Q", scale=alt.Scale(type="log"), title=f"measured {title}"),
            y=alt.Y(f"predicted_{metric}:Q", scale=alt.Scale(type="log"), title=f"predicted {title}"))
        pts = base.mark_circle(size=60).encode(color="config:N", tooltip=["config", "load", f"error_{metric}"])
        lo, hi = cal[[f"measured_{metric}", f"predicted_{metric}"]].min().min(), cal[[f"measured_{metric}", f"predicted_{metric}"]].max().max()
        diag = alt.Chart(alt.Data(values=[{"v": lo}, {"v": hi}])).mark_line(color="gray", strokeDash=[4, 4]).encode(x="v:Q", y="v:Q")
        charts.append((pts + diag).properties(width=300, height=300, title=f"{title}: predicted vs measured"))
    long = cal.melt(id_vars=["config", "load"], value_vars=["measured_output_tokens_per_s", "predicted_output_tokens_per_s"],
                    var_name="kind", value_name="output_tokens_per_s")
    long["itl_s"] = cal.melt(id_vars=["config"], value_vars=["measured_itl_s", "predicted_itl_s"])["value"].values
    long["kind"] = long["kind"].str.split("_").str[0]
    curve = alt.Chart(long).mark_line(point=True).encode(
        x=alt.X("output_tokens_per_s:Q", title="output tokens/s"), y=alt.Y("itl_s:Q", scale=alt.Scale(type="log"), title="mean ITL (s)"),
        color="config:N", strokeDash="kind:N", tooltip=["config", "load", "kind"]).properties(
        width=620, height=320, title="throughput vs latency: measured and predicted")
    alt.vconcat(alt.hconcat(*charts), curve).save(str(path))


def compare_command(args: argparse.Namespace) -> int:
    from capacity.calibration import Calibration
    from capacity.calibration import parse_calibration_file
    from validate.compare import compare_dirs, summarize

    cal = parse_calibration_file(args.calibration) if args.calibration else None
    df = compare_dirs(args.dirs, {"ideal": None, "default": Calibration(), "calibrated": cal})
    if df.empty:
        raise UsageError("no measured points in the given folders")
    if "error" in df:
        bad = df[df["error"].notna()].drop_duplicates(subset=["run", "load", "error"])
        df = df[df["error"].isna()]
        if df.empty:  # the error is the one line: the first reason and how many there were
            r = bad.iloc[0]
            raise UsageError(f"the model could predict none of the measured points ({len(bad)} reasons; first: "
                             f"{r['run']} {r['load']}: {' '.join(str(r['error']).split())})")
        for _, r in bad.iterrows():
            print(f"cannot predict {r['run']} {r['load']}: {' '.join(str(r['error']).split())}", file=sys.stderr)
    out_cost, tot_cost = measured_cost(df, args.price_usd_per_gpu_hour)
    df = df.assign(measured_usd_per_million_output_tokens=out_cost, measured_usd_per_million_total_tokens=tot_cost)
    summary = summarize(df)
    print(summary.to_string(index=False))
    if args.report:
        report = Path(args.report)
        report.write_text(_markdown(df, summary))
        _charts(df, report.with_suffix(".html"))
        df.to_csv(report.with_suffix(".csv"), index=False)
        print(f"wrote {report}, {report.with_suffix('.html')} and {report.with_suffix('.csv')}")
    return 0


def calibrate_command(args: argparse.Namespace) -> int:
    from validate.calibrate import calibrate

    if args.public_plan:
        from validate.public.fit import run_plan

        if args.dirs:
            raise UsageError("--public-plan fits the committed public corpus: give no results folders")
        cals = run_plan(args.public_plan, args.out_dir)
        print(f"wrote {len(cals)} calibrations: " + ", ".join(f"{c.engine}--{c.gpu}--{c.precision}" for c in cals))
        return 0
    if args.plan:
        from validate.calibration_plan import CALIBRATIONS, run_measured_plan

        if args.dirs:
            raise UsageError("--plan names its results folders itself: give none")
        cals, reports = run_measured_plan(args.plan, args.out_dir or CALIBRATIONS)
        print(json.dumps(reports, indent=1))
        print(f"wrote {len(cals)} calibrations: " + ", ".join(f"{c.engine}--{c.gpu}--{c.precision}" for c in cals.values()))
        return 0
    if not args.dirs or not args.out or not args.gpu:
        raise UsageError("calibrate needs results folders, --out and --gpu (or --plan PLAN, or --public-plan PLAN)")
    if args.precision not in PRECISIONS:
        raise UsageError(f"--precision must be one of {', '.join(PRECISIONS)}")
    holdout = args.holdout.split(",") if args.holdout else None
    cal, report = calibrate(args.dirs, args.engine, args.gpu, args.precision, holdout)
    Path(args.out).write_text(cal.model_dump_json(indent=1) + "\n")
    print(json.dumps(report, indent=1))
    print(f"wrote {args.out} (fitted on {len(cal.fitted_on)} points, {len(cal.held_out)} held out)")
    return 0


_price = float_in(0, 1e6, lo_open=True, hi_open=True, what="US dollars per GPU-hour")


def add_parsers(sub) -> None:
    c = sub.add_parser("compare", help="the capacity model's prediction for every measured point")
    c.add_argument("dirs", nargs="+", help="results folders (validate --out)")
    c.add_argument("--report", type=output_file, help="write PATH (markdown), PATH.html (charts) and PATH.csv")
    c.add_argument("--calibration", help="calibration file for the 'calibrated' mode (default: the shipped one)")
    c.add_argument("--price-usd-per-gpu-hour", type=_price, help="for measured cost (default: the GPU spec's price)")
    c.set_defaults(func=compare_command)
    k = sub.add_parser("calibrate", help="fit efficiency factors to measured points, report held-out error")
    k.add_argument("dirs", nargs="*")
    k.add_argument("--out", type=output_file, help="calibration JSON to write")
    k.add_argument("--engine", default="vllm")
    k.add_argument("--gpu", help="GPU id the points were measured on")
    k.add_argument("--plan", help="fit the committed measurements as this plan declares "
                                  "(data/measurements/h200/calibration-plan.toml)")
    k.add_argument("--public-plan", help="fit the public corpus as this plan declares (data/public/calibration-plan.toml)")
    k.add_argument("--out-dir", type=output_folder, help="--plan, --public-plan: where the calibrations go (default: capacity/calibrations)")
    k.add_argument("--precision", default="bf16")
    k.add_argument("--holdout", help="comma-separated shapes to hold out, e.g. 512x512,2048x256 (default: every third)")
    k.set_defaults(func=calibrate_command)
