"""Measured results: read the validator's points.jsonl + metadata.json, convert `vllm bench serve
--save-result` JSON, scan the project's corpus, rank configurations (the explorer) and put the model's
predictions beside measured points. Pure functions (no Streamlit), times in seconds inside."""

from __future__ import annotations

import json
import math
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from capacity import Scenario, estimate
from capacity.errors import CapacityError
from capacity.hardware import gpu_catalog
from validate.compare import argv_value, excluded_loads

METRICS = ("requests_per_s", "output_tokens_per_s", "total_tokens_per_s", "mean_ttft_s", "median_ttft_s",
           "p90_ttft_s", "p99_ttft_s", "mean_itl_s", "median_itl_s", "p90_itl_s", "p99_itl_s", "mean_e2e_latency_s")
RUN_COLUMNS = ("model", "gpu", "num_gpus", "tp", "engine", "engine_version", "precision", "kv_precision", "source")


class MeasuredError(ValueError):
    """An uploaded or stored results file that cannot be read; the message says why."""


@dataclass
class Run:
    """One measured run: its load points and what it was measured on."""

    points: pd.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)
    source: str = ""


# ---------- reading ----------

def parse_points_jsonl(text: str, name: str = "points.jsonl") -> pd.DataFrame:
    rows = []
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines):  # a torn last line (run killed mid-write) is skipped, as validate does
                break
            raise MeasuredError(f"{name}:{number} is not JSON ({exc.msg})") from None
        if not isinstance(row, dict) or "load" not in row:
            raise MeasuredError(f"{name}:{number} is not a load point (needs a 'load' key)")
        rows.append(row)
    if not rows:
        raise MeasuredError(f"{name} holds no load points")
    df = pd.DataFrame(rows)
    for col in METRICS + ("isl", "osl", "completed", "failed", "duration_s"):
        if col not in df:
            df[col] = np.nan
        df[col] = pd.to_numeric(df[col], errors="coerce")
    return df


def run_facts(meta: dict[str, Any], path: Path | None = None) -> dict[str, Any]:
    """Model, GPU, engine, precision and TP of a run, from metadata.json (the engine argv for precision and
    TP) and, as a fallback, the corpus path data/measurements/<gpu>/<engine-version>/... None: not said."""
    argv = [str(a) for a in meta.get("engine_argv") or []]
    parts = list(path.parts) if path is not None else []
    gpu = meta.get("gpu_id") or (parts[0] if parts else None)
    engine = meta.get("engine")
    version = meta.get("engine_version") or (meta.get("engine_facts") or {}).get("version")
    if len(parts) > 1 and (not engine or not version):
        m = re.match(r"([a-zA-Z_]+)[-_]?v?([0-9][\w.+]*)?", parts[1])
        if m:
            engine = engine or m.group(1)
            version = version or m.group(2)
    precision = kv = tp = num_gpus = None
    if argv or "precision" in meta:
        quant = meta.get("precision") or argv_value(argv, "--quantization", "-q")
        dtype = argv_value(argv, "--dtype")
        precision = str(quant or ("bf16" if dtype in (None, "auto", "bfloat16", "bf16") else dtype)).lower()
        precision = {"modelopt_fp4": "fp4", "nvfp4": "fp4", "mxfp4": "fp4", "awq": "int4", "gptq": "int4",
                     "float16": "bf16", "fp16": "bf16"}.get(precision, precision)
        kv = str(meta.get("kv_precision") or argv_value(argv, "--kv-cache-dtype") or "bf16").lower()
        kv = "bf16" if kv in ("auto", "bfloat16") else ("fp8" if kv.startswith("fp8") else kv)
        raw = meta.get("tp") or argv_value(argv, "--tensor-parallel-size", "-tp", "--tp", "--tp-size", "--tp_size")
        tp = int(raw) if str(raw or "").isdigit() else 1
        dp = argv_value(argv, "--data-parallel-size", "-dp", "--dp", "--dp-size")
        num_gpus = tp * (int(dp) if dp and dp.isdigit() else 1)
    return {"model": meta.get("model_id") or meta.get("served_model_name"), "gpu": gpu, "num_gpus": num_gpus,
            "tp": tp, "engine": engine, "engine_version": version, "precision": precision, "kv_precision": kv}


FALLBACK = {"model": "unknown", "gpu": "unknown", "num_gpus": 1, "tp": 1, "engine": "unknown", "engine_version": "",
            "precision": "bf16", "kv_precision": "bf16"}


