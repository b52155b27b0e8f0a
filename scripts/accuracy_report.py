"""Fit the shipped (vllm, h200-sxm) calibrations from the committed H200 measurements and write
docs/accuracy.md: predicted vs measured for every point, before calibration (--ideal roofline and
literature default factors) and after (fitted on the 128/1024 and 1024/128 shapes, the 512/512 and
2048/256 shapes held out), plus the engine's KV-cache size. Rerun: python scripts/accuracy_report.py"""

from __future__ import annotations

import glob
from pathlib import Path

import numpy as np
import pandas as pd

from capacity import Scenario, estimate
from capacity.calibration import Calibration
from validate.calibrate import calibrate
from validate.compare import compare_dirs, load_run

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data/measurements/h200/vllm-0.26.0"
HOLDOUT = ["512x512", "2048x256"]
OUT_CAL = ROOT / "capacity/calibrations"


def run_dirs() -> list[str]:
    return sorted(str(Path(p).parent) for p in glob.glob(str(DATA / "*/*/*/points.jsonl")) if "/warmup/" not in p)


def pct(x: float) -> str:
    return "" if x is None or not np.isfinite(x) else f"{x * 100:+.0f} %"


def main() -> None:
    dirs = run_dirs()
    cals, reports = {}, {}
    for precision in ("bf16", "fp8"):
        cal, rep = calibrate(dirs, "vllm", "h200-sxm", precision, HOLDOUT,
                             source=f"fitted by scripts/accuracy_report.py on vLLM 0.26.0 / H200 measurements "
                                    f"(data/measurements/h200/vllm-0.26.0), shapes {', '.join(HOLDOUT)} held out")
        cal = cal.model_copy(update={"notes": "Fitted on one H200 SXM with vLLM 0.26.0 defaults. On other GPUs it is an "
                                              "extrapolation: the factors are shares of each GPU's own peaks."})
        (OUT_CAL / f"vllm--h200-sxm--{precision}.json").write_text(cal.model_dump_json(indent=1) + "\n")
        cals[precision], reports[precision] = cal, rep
    from capacity.calibration import shipped_calibrations
    shipped_calibrations.cache_clear()
    df = compare_dirs(dirs, {"ideal": None, "default": Calibration(), "calibrated": None})
    df = df[df["mode"].notna() & df.get("error").isna()] if "error" in df else df
    df["shape"] = df["isl"].astype(str) + "x" + df["osl"].astype(str)
    df["split"] = np.where(df["shape"].isin(HOLDOUT), "held out", "fitted")
    df = df.drop_duplicates(subset=["model", "precision", "shape", "load", "mode", "run"])
    write_doc(df, reports, dirs)


def summary(df: pd.DataFrame) -> str:
    rows = ["| mode | points | split | TTFT MAPE | ITL MAPE | requests/s MAPE | sync ITL max err | burst req/s max err |",
            "|---|---|---|---|---|---|---|---|"]
    for mode in ("ideal", "default", "calibrated"):
        for split in ("fitted", "held out"):
            g = df[(df["mode"] == mode) & (df["split"] == split)]
            if g.empty:
                continue
            sync = g[g["load"] == "sync"]["error_itl_s"].abs().max()
            burst = g[g["load"].str.startswith("burst")]["error_requests_per_s"].abs().max()
            rows.append(f"| {mode} | {len(g)} | {split} | {g['error_ttft_s'].abs().mean() * 100:.0f} % | "
                        f"{g['error_itl_s'].abs().mean() * 100:.0f} % | {g['error_requests_per_s'].abs().mean() * 100:.0f} % | "
                        f"{sync * 100:.0f} % | {burst * 100:.0f} % |")
    return "\n".join(rows)


def kv_table(dirs: list[str]) -> str:
    rows = ["| model | precision | measured (vLLM log) | predicted | error |", "|---|---|---|---|---|"]
    seen = set()
    for d in dirs:
        run = load_run(d)
        key = (run.scenario["model"], run.scenario.get("precision", "bf16"))
        if key in seen or not run.facts.get("kv_cache_tokens"):
            continue
        seen.add(key)
        e = estimate(Scenario(model=key[0], gpu="h200-sxm", precision=key[1], isl=128, osl=128))
        m = run.facts["kv_cache_tokens"]
        rows.append(f"| {key[0]} | {key[1]} | {m:,} | {e.kv_capacity_tokens:,} | {pct(e.kv_capacity_tokens / m - 1)} |")
    return "\n".join(rows)


