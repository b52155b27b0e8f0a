"""Vectorized grids: every combination of lengths and load values computed in one numpy pass per
(model, GPU, precision, TP) plan."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from capacity.architecture import load_model
from capacity.calibration import IDEAL, find_calibration
from capacity.engine import engine_profile
from capacity.errors import CapacityError, WorkloadError
from capacity.estimate import Scenario, run_load
from capacity.formulas import compiled
from capacity.hardware import load_gpu
from capacity.plan import make_plan


def sweep_grid(models: list[str], gpus: list[str], precisions: list[str], isls: list[int], osls: list[int],
               load_kind: str, load_values: list[float], tps: list[int] = (1,), kv_precision: str = "bf16",
               engine: str = "vllm", ideal: bool = False, price_usd_per_gpu_hour: float | None = None) -> pd.DataFrame:
    _check_grid(isls, osls, load_values, tps)
    frames = []
    for model_id, gpu_id, precision, tp in itertools.product(models, gpus, precisions, tps):
        frames.append(_one_plan(model_id, gpu_id, precision, tp, isls, osls, load_kind, load_values,
                                kv_precision, engine, ideal, price_usd_per_gpu_hour))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _check_grid(isls, osls, load_values, tps) -> None:
    """Lengths, TP sizes and load values a grid may hold (the CLI names the flag; this guards other callers)."""
    for name, values, lo, hi in (("isls", isls, 1, 10_000_000), ("osls", osls, 1, 10_000_000), ("tps", tps, 1, 1024)):
        if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi for v in values):
            raise WorkloadError(f"{name}: expected whole numbers from {lo} to {hi:,}, got {list(values)[:10]!r}")
    if any(not (math.isfinite(v) and v > 0) for v in load_values):
        raise WorkloadError(f"load_values: expected positive finite numbers, got {list(load_values)[:10]!r}")


def _one_plan(model_id, gpu_id, precision, tp, isls, osls, load_kind, load_values, kv_precision, engine, ideal, price):
    I, O, V = (a.ravel() for a in np.meshgrid(np.asarray(isls, float), np.asarray(osls, float),
                                                np.asarray(load_values, float), indexing="ij"))
    base = {"model": model_id, "gpu": gpu_id, "precision": precision, "tp": tp, "isl": I, "osl": O,
            "load_kind": load_kind, "load_value": V}
    try:
        model, gpu = load_model(model_id), load_gpu(gpu_id)
        plan = make_plan(model, gpu, precision, kv_precision, engine_profile(engine, gpu.usable_memory_bytes, tp), tp, tp)
    except CapacityError as exc:
        return pd.DataFrame({**base, "fits": False, "error": str(exc)})
    cal = IDEAL if ideal else find_calibration(engine, gpu.id, plan.weight_format)
    s = Scenario(model=model_id, gpu=gpu_id, precision=precision, tp=tp, num_gpus=tp, engine=engine, ideal=ideal)
    r = run_load(plan, cal, s, I, O, load_kind, V)
    fits = np.asarray(plan.max_concurrent(I + O)) >= 1
    hourly = (price or gpu.price_usd_per_gpu_hour or np.nan) * tp
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
