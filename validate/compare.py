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
from capacity.estimate import estimate_with_calibration, plan_for
from capacity.calibration import IDEAL, Calibration
from capacity.model.steptime import step_parts
from capacity.loadmodel.workload import spec_acceptance_for, spec_tokens_per_step
import capacity.engines as capacity_engines
from capacity.engines import argv_value  # noqa: F401  (kept importable from here)
from capacity.errors import CapacityError
from capacity.load import load_of
from capacity.loads.draws import SEED_MAX
from pydantic import ValidationError

from validate.errors import ResultsError, ValidateError, one_line
from validate.results import (METADATA_FILE, ExcludedFile, FactsFile, PointResult, ResultsDir, ScenarioFile,
                              read_json_file)

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


def scenario_from_argv(argv: list[str], engine: str = "vllm") -> dict:
    """Engine flags that change the prediction, read through the engine's own flag table (capacity/engines/):
    precision, KV dtype, TP/EP, memory and scheduler limits, CUDA-graph size. An engine the model does not know
    gives none."""
    if engine not in capacity_engines.names():
        return {}
    return capacity_engines.get(engine).flags.scenario(argv)


def load_run(path: str | Path) -> MeasuredRun:
    if not (Path(path) / "points.jsonl").is_file():
        raise ValidateError(f"{path} is not a results folder (no points.jsonl in it)")
    folder = ResultsDir(path)
    meta = folder.read_metadata()
    side = Path(path) / "scenario.json"
    if not side.exists():
        side = Path(path).parent / "scenario.json"
    extra = read_json_file(side, ScenarioFile).model_dump(exclude_unset=True) if side.exists() else {}
    argv = extra.get("engine_argv") or (meta.engine_argv if meta else [])
    argv_file = side if extra.get("engine_argv") else folder.path / METADATA_FILE
    engine = extra.get("engine") or (meta.engine if meta and meta.engine in capacity_engines.names() else "vllm")
    scenario = {"model": extra.get("model") or (meta.model_id if meta else None),
                "gpu": extra.get("gpu") or (meta.gpu_id if meta else None),
                "engine": engine, **_argv_scenario(argv, engine, argv_file)}
    for key in ("precision", "kv_precision"):
        if key in extra:
            scenario[key] = extra[key]
    scenario.update(workload_scenario(meta.workload if meta else {}))
    if not scenario["model"] or not scenario["gpu"]:
        raise ValidateError(f"{path}: cannot tell the model and GPU (metadata.json needs model_id and gpu_id, "
                            "or put a scenario.json beside it)")
    points = [p for p in folder.points() if p.load not in excluded_loads(Path(path))]
    facts_file = Path(path) / "facts.json" if (Path(path) / "facts.json").exists() else Path(path).parent / "facts.json"
    facts = read_json_file(facts_file, FactsFile).model_dump() if facts_file.exists() else (
        meta.engine_facts.model_dump() if meta and meta.engine_facts else {})
    return MeasuredRun(Path(path), scenario, points, facts)


def workload_scenario(workload: dict) -> dict:
    """The load's shape as the run sent it (metadata.json's workload, written by the folder's latest sweep, or a
    point's own record of its arrivals and seed): its length spread, arrival process and seed, as Scenario fields, so the prediction prices the same traffic (the closed
    forms cannot express either: the estimate then simulates)."""
    out: dict = {}
    kind, _, ratio = str(workload.get("length_dist") or "fixed").partition(":")
    if kind in ("uniform", "normal") and ratio:
        try:
            out["length_dist"], out["length_ratio"] = kind, float(ratio)
        except ValueError:
            out = {}
    if workload.get("arrivals") in ("constant", "poisson", "gamma"):
        out["arrivals"] = workload["arrivals"]
        shape = workload.get("gamma_shape")
        if workload["arrivals"] == "gamma" and isinstance(shape, (int, float)) and shape > 0:
            out["gamma_shape"] = float(shape)
    seed = workload.get("seed")
    if isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed <= SEED_MAX:
        out["seed"] = seed  # the simulator draws the run's own arrivals (capacity/loads/draws.py)
    shared = workload.get("shared_prefix")
    if isinstance(shared, (int, float)) and 0 < shared < 1:
        out["prefix_hit_rate"] = float(shared)
    return out