def from_vllm_bench(result: dict[str, Any], name: str = "vllm bench JSON") -> Run:
    """`vllm bench serve --save-result` JSON → one load point (times converted from ms to s)."""
    if "request_throughput" not in result or "completed" not in result:
        raise MeasuredError(f"{name}: not a `vllm bench serve --save-result` file (no request_throughput/completed)")

    def ms(key: str) -> float:
        v = result.get(key)
        return float(v) / 1e3 if isinstance(v, (int, float)) else math.nan

    completed = int(result.get("completed") or 0)
    num_prompts = int(result.get("num_prompts") or completed + int(result.get("failed") or 0) or completed)
    rate = result.get("request_rate")
    concurrency = result.get("max_concurrency")
    if isinstance(concurrency, (int, float)) and concurrency > 0:
        load = f"concurrency:{int(concurrency)}"
    elif isinstance(rate, (int, float)) and math.isfinite(rate) and rate > 0:
        load = f"rate:{float(rate):.6g}"
    else:
        load = f"burst:{max(num_prompts, 1)}"
    in_lens, out_lens = result.get("input_lens") or [], result.get("output_lens") or []
    isl = float(np.mean(in_lens)) if in_lens else (result.get("total_input_tokens", 0) / completed if completed else math.nan)
    osl = float(np.mean(out_lens)) if out_lens else (result.get("total_output_tokens", 0) / completed if completed else math.nan)
    point = {
        "load": load, "completed": completed, "failed": int(result.get("failed") or max(num_prompts - completed, 0)),
        "duration_s": float(result.get("duration") or math.nan),
        "requests_per_s": float(result["request_throughput"]),
        "output_tokens_per_s": float(result.get("output_throughput") or math.nan),
        "total_tokens_per_s": float(result.get("total_token_throughput") or math.nan),
        "isl": isl, "osl": osl, "source": "vllm bench serve",
    }
    for stat in ("mean", "median", "p90", "p99"):
        point[f"{stat}_ttft_s"] = ms(f"{stat}_ttft_ms")
        point[f"{stat}_itl_s"] = ms(f"{stat}_itl_ms")
    point["mean_e2e_latency_s"] = ms("mean_e2el_ms")
    meta = {"model_id": result.get("model_id"), "engine": result.get("backend") or "vllm",
            "engine_version": result.get("vllm_version") or result.get("version")}
    return Run(parse_points_jsonl(json.dumps(point), name), meta, name)


def import_report(name: str, data: bytes, obj: dict[str, Any]) -> Run:
    """Another tool's report (`vllm bench serve --save-result`, guidellm) through the validator's importer
    (validate/importers.py), so the app and `validate import` read them the same way; the app's own small
    vLLM converter is the fallback where the validator is not installed."""
    try:
        from validate.errors import ValidateError
        from validate.importers import import_file
    except ImportError:
        if "request_throughput" in obj:
            return from_vllm_bench(obj, name)
        raise MeasuredError(f"{name}: reading guidellm reports needs the validate package") from None
    with tempfile.TemporaryDirectory(prefix="llmcap-upload-") as tmp:
        path = Path(tmp) / (Path(name).name or "report.json")
        path.write_bytes(data)
        try:
            points, _, meta = import_file(path, ["app upload", Path(name).name])
        except (ValidateError, KeyError, TypeError, ValueError) as exc:
            raise MeasuredError(f"{name}: cannot import ({type(exc).__name__}: {exc})") from None
    text = "\n".join(p.model_dump_json() for p in points)
    return Run(parse_points_jsonl(text, name), meta.model_dump(mode="json"), name)