def point_table(df: pd.DataFrame) -> str:
    piv = df.pivot_table(index=["model", "precision", "shape", "load", "split"], columns="mode",
                         values=["predicted_ttft_s", "predicted_itl_s", "predicted_requests_per_s"], aggfunc="first")
    meas = df[df["mode"] == "calibrated"].set_index(["model", "precision", "shape", "load", "split"])
    rows = ["| model | prec | shape | load | split | TTFT meas | ideal / default / calibrated | ITL meas | ideal / default / calibrated | req/s meas | ideal / default / calibrated |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for idx in meas.index.unique():
        r = meas.loc[[idx]].iloc[0]

        def cell(metric, scale, unit):
            m = r[f"measured_{metric}"]
            preds = [piv.loc[idx, (f"predicted_{metric}", mode)] for mode in ("ideal", "default", "calibrated")]
            return (f"{m * scale:.4g} {unit}", " / ".join(pct(p / m - 1) for p in preds))
        t, i, q = cell("ttft_s", 1e3, "ms"), cell("itl_s", 1e3, "ms"), cell("requests_per_s", 1, "")
        rows.append(f"| {idx[0].split('/')[-1]} | {idx[1]} | {idx[2]} | {idx[3]} | {idx[4]} | {t[0]} | {t[1]} | {i[0]} | {i[1]} | {q[0]} | {q[1]} |")
    return "\n".join(rows)


def write_doc(df: pd.DataFrame, reports: dict, dirs: list[str]) -> None:
    cal_lines = []
    for p, rep in reports.items():
        held = rep["held_out"]
        cal_lines.append(f"- **{p}**: held-out MAPE TTFT {held.get('mape_ttft_s', float('nan')) * 100:.0f} %, "
                         f"ITL {held.get('mape_itl_s', float('nan')) * 100:.0f} %, requests/s "
                         f"{held.get('mape_requests_per_s', float('nan')) * 100:.0f} %; share of held-out measurements inside the "
                         f"90 % interval: TTFT {held.get('coverage_ttft_s', float('nan')) * 100:.0f} %, ITL "
                         f"{held.get('coverage_itl_s', float('nan')) * 100:.0f} %, requests/s {held.get('coverage_requests_per_s', float('nan')) * 100:.0f} %")
    text = f"""# Accuracy: the capacity model against vLLM 0.26.0 on one H200

Generated by `python scripts/accuracy_report.py` from the measurements in
`data/measurements/h200/vllm-0.26.0/` (how they were taken: that folder's README and
[measurement-log.md](measurement-log.md)). Errors are predicted ÷ measured − 1. Modes:
**ideal** = `--ideal` (pure roofline, every efficiency 1, no overheads: an upper bound on speed),
**default** = literature factors before any fitting (`capacity/calibrations/default.json`),
**calibrated** = the shipped `capacity/calibrations/vllm--h200-sxm--{{bf16,fp8}}.json`, fitted on the
128/1024 and 1024/128 shapes only; the 512/512 and 2048/256 shapes are **held out** (never seen by the
fit). Two MoE points are excluded with their reason in `excluded.json` (kernels compiling during the
point). TTFT and ITL are means over requests; requests/s is completed ÷ (last end − first start).

## KV-cache size at start-up (target: within 3 %)

{kv_table(dirs)}

The activation model's two constants come from these logs (the sampler's 2.25 logits-sized buffers
from Llama-3.1-8B and Qwen3-8B, the MoE workspace factor from Qwen3-30B-A3B); Llama-3.1-8B FP8 was not
used to set anything.

## Summary

{summary(df)}

Calibrated, per precision:
{chr(10).join(cal_lines)}

## Every point

{point_table(df)}

## Where the model still misses, and why

- **Bursts, TTFT.** A burst's mean TTFT is mostly queueing for admission; the model admits at the
  steady pace and misses the first wave's faster start and preemption-driven re-admissions
  (128/1024 bursts: the KV cache fills at ~80 % of the outputs and vLLM preempts and recomputes).
- **Short-prompt sync TTFT** (20–30 ms, three requests each) is mostly fixed per-request overhead
  (~19 ms fitted) and scatters by ±5 ms between points; more sync requests next campaign.
- **MoE prefill** runs far below peak (Triton fused MoE without a tuned H200 config: the fitted
  grouped-GEMM efficiency is ~15 % of dense peak); the per-layer MoE overhead is fitted on one model.
- **Large-batch decode** costs ~23 µs per running sequence per step beyond the roofline (fitted
  `sequence_overhead_s`), yet decode at ~1,000 sequences is still ~25 % slower than predicted
  (128/1024 bursts). vLLM's own log during those bursts shows the step growing from ~75 ms to ~100 ms
  as the context grows from ~300 to ~700 tokens: KV reads at ~0.45 of HBM bandwidth at that batch,
  while the concurrency-32 points need ≥ 0.6. One efficiency cannot serve both; the next campaign
  runs a concurrency ladder (64 … 512) to separate attention-kernel efficiency from per-sequence cost
  before the model grows a batch-dependent term.
- **Intervals** come from the spread of the fitted points' residuals (5th–95th percentile, pooled
  over load kinds); with this few points they are too narrow for TTFT.
"""
    (ROOT / "docs/accuracy.md").write_text(text)
    print(text[:3000])


if __name__ == "__main__":
    main()