def measured_hit_rate(p: PointResult) -> float | None:
    """The prefix-cache hit rate the engine's counters report for the point (None without counters)."""
    t = p.engine_telemetry
    rate = t.prefix_cache_hit_rate if t is not None else None
    return min(max(float(rate), 0.0), 0.99) if rate is not None else None


def measured_spec_acceptance(p: PointResult, draft_tokens: int) -> float | None:
    """The per-token draft acceptance that gives the tokens per verification step the engine counted
    (1 + accepted / drafts); None without speculative counters."""
    t = p.engine_telemetry
    if t is None or not draft_tokens or not t.spec_drafts or t.spec_accepted_tokens is None:
        return None
    return spec_acceptance_for(1.0 + t.spec_accepted_tokens / t.spec_drafts, draft_tokens)


def compiled_while_timed(run_path: Path) -> dict[str, int]:
    """Kernels the engine compiled while each point ran, by load label, from the campaign's kernel counts (jit.jsonl
    beside the run folder: the server's own Triton cache counted after every point). A point that compiled was timed
    while the engine was still warming up; its stalls are not the steady state the model prices."""
    path = run_path.parent / "jit.jsonl"
    if not path.exists():
        return {}
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    prefix, out = f"{run_path.name}/", {}
    for before, after in zip(rows, rows[1:]):
        grown = int(after.get("triton-cache", 0)) - int(before.get("triton-cache", 0))
        if grown > 0 and str(after.get("after", "")).startswith(prefix):
            out[after["after"].removeprefix(prefix)] = grown
    return out


def _argv_scenario(argv: list[str], engine: str, where: Path) -> dict:
    """scenario_from_argv, with a flag value that is not what the flag takes named (ResultsError)."""
    try:
        return scenario_from_argv(argv, engine)
    except (ValueError, TypeError, OverflowError) as err:
        for i, flag in enumerate(argv):  # the flag whose removal makes the rest readable is the bad one
            if flag.startswith("-"):
                try:
                    scenario_from_argv(argv[:i] + argv[i + (1 if "=" in flag else 2):], engine)
                except (ValueError, TypeError, OverflowError):
                    continue
                raise ResultsError(f"{where}: engine_argv: {flag.split('=')[0]}: expected a number "
                                   f"({one_line(err)})") from None
        raise ResultsError(f"{where}: engine_argv: {one_line(err)}") from None


def excluded_loads(path: Path) -> set[str]:
    """Loads of this run listed in an `excluded.json` up to three folders above it (with a reason each)."""
    path = path.resolve()
    for parent in list(path.parents)[:3]:
        f = parent / "excluded.json"
        if f.exists():
            rel = str(path.relative_to(parent))
            return {p.load for p in read_json_file(f, ExcludedFile).points if p.run == rel}
    return set()


def point_scenario(run: MeasuredRun, p: PointResult, **overrides) -> Scenario:
    isl = int(round(p.isl)) if p.isl else int(run.scenario.get("isl", 0))
    osl = int(round(p.osl)) if p.osl else int(run.scenario.get("osl", 0))
    load = load_of(p.load)  # closed loops and rates run until their count: the prediction takes the point's
    extra = {"num_requests": p.completed + p.failed} if load is not None and load.shape.endless else {}
    fields = {k: v for k, v in run.scenario.items() if k in Scenario.model_fields}
    sent = {k: getattr(p, k) for k in ("arrivals", "gamma_shape", "seed") if getattr(p, k) is not None}
    if sent:  # the point's own record of how it was sent outranks the folder's latest sweep
        fields.update(workload_scenario(sent))
        if sent.get("arrivals") not in (None, "gamma"):
            fields.pop("gamma_shape", None)
    hit = measured_hit_rate(p)  # what the engine served from its cache, whatever the workload meant
    if hit is not None:
        extra["prefix_hit_rate"] = hit
    acc = measured_spec_acceptance(p, int(fields.get("spec_draft_tokens") or 0))  # what the drafts achieved
    if acc is not None:
        extra["spec_acceptance"] = acc
    return Scenario(**{**fields, "isl": isl, "osl": osl, "load": p.load, **extra, **overrides})


