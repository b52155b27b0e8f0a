"""Measured results for the app: the project's corpus and uploads, read by `validate` (validate.compare.load_run,
validate.results, validate.importers) and predicted by the function `validate compare` uses
(validate.compare.compare_run: each point with its own run's engine flags, load and request count; the model's
means against the measured means). Pure functions (no Streamlit), times in seconds inside."""

from __future__ import annotations

import dataclasses
import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import capacity.engines as capacity_engines
from capacity import Scenario
from capacity.errors import CapacityError
from validate.compare import METRICS as COMPARED, MeasuredRun, compare_run, load_run, summarize
from validate.errors import ValidateError, one_line
from validate.importers import ImportedRun, import_each
from validate.results import POINTS_FILE, PointResult

METRICS = ("requests_per_s", "output_tokens_per_s", "total_tokens_per_s", "mean_ttft_s", "median_ttft_s",
           "p90_ttft_s", "p99_ttft_s", "mean_itl_s", "median_itl_s", "p90_itl_s", "p99_itl_s", "mean_e2e_latency_s")
RUN_COLUMNS = ("model", "gpu", "num_gpus", "tp", "engine", "engine_version", "precision", "kv_precision", "source")
STATISTIC = "mean"  # what validate compare holds the model's means against (METRICS of validate.compare)


class MeasuredError(ValueError):
    """An uploaded or stored results file that cannot be read; the message says why."""


@dataclass(frozen=True)
class Run:
    """One measured run as `validate compare` reads it, and where it came from."""

    run: MeasuredRun
    source: str  # the folder under data/measurements, or the uploaded file's name
    origin: str  # "project" or "uploaded"
    engine_version: str = ""


# ---------- reading ----------

def _version(run: MeasuredRun, label: str) -> str:
    """The engine version its log or metadata gave, else the corpus folder's (…/vllm-0.26.0/…)."""
    if run.facts.get("version"):
        return str(run.facts["version"])
    m = re.search(r"(?:^|/)[a-zA-Z_]+[-_]v?([0-9][\w.+]*)(?:/|$)", label)
    return m.group(1) if m else ""


def load_corpus(root: Path) -> tuple[list[Run], list[str]]:
    """Every results folder under `root` (data/measurements), read by validate.compare.load_run: its
    scenario.json or metadata.json, its engine flags through the engine's flag table, its excluded points."""
    runs, errors = [], []
    if not root.is_dir():
        return runs, errors
    for path in sorted(root.rglob("points.jsonl")):
        rel = path.parent.relative_to(root)
        if "warmup" in rel.parts:  # unrecorded warm-up bursts of a campaign
            continue
        try:
            run = load_run(path.parent)
        except (ValidateError, CapacityError, OSError, ValueError) as exc:
            errors.append(f"{rel}: {exc}")
            continue
        runs.append(Run(run, str(rel), "project", _version(run, str(rel))))
    return runs, errors


def _first_line_object(text: str) -> Any:
    """The JSON value of the first non-blank line (None when it is not JSON)."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    try:
        return json.loads(first)
    except (ValueError, RecursionError):
        return None


def parse_upload(name: str, data: bytes) -> tuple[str, Any]:
    """Classify one uploaded file: ('points', text) validate's points.jsonl, ('metadata', dict) its metadata.json, or
    ('report', None) any other file, which validate.importers reads as `validate import` does (vllm bench, guidellm,
    AIPerf summaries and per-record files, genai-perf, llm-d Benchmark Reports in JSON or YAML, InferenceX rows)
    or refuses with the one-line error the CLI prints (a file that is not JSON or UTF-8 too)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "report", None
    stripped = text.strip()
    if name.endswith((".yaml", ".yml")) or not stripped or stripped.startswith("#"):
        return "report", None
    if name.endswith(".jsonl") or (stripped.count("\n") and stripped.startswith("{") and "\n{" in stripped):
        first = _first_line_object(stripped)
        ours = Path(name).name == POINTS_FILE or (isinstance(first, dict) and "load" in first)
        return ("points", text) if ours else ("report", None)
    try:
        obj = json.loads(stripped)
    except (ValueError, RecursionError):
        return "report", None
    if isinstance(obj, dict) and ("validate_command" in obj or "engine_argv" in obj):
        return "metadata", obj
    if isinstance(obj, dict) and "load" in obj and "completed" in obj:  # one point, pretty-printed
        return "points", stripped.replace("\n", " ") + "\n"
    return "report", None


