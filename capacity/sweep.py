"""Vectorized grids: every combination of lengths and load values computed in one numpy pass per
(model, GPU, precision, TP) plan."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from capacity.argtypes import LENGTH_MAX_TOKENS
from capacity.errors import CapacityError, WorkloadError
from capacity.estimate import Scenario, calibration_for, plan_for, run_load
from capacity.model.formulas import compiled


def sweep_grid(models: list[str], gpus: list[str], precisions: list[str], isls: list[int], osls: list[int],
               load_kind: str, load_values: list[float], tps: list[int] = (1,), kv_precision: str = "bf16",
               engine: str = "vllm", ideal: bool = False, price_usd_per_gpu_hour: float | None = None,
               options: dict | None = None) -> pd.DataFrame:
    """Every (model, GPU, precision, TP) × lengths × load values. `options`: any other Scenario fields (engine
    limits, expert parallel, calibration file, prefix hit rate), applied to every row as `capacity estimate`
    applies them: each row equals the estimate of its scenario."""
    _check_grid(isls, osls, load_values, tps)
    frames = []
    for model_id, gpu_id, precision, tp in itertools.product(models, gpus, precisions, tps):
        base = Scenario(model=model_id, gpu=gpu_id, precision=precision, tp=tp, num_gpus=tp, kv_precision=kv_precision,
                        engine=engine, ideal=ideal, price_usd_per_gpu_hour=price_usd_per_gpu_hour, isl=1, osl=1,
                        **(options or {}))
        frames.append(_one_plan(base, isls, osls, load_kind, load_values))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _check_grid(isls, osls, load_values, tps) -> None:
    """Lengths, TP sizes and load values a grid may hold (the CLI names the flag; this guards other callers)."""
    for name, values, lo, hi in (("isls", isls, 1, LENGTH_MAX_TOKENS), ("osls", osls, 1, LENGTH_MAX_TOKENS), ("tps", tps, 1, 1024)):
        if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi for v in values):
            raise WorkloadError(f"{name}: expected whole numbers from {lo} to {hi:,}, got {list(values)[:10]!r}")
    if any(not (math.isfinite(v) and v > 0) for v in load_values):
        raise WorkloadError(f"load_values: expected positive finite numbers, got {list(load_values)[:10]!r}")


def _one_plan(s: Scenario, isls, osls, load_kind, load_values) -> pd.DataFrame:
    """One plan (`plan_for`, as `capacity estimate` builds it; the lengths only decide which rows fit) and its
    calibration, and the load model over every length and load value of the grid in one numpy pass."""
    I, O, V = (a.ravel() for a in np.meshgrid(np.asarray(isls, float), np.asarray(osls, float),
                                                np.asarray(load_values, float), indexing="ij"))
    base = {"model": s.model, "gpu": s.gpu, "precision": s.precision, "tp": s.tp, "isl": I, "osl": O,
            "load_kind": load_kind, "load_value": V}
    try:
        plan = plan_for(s)
    except CapacityError as exc:  # this combination does not run (the row says why); others may
        return pd.DataFrame({**base, "fits": False, "error": str(exc)})
    cal = calibration_for(s, plan)  # a bad --calibration file stops the sweep
    gpu, price = plan.gpu, s.price_usd_per_gpu_hour
    r = run_load(plan, cal, s, I, O, load_kind, V)
    fits = np.asarray(plan.max_concurrent(I + O)) >= 1
    hourly = (price or gpu.price_usd_per_gpu_hour or np.nan) * s.num_gpus
    usd = compiled("usd_per_million_tokens")
    out_tps = np.where(fits, r.output_tokens_per_s, np.nan)
    tot_tps = np.where(fits, r.total_tokens_per_s, np.nan)
    return pd.DataFrame({
        **base, "fits": fits, "error": "",
        "weight_format": plan.weight_format,
        "kv_capacity_tokens": plan.memory.kv_capacity_tokens,
        "max_concurrent_requests": plan.max_concurrent(I + O),
        "ttft_s": np.where(fits, r.ttft_s, np.nan), "itl_s": np.where(fits, r.itl_s, np.nan),
        "e2e_latency_s": np.where(fits, r.e2e_latency_s, np.nan),
        "requests_per_s": np.where(fits, r.requests_per_s, np.nan),
        "output_tokens_per_s": out_tps, "total_tokens_per_s": tot_tps,
        "usd_per_million_output_tokens": usd(hourly, out_tps),
        "usd_per_million_total_tokens": usd(hourly, tot_tps),
    })