def read_requests(run_dir: Path) -> pd.DataFrame | None:
    """Every recorded request of a results folder: requests.csv as the campaign packs it, or a run's requests.jsonl
    (its mean ITL per request taken from the gaps); None when the folder holds neither."""
    csv, jsonl = run_dir / "requests.csv", run_dir / "requests.jsonl"
    if csv.exists():
        return _requests_csv(csv)
    if not jsonl.exists():
        return None
    df = pd.DataFrame([r.model_dump() for r in ResultsDir(run_dir).requests()])
    if len(df):
        df["mean_itl_s"] = [float(np.mean(g)) if g else np.nan for g in df["itls_s"]]
    return df


REQUEST_COLUMNS = ("load", "start_s", "mean_itl_s", "error")  # what the readers of a requests.csv take from it


def _requests_csv(path: Path) -> pd.DataFrame:
    """A campaign's requests.csv, checked: unreadable, a missing column or a non-number is a one-line ResultsError."""
    try:
        df = pd.read_csv(path)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError, OSError) as exc:
        raise ResultsError(f"{path}: cannot read the requests: {one_line(exc)}") from None
    missing = [c for c in REQUEST_COLUMNS if c not in df.columns]
    if missing:
        raise ResultsError(f"{path}: missing columns {', '.join(missing)}")
    for col in ("start_s", "mean_itl_s"):
        values = pd.to_numeric(df[col], errors="coerce")
        bad = df[col].notna() & (values.isna() | ~np.isfinite(values))
        if bad.any():
            raise ResultsError(f"{path}: row {int(np.flatnonzero(bad.to_numpy())[0]) + 2}: {col}: expected a finite number")
        df[col] = values
    df["load"] = df["load"].astype(str)
    return df


def recorded_requests(run_dir: Path, load: str, requests: pd.DataFrame | None = None) -> pd.DataFrame | None:
    """The point's requests in send order (`requests`: the folder's, if already read); None when there are none."""
    df = read_requests(run_dir) if requests is None else requests
    if df is None or not len(df):
        return None
    df = df[df["load"] == load]
    return df.sort_values("start_s") if len(df) else None


STEADY_RATIO = 2.0  # an open-loop point whose first quarter of requests decodes this much slower than its last
STEADY_MIN_REQUESTS = 40


def is_open_loop(load: str) -> bool:
    """Is this point's label an open-arrival load? A label no load shape reads (an imported run's) is not."""
    try:
        shape = load_of(load)
    except (ValueError, CapacityError):
        return False
    return shape is not None and shape.shape.regime == "open arrivals"


def steadiness_flags(run_dir: Path, load: str, requests: pd.DataFrame | None = None) -> list[str]:
    """An open-loop point is a steady state only if its requests decode alike from first to last: arrivals do not
    change over the point, so the mean ITL of its first quarter of requests (by send time) should match its last
    quarter's. Stalls do not: kernels compiling for batch shapes met for the first time stop the engine loop for a
    second or more while a backlog builds, then it catches up. Of the committed open-loop points whose Triton cache
    grew by 15 or more kernels while they ran, three of four came out 2.1–15.8× slower in their first quarter (the
    fourth 1.07×); of those that compiled none, none above 1.6×. Closed loops and bursts are left alone: their first
    requests start together by design. `requests`: the folder's, if already read."""
    df = recorded_requests(run_dir, load, requests) if is_open_loop(load) else None
    if df is None:
        return []
    itl = df.loc[df["error"].isna() | (df["error"] == ""), "mean_itl_s"].dropna().to_numpy(float)
    q = len(itl) // 4
    if len(itl) < STEADY_MIN_REQUESTS or not itl[-q:].mean() > 0:
        return []
    first, last = itl[:q].mean(), itl[-q:].mean()
    if first <= STEADY_RATIO * last:
        return []
    return [f"not a steady state: the first quarter of its requests decoded at {first * 1e3:.1f} ms per token, the "
            f"last at {last * 1e3:.1f} ms ({first / last:.1f}×; stalls such as kernels compiling)"]