def parse_upload(name: str, data: bytes) -> tuple[str, Any]:
    """Classify one uploaded file: ('points', DataFrame), ('metadata', dict) or ('run', Run)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise MeasuredError(f"{name}: not a UTF-8 text file") from None
    stripped = text.strip()
    if not stripped:
        raise MeasuredError(f"{name}: empty file")
    if name.endswith(".jsonl") or (stripped.count("\n") and stripped.startswith("{") and "\n{" in stripped):
        return "points", parse_points_jsonl(text, name)
    try:
        obj = json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise MeasuredError(f"{name}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if isinstance(obj, dict) and ("request_throughput" in obj or "benchmarks" in obj):
        return "run", import_report(name, data, obj)
    if isinstance(obj, dict) and ("validate_command" in obj or "engine_argv" in obj or "model_id" in obj):
        return "metadata", obj
    if isinstance(obj, dict) and "load" in obj:
        return "points", parse_points_jsonl(stripped.replace("\n", " "), name)
    raise MeasuredError(f"{name}: neither points.jsonl, metadata.json nor `vllm bench serve` JSON")


def runs_from_uploads(files: list[tuple[str, bytes]]) -> tuple[list[Run], list[str]]:
    """Pair uploaded points.jsonl files with an uploaded metadata.json (one metadata applies to all)."""
    runs, points, errors, meta = [], [], [], {}
    for name, data in files:
        try:
            kind, obj = parse_upload(name, data)
        except MeasuredError as exc:
            errors.append(str(exc))
            continue
        if kind == "metadata":
            meta = obj
        elif kind == "points":
            points.append((name, obj))
        else:
            runs.append(obj)
    runs += [Run(df, meta, name) for name, df in points]
    return runs, errors


def load_corpus(root: Path) -> tuple[list[Run], list[str]]:
    """Every points.jsonl under `root` (data/measurements), with the metadata.json beside it."""
    runs, errors = [], []
    if not root.is_dir():
        return runs, errors
    for path in sorted(root.rglob("points.jsonl")):
        rel = path.relative_to(root)
        if "warmup" in rel.parts:  # unrecorded warm-up bursts of a campaign
            continue
        try:
            df = parse_points_jsonl(path.read_text(), str(rel))
            meta_path = path.with_name("metadata.json")
            meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
            # a campaign names the real configuration in scenario.json beside the shape folders
            side = path.parent.parent / "scenario.json"
            if side.is_file():
                sc = json.loads(side.read_text())
                meta = {**meta, "model_id": sc.get("model") or meta.get("model_id"),
                        "gpu_id": sc.get("gpu") or meta.get("gpu_id"), "precision": sc.get("precision"),
                        "kv_precision": sc.get("kv_precision"), "engine_argv": sc.get("engine_argv") or []}
        except (MeasuredError, OSError, json.JSONDecodeError) as exc:
            errors.append(f"{rel}: {exc}")
            continue
        excluded = excluded_loads(path.parent)  # validate.compare: the same rule compare/calibrate apply
        if excluded and "load" in df:
            df = df[~df["load"].isin(excluded)]
        runs.append(Run(df, meta, str(rel.parent)))
    return runs, errors


def runs_table(runs: list[Run], origin: str, defaults: dict[str, Any] | None = None) -> pd.DataFrame:
    """One row per load point, with the run's facts as columns. `defaults` fills what a run does not say
    (an uploaded `vllm bench` file names no GPU: it is taken to be the sidebar's configuration)."""
    frames = []
    for run in runs:
        facts = run_facts(run.meta, Path(run.source) if origin == "project" else None)
        for key, value in facts.items():
            if value in (None, ""):
                facts[key] = (defaults or {}).get(key, FALLBACK[key])
        df = run.points.copy()
        for key, value in facts.items():
            df[key] = value
        df["source"] = run.source
        df["origin"] = origin
        frames.append(df)
    if not frames:
        return pd.DataFrame(columns=list(RUN_COLUMNS) + ["load", "origin", *METRICS, "isl", "osl"])
    out = pd.concat(frames, ignore_index=True)
    out["shape"] = [f"{_round(i)} → {_round(o)}" for i, o in zip(out["isl"], out["osl"])]
    return out


def _round(v: float) -> str:
    return "?" if v is None or not np.isfinite(v) else f"{int(round(v)):,}"


# ---------- explorer ----------

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


# ---------- measured vs predicted ----------

def matches_scenario(df: pd.DataFrame, s: Scenario, gpu_id: str) -> pd.Series:
    """Project points measured on the configuration of `s` (model, GPU, precision, TP, similar shape)."""
    if df.empty:
        return pd.Series(dtype=bool)
    want = s.model.lower()

    def same_model(m: str) -> bool:
        m = str(m).lower()
        return m == want or m.rstrip("/").split("/")[-1] == want.rstrip("/").split("/")[-1]

    shape_ok = ((df["isl"] - s.isl).abs() <= 0.1 * s.isl + 1) & ((df["osl"] - s.osl).abs() <= 0.1 * s.osl + 1)
    # the engine's own points only (another engine's are not this prediction's to match); ideal shows them all
    engine_ok = True if s.ideal or s.engine == "ideal" else df["engine"].astype(str).str.lower() == s.engine
    return (df["model"].map(same_model) & (df["gpu"].str.lower() == gpu_id.lower())
            & (df["precision"] == s.precision) & (df["tp"] == s.tp) & shape_ok & engine_ok)


def predict_points(df: pd.DataFrame, s: Scenario) -> pd.DataFrame:
    """The model's prediction for every measured point: same configuration as `s`, with the point's load
    and its measured mean input/output lengths (per replica loads: one replica serves the whole load)."""
    rows = []
    for _, p in df.iterrows():
        isl = int(round(p["isl"])) if np.isfinite(p["isl"]) else s.isl
        osl = int(round(p["osl"])) if np.isfinite(p["osl"]) else s.osl
        try:
            e = estimate(s.model_copy(update={"isl": max(isl, 1), "osl": max(osl, 1), "load": str(p["load"]),
                                              "num_gpus": s.tp}))
            rows.append({"pred_requests_per_s": e.requests_per_s, "pred_output_tokens_per_s": e.output_tokens_per_s,
                         "pred_ttft_s": e.ttft_s, "pred_itl_s": e.itl_s, "pred_error": ""})
        except CapacityError as exc:
            rows.append({"pred_error": str(exc)})
    pred = pd.DataFrame(rows, index=df.index)
    out = pd.concat([df, pred], axis=1)
    out["ttft_s"] = latency_column(out, "ttft", "median")
    out["itl_s"] = latency_column(out, "itl", "median")
    for m in ("requests_per_s", "output_tokens_per_s", "ttft_s", "itl_s"):
        if f"pred_{m}" in out:
            out[f"err_{m}_pct"] = (out[f"pred_{m}"] / out[m] - 1) * 100
    return out