def upload_scenario(meta: dict[str, Any], defaults: dict[str, Any], own: dict[str, Any] | None = None
                    ) -> dict[str, Any]:
    """scenario.json for an uploaded run: the file's own (InferenceX rows name their configuration), then what its
    metadata does not say from `defaults` (the sidebar). Without an engine command line, the sidebar's layout is
    written as one through the engine's flag table, so load_run reads it back the way it reads a real one."""
    own = own or {}
    out: dict[str, Any] = {}
    for key, meta_key in (("model", "model_id"), ("gpu", "gpu_id"), ("engine", "engine")):
        if not own.get(key) and not meta.get(meta_key) and defaults.get(key):
            out[key] = defaults[key]
    if not meta.get("engine_argv") and not own.get("engine_argv"):
        engine = own.get("engine") or meta.get("engine")
        engine = engine if engine in capacity_engines.names() else out.get("engine", "vllm")
        table = capacity_engines.get(engine).flags
        out["engine_argv"] = table.argv(table.options_for({"tp": defaults.get("tp", 1)}))
        out.update({k: defaults[k] for k in ("precision", "kv_precision") if defaults.get(k) and k not in own})
    return {**out, **own}


def _read_folder(name: str, points_text: str, meta: dict[str, Any], defaults: dict[str, Any],
                 own_scenario: dict[str, Any] | None = None) -> Run:
    """An uploaded run as a results folder, read by load_run (messages name the upload, not the folder)."""
    with tempfile.TemporaryDirectory(prefix="llmcap-upload-") as tmp:
        folder = Path(tmp) / "run"
        folder.mkdir()
        (folder / "points.jsonl").write_text(points_text)
        if meta:
            (folder / "metadata.json").write_text(json.dumps(meta))
        (folder / "scenario.json").write_text(json.dumps(upload_scenario(meta, defaults, own_scenario)))
        try:
            run = load_run(folder)
        except (ValidateError, CapacityError, OSError, ValueError) as exc:
            raise MeasuredError(str(exc).replace(str(folder / "points.jsonl"), name).replace(str(folder), name)) from None
    if not run.points:
        raise MeasuredError(f"{name} holds no load points")
    run = dataclasses.replace(run, path=Path(name))
    return Run(run, name, "uploaded", _version(run, ""))


def runs_from_uploads(files: list[tuple[str, bytes]], defaults: dict[str, Any] | None = None
                      ) -> tuple[list[Run], list[str]]:
    """Uploaded points.jsonl files (with an uploaded metadata.json: one applies to all) and other tools' files
    (through validate.importers, as `validate import` reads them)."""
    defaults = defaults or {}
    points, errors, meta, reports = [], [], {}, []
    for name, data in files:
        kind, obj = parse_upload(name, data)
        if kind == "metadata":
            meta = obj
        elif kind == "points":
            points.append((name, obj))
        else:
            reports.append((name, data))
    runs, report_errors = _import_reports(reports, defaults)
    errors += report_errors
    for name, text in points:
        try:
            runs.append(_read_folder(name, text, meta, defaults))
        except MeasuredError as exc:
            errors.append(str(exc))
    return runs, errors


def _side_by_side(root: Path, files: list[tuple[str, bytes]]) -> dict[Path, str]:
    """Write the files under their names into one folder, so a file that reads another beside it (an AIPerf
    per-record file its summary, a genai-perf summary its request export) finds it; a second file of a name
    goes to a folder of its own. Returns path -> the name the user gave."""
    written: dict[Path, str] = {}
    for name, data in files:
        base = Path(name).name or "report.json"
        n = 0
        while (root / str(n) / base) in written:
            n += 1
        path = root / str(n) / base
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        written[path] = name
    return written


def _error_line(err: Exception, root: Path) -> str:
    """The error as `validate import` prints it (`Type: message`, one line), the upload's name for its path."""
    return re.sub(rf"{re.escape(str(root))}/\d+/", "", f"{type(err).__name__}: {one_line(err)}")


def _import_reports(files: list[tuple[str, bytes]], defaults: dict[str, Any]) -> tuple[list[Run], list[str]]:
    """Other tools' files through validate.importers.import_each, the reader of `validate import`: one run per
    configuration a file holds (InferenceX rows hold many), one error line per file it refuses."""
    if not files:
        return [], []
    runs, errors = [], []
    with tempfile.TemporaryDirectory(prefix="llmcap-upload-") as tmp:
        root = Path(tmp)
        written = _side_by_side(root, files)
        try:
            outcomes = import_each(list(written), ["app upload", *(Path(p).name for p in written)])
        except (KeyError, TypeError, ValueError) as exc:  # an importer's fault, not the file's: still one line
            return [], [f"{', '.join(written.values())}: cannot import ({_error_line(exc, root)})"]
        for path, outcome in outcomes:
            if isinstance(outcome, Exception):
                errors.append(_error_line(outcome, root))
                continue
            for imported in outcome:
                try:
                    runs.append(_imported_run(written[path], imported, defaults))
                except MeasuredError as exc:
                    errors.append(str(exc))
    return runs, errors


def _imported_run(name: str, imported: ImportedRun, defaults: dict[str, Any]) -> Run:
    label = f"{name} · {imported.folder}" if imported.folder else name
    text = "".join(p.model_dump_json() + "\n" for p in imported.points)
    return _read_folder(label, text, imported.metadata.model_dump(mode="json", exclude_none=True), defaults,
                        imported.scenario)