ROOFLINE_SLACK = 0.9  # a median ITL below this share of the decode roofline at the point's mean batch is flagged


def roofline_flags(s: Scenario, p: PointResult) -> list[str]:
    """What the engine's counters and the roofline say together: a median ITL faster than one decode step at the
    point's mean running batch can be (all weights each step needs, with uniform expert routing, at full bandwidth)
    means the point did less work than its workload — for an MoE, fewer experts read than real routing reads
    (random dummy weights can route unevenly). Such a point cannot check the expert-read term."""
    t = p.engine_telemetry
    if t is None or not t.mean_running or p.median_itl_s is None or not p.isl or not p.osl:
        return []
    plan = plan_for(s.model_copy(update={"ideal": True, "load": "sync", "num_requests": None}))
    step_s = float(step_parts(plan.costs, IDEAL.efficiency, t.mean_running, p.isl + p.osl / 2, 0.0, 0.0,
                              ideal=True).time_s)
    per_step = spec_tokens_per_step(s.spec_acceptance, s.spec_draft_tokens)  # more than 1 with accepted drafts
    if p.median_itl_s * per_step >= ROOFLINE_SLACK * step_s:
        return []
    what = "fewer experts read than uniform routing reads" if plan.costs.moe_layers else "less work than the step needs"
    return [f"median ITL {p.median_itl_s * 1e3:.2f} ms is below the decode roofline at its mean batch of "
            f"{t.mean_running:.0f} ({step_s * 1e3:.2f} ms): {what}"]


def _telemetry_line(p: PointResult) -> str:
    parts = [p.engine_telemetry.describe()] if p.engine_telemetry else []
    g = p.gpu_telemetry
    if g is not None and g.mean_power_w is not None:
        parts.append(f"{g.mean_power_w:.0f} W" + (f", {g.joules_per_output_token:.3g} J/output token"
                                                  if g.joules_per_output_token else ""))
    if p.host_telemetry is not None:
        parts.append(p.host_telemetry.describe())
    return "; ".join(parts)


def compare_run(run: MeasuredRun, calibrations: dict[str, Calibration | None]) -> list[dict]:
    """One row per (point, mode); modes map a name to a calibration (None = the shipped default, 'ideal' = roofline)."""
    rows = []
    compiled = compiled_while_timed(Path(run.path))
    # the run's requests, read once and only if an open-loop point needs them (the steadiness check)
    requests = read_requests(Path(run.path)) if any(is_open_loop(p.load) for p in run.points) else None
    for p in run.points:
        if p.completed == 0:
            continue
        load_flags = ([f"{compiled[p.load]} Triton kernels compiled while this point ran (timed during JIT warm-up)"]
                      if p.load in compiled else []) + steadiness_flags(Path(run.path), p.load, requests)
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
                   "measured_kv_tokens": run.facts.get("kv_cache_tokens"), "predicted_kv_tokens": e.kv_capacity_tokens,
                   "prefix_hit_rate": s.prefix_hit_rate, "telemetry": _telemetry_line(p),
                   "flags": "; ".join((p.engine_telemetry.flags if p.engine_telemetry else [])
                                      + (roofline_flags(s, p) if mode != "ideal" else []) + load_flags)}
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
        try:
            rows += compare_run(load_run(path), modes)
        except ValidationError as err:  # a recorded value the Scenario refuses (e.g. an unknown engine)
            raise ResultsError(f"{path}: {one_line(err)}") from None
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
