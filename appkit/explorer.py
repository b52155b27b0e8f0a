"""The explorer: every measured result ranked, per configuration its best load point within the latency objectives.
Pure functions over appkit.measured.runs_table's rows (no Streamlit), times in seconds."""

from __future__ import annotations

import numpy as np
import pandas as pd

from capacity.hardware import gpu_catalog


def latency_column(df: pd.DataFrame, metric: str, stat: str) -> pd.Series:
    """`stat`_`metric`_s, falling back to the median then the mean where a file lacks the percentile."""
    out = pd.Series(np.nan, index=df.index, dtype=float)
    for s in (stat, "median", "mean"):
        col = f"{s}_{metric}_s"
        if col in df:
            out = out.fillna(pd.to_numeric(df[col], errors="coerce"))
    return out


def best_configurations(df: pd.DataFrame, ttft_objective_s: float | None, itl_objective_s: float | None = None,
                        stat: str = "p90") -> pd.DataFrame:
    """Per configuration, the measured load point with the most output tokens/s per GPU whose TTFT (and ITL)
    `stat` meets the objectives; best first (the Modal Almanac advisor's ranking)."""
    if df.empty:
        return pd.DataFrame()
    d = df.copy()
    d["ttft_s"] = latency_column(d, "ttft", stat)
    d["itl_s"] = latency_column(d, "itl", stat)
    ok = pd.Series(True, index=d.index)
    if ttft_objective_s:
        ok &= d["ttft_s"] <= ttft_objective_s
    if itl_objective_s:
        ok &= d["itl_s"] <= itl_objective_s
    ok &= d["completed"].fillna(1) > 0
    d = d[ok]
    if d.empty:
        return pd.DataFrame()
    d["output_tokens_per_s_per_gpu"] = d["output_tokens_per_s"] / d["num_gpus"].clip(lower=1)
    prices = {g.id: g.price_usd_per_gpu_hour for g in gpu_catalog().values()}
    hourly = d["gpu"].map(prices).astype(float) * d["num_gpus"]
    d["usd_per_million_output_tokens"] = hourly / (d["output_tokens_per_s"] * 3600) * 1e6
    keys = ["model", "gpu", "num_gpus", "tp", "engine", "engine_version", "precision", "kv_precision", "shape", "source"]
    best = d.sort_values("output_tokens_per_s_per_gpu", ascending=False).groupby(keys, dropna=False, sort=False).head(1)
    best = best.sort_values("output_tokens_per_s_per_gpu", ascending=False).reset_index(drop=True)
    cols = ["model", "gpu", "num_gpus", "engine", "engine_version", "precision", "kv_precision", "shape", "load",
            "output_tokens_per_s_per_gpu", "output_tokens_per_s", "requests_per_s", "ttft_s", "itl_s",
            "usd_per_million_output_tokens", "origin", "source"]
    return best[[c for c in cols if c in best]]