def runs_table(runs: list[Run]) -> pd.DataFrame:
    """One row per load point (validate's PointResult fields), with its run's configuration as columns."""
    frames = []
    for i, r in enumerate(runs):
        sc = r.run.scenario
        tp = int(sc.get("tp", 1))
        facts = {"model": sc["model"], "gpu": sc["gpu"],
                 "num_gpus": tp * int(sc.get("pp", 1)) * int(sc.get("data_parallel_size", 1)),
                 "tp": tp, "engine": sc["engine"], "engine_version": r.engine_version,
                 "precision": sc.get("precision", Scenario.model_fields["precision"].default),
                 "kv_precision": sc.get("kv_precision", Scenario.model_fields["kv_precision"].default)}
        df = pd.DataFrame([{**p.model_dump(), "errors": "; ".join(p.errors)} for p in r.run.points])
        if df.empty:
            continue
        for key, value in facts.items():
            df[key] = value
        df["source"], df["origin"], df["run_index"] = r.source, r.origin, i
        frames.append(df)
    if not frames:
        return pd.DataFrame(columns=list(RUN_COLUMNS) + ["load", "origin", "run_index", *METRICS, "isl", "osl"])
    out = pd.concat(frames, ignore_index=True)
    for col in METRICS + ("isl", "osl", "completed", "failed", "duration_s"):
        out[col] = pd.to_numeric(out[col] if col in out else np.nan, errors="coerce")
    out["shape"] = [f"{_round(i)} → {_round(o)}" for i, o in zip(out["isl"], out["osl"])]
    return out


def _round(v: float) -> str:
    return "?" if v is None or not np.isfinite(v) else f"{int(round(v)):,}"


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


def predict_points(runs: list[Run], points: pd.DataFrame, s: Scenario) -> pd.DataFrame:
    """Measured against predicted for the `points` (rows of runs_table over `runs`), by validate.compare.compare_run:
    every point with its own run's configuration, load and request count; the model's means against the measured
    means. `s` (the sidebar) chooses only the mode: its ideal roofline, else the shipped calibration."""
    mode = "ideal" if s.ideal or s.engine == "ideal" else "calibrated"
    wanted = set(zip(points["run_index"], points["load"])) if not points.empty else set()
    rows = []
    for i in sorted({i for i, _ in wanted}):
        r = runs[i]
        by_load = {p.load: p for p in r.run.points}
        for row in compare_run(r.run, {mode: None}):
            if (i, row["load"]) in wanted:
                rows.append({**row, "source": r.source, "origin": r.origin, **telemetry_columns(by_load[row["load"]])})
    return app_columns(pd.DataFrame(rows))


NO_COUNTERS = "no counters recorded"


def telemetry_columns(p: PointResult) -> dict[str, Any]:
    """What the point recorded beside its latencies (validate's PointResult): the engine's counters in one line
    (EngineTelemetry.describe: running and waiting peaks, prefix-cache hit rate, preemptions, share of the point
    with the KV cache full, draft acceptance, flags), the GPUs' mean power and joules per output token, and the
    point's note on what is missing. Points measured before telemetry existed, and other tools' files, have none."""
    t, g = p.engine_telemetry, p.gpu_telemetry
    return {"engine_counters": t.describe() if t is not None else NO_COUNTERS,
            "gpu_mean_power_w": g.mean_power_w if g is not None else None,
            "gpu_joules_per_output_token": g.joules_per_output_token if g is not None else None,
            "telemetry_note": p.telemetry_note or ""}


def app_columns(compared: pd.DataFrame) -> pd.DataFrame:
    """validate compare's rows under the app's column names: the measured value as `metric`, the prediction as
    `pred_metric`, the error in per cent as `err_metric_pct` (predicted ÷ measured − 1)."""
    if compared.empty:
        return compared
    out = compared.copy()
    for pk in COMPARED.values():
        out[pk] = out.get(f"measured_{pk}")
        out[f"pred_{pk}"] = out.get(f"predicted_{pk}")
        out[f"err_{pk}_pct"] = out.get(f"error_{pk}") * 100 if f"error_{pk}" in out else np.nan
    out["pred_error"] = out["error"].fillna("") if "error" in out else ""
    return out


def typical_errors(compared: pd.DataFrame) -> dict[str, float]:
    """Mean |predicted ÷ measured − 1| per metric over the points (validate.compare.summarize), in per cent."""
    if compared.empty or "mode" not in compared:
        return {}
    ok = compared[compared["pred_error"] == ""] if "pred_error" in compared else compared
    summary = summarize(ok)
    if summary.empty:
        return {}
    row = summary.iloc[0]
    return {pk: float(row[f"mape_{pk}"]) * 100 for pk in COMPARED.values() if f"mape_{pk}" in row}
