"""Hold the capacity model against measurements: for every measured load point, the prediction for
the same configuration and load, and the error per metric.

A results folder (validate run/sweep/import --out) names its configuration in metadata.json (model id,
--gpu, engine argv) or, for a server started by a campaign script, in scenario.json beside it.
Errors are reported as predicted ÷ measured − 1 (positive = the model is too high).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from capacity import Scenario
from capacity.estimate import estimate_with_calibration
from capacity.calibration import Calibration
from capacity.engine import PROFILES
from capacity.errors import CapacityError
from validate.errors import ValidateError
from validate.results import PointResult, ResultsDir

METRICS = {  # measured key -> predicted key
    "mean_ttft_s": "ttft_s",
    "mean_itl_s": "itl_s",
    "requests_per_s": "requests_per_s",
    "output_tokens_per_s": "output_tokens_per_s",
}


@dataclass(frozen=True)
class MeasuredRun:
    path: Path
    scenario: dict  # Scenario fields that do not depend on the point
    points: list[PointResult]
    facts: dict


def argv_value(argv: list[str], *flags: str) -> str | None:
    """The value of the first of `flags` in a command line ('--flag value' or '--flag=value')."""
    for i, a in enumerate(argv):
        for flag in flags:
            if a == flag and i + 1 < len(argv):
                return argv[i + 1]
            if a.startswith(flag + "="):
                return a.split("=", 1)[1]
    return None


# (vLLM flag, SGLang flag) -> scenario field: the same limit under each engine's name
LIMIT_FLAGS = ((("--gpu-memory-utilization", "--mem-fraction-static"), "gpu_memory_utilization", float),
               (("--max-num-seqs", "--max-running-requests"), "max_num_seqs", int),
               (("--max-num-batched-tokens", "--chunked-prefill-size"), "max_num_batched_tokens", int),
               (("--max-model-len", "--context-length"), "max_model_len", int),
               (("--max-cudagraph-capture-size", "--cuda-graph-max-bs"), "max_cudagraph_tokens", int))


def scenario_from_argv(argv: list[str]) -> dict:
    """Engine flags that change the prediction (vLLM's or SGLang's names): precision, KV dtype, TP, memory and
    scheduler limits, CUDA-graph size."""
    s: dict = {}
    if q := argv_value(argv, "--quantization"):
        s["precision"] = "fp8" if q.startswith("fp8") else q
    if kv := argv_value(argv, "--kv-cache-dtype"):
        s["kv_precision"] = "fp8" if kv.startswith("fp8") else "bf16"
    if tp := argv_value(argv, "--tensor-parallel-size", "-tp", "--tp-size", "--tp"):
        s["tp"] = s["num_gpus"] = int(tp)
    if "--enable-expert-parallel" in argv or int(argv_value(argv, "--ep-size", "--expert-parallel-size") or 1) > 1:
        s["expert_parallel"] = True
    if "--enforce-eager" in argv or "--disable-cuda-graph" in argv:
        s["max_cudagraph_tokens"] = 0
    for flags, key, kind in LIMIT_FLAGS:
        if (v := argv_value(argv, *flags)) is not None:
            s[key] = kind(v)
    return s


def load_run(path: str | Path) -> MeasuredRun:
    if not (Path(path) / "points.jsonl").is_file():
        raise ValidateError(f"{path} is not a results folder (no points.jsonl in it)")
    folder = ResultsDir(path)
    meta = folder.read_metadata()
    side = Path(path) / "scenario.json"
    if not side.exists():
        side = Path(path).parent / "scenario.json"
    extra = json.loads(side.read_text()) if side.exists() else {}
    argv = extra.get("engine_argv") or (meta.engine_argv if meta else [])
    scenario = {"model": extra.get("model") or (meta.model_id if meta else None),
                "gpu": extra.get("gpu") or (meta.gpu_id if meta else None),
                "engine": extra.get("engine") or (meta.engine if meta and meta.engine in PROFILES else "vllm"),
                **scenario_from_argv(argv)}
    for key in ("precision", "kv_precision"):
        if key in extra:
            scenario[key] = extra[key]
    if not scenario["model"] or not scenario["gpu"]:
        raise ValidateError(f"{path}: cannot tell the model and GPU (metadata.json needs model_id and gpu_id, "
                            "or put a scenario.json beside it)")
    points = [p for p in folder.points() if p.load not in excluded_loads(Path(path))]
    facts_file = Path(path) / "facts.json" if (Path(path) / "facts.json").exists() else Path(path).parent / "facts.json"
    facts = json.loads(facts_file.read_text()) if facts_file.exists() else (
        meta.engine_facts.model_dump() if meta and meta.engine_facts else {})
    return MeasuredRun(Path(path), scenario, points, facts)


def excluded_loads(path: Path) -> set[str]:
    """Loads of this run listed in an `excluded.json` up to three folders above it (with a reason each)."""
    path = path.resolve()
    for parent in list(path.parents)[:3]:
        f = parent / "excluded.json"
        if f.exists():
            rel = str(path.relative_to(parent))
            return {p["load"] for p in json.loads(f.read_text()).get("points", []) if p.get("run") == rel}
    return set()


def point_scenario(run: MeasuredRun, p: PointResult, **overrides) -> Scenario:
    isl = int(round(p.isl)) if p.isl else int(run.scenario.get("isl", 0))
    osl = int(round(p.osl)) if p.osl else int(run.scenario.get("osl", 0))
    extra = {"num_requests": p.completed + p.failed} if p.load.startswith(("rate", "concurrency")) else {}
    fields = {k: v for k, v in run.scenario.items() if k in Scenario.model_fields}
    return Scenario(**{**fields, "isl": isl, "osl": osl, "load": p.load, **extra, **overrides})


def compare_run(run: MeasuredRun, calibrations: dict[str, Calibration | None]) -> list[dict]:
    """One row per (point, mode); modes map a name to a calibration (None = the shipped default, 'ideal' = roofline)."""
    rows = []
    for p in run.points:
        if p.completed == 0:
            continue
        for mode, cal in calibrations.items():
            try:
                s = point_scenario(run, p, ideal=(mode == "ideal"))
                e = estimate_with_calibration(s, cal)
            except CapacityError as exc:
                rows.append({"run": str(run.path), "load": p.load, "mode": mode, "error": str(exc)})
                continue
            row = {"run": str(run.path), "model": s.model, "gpu": s.gpu, "precision": s.precision, "tp": s.tp,
                   "expert_parallel": s.expert_parallel, "isl": s.isl, "osl": s.osl, "load": p.load, "mode": mode, "calibration": e.calibration,
                   "decode_bound": e.decode_bound, "prefill_bound": e.prefill_bound,
                   "measured_kv_tokens": run.facts.get("kv_cache_tokens"), "predicted_kv_tokens": e.kv_capacity_tokens}
            for mk, pk in METRICS.items():
                meas, pred = getattr(p, mk), getattr(e, pk)
                row[f"measured_{pk}"] = meas
                row[f"predicted_{pk}"] = pred
                row[f"error_{pk}"] = (pred / meas - 1) if meas else np.nan
                lo_hi = e.intervals.get(pk)
                row[f"inside_{pk}"] = (lo_hi[0] <= meas <= lo_hi[1]) if (lo_hi and meas) else None
            rows.append(row)
    return rows


def compare_dirs(paths: list[str | Path], calibrations: dict[str, Calibration | None] | None = None) -> pd.DataFrame:
    modes = calibrations or {"ideal": None, "calibrated": None}
    rows: list[dict] = []
    for path in paths:
        rows += compare_run(load_run(path), modes)
    return pd.DataFrame(rows)


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """Mean absolute error per metric and mode, with counts."""
    out = []
    for mode, g in df.groupby("mode"):
        row = {"mode": mode, "points": len(g)}
        for pk in METRICS.values():
            err = g.get(f"error_{pk}")
            if err is not None:
                row[f"mape_{pk}"] = float(np.nanmean(np.abs(err)))
        out.append(row)
    return pd.DataFrame(out)
