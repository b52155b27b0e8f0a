"""The measured-here calibration policy as data: which committed runs each shipped calibration is fitted on,
which shapes are held out and which parameters a derived fit frees (data/measurements/h200/calibration-plan.toml).

    validate calibrate --plan data/measurements/h200/calibration-plan.toml [--out-dir capacity/calibrations]

scripts/accuracy_report.py runs the same plan and renders docs/accuracy.md from what it fitted.
"""

from __future__ import annotations

import glob
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from capacity.calibration import Calibration, Efficiency
from validate.errors import ValidateError

REPO = Path(__file__).resolve().parents[1]
PLAN_PATH = REPO / "data" / "measurements" / "h200" / "calibration-plan.toml"
CALIBRATIONS = REPO / "capacity" / "calibrations"


class MeasuredFit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    engine: str
    gpu: str
    precision: str
    data: str = Field(description="folder under the plan's own folder holding the engine version's runs")
    sittings: list[str] | Literal["all"] = Field(description="whole sittings fitted (or every run of `data`)")
    runs: list[str] = Field(default_factory=list, description="single runs (sitting-N/server) or shapes of a run "
                            "(sitting-N/server/ISLxOSL) fitted besides the sittings")
    max_tp: int = Field(default=1, ge=1)
    start: str | None = Field(default=None, description="an earlier fit whose factors and intervals this one starts from")
    free: list[str] | None = Field(default=None, description="the parameters refitted (None: every one the data identifies)")
    front_end: Literal["fit", "counters"] = Field(
        default="fit", description="counters: the front end (request_overhead_s, prompt_token_overhead_s) is read "
        "from the engine's own counters on the fitted runs' lone requests (validate.front_end) and held out of the fit")
    loads: list[Literal["sync", "concurrency", "burst", "rate"]] | None = Field(
        default=None, description="the load kinds fitted (None: every one); the rest of those runs' points are scored")
    source: str
    notes: str


class MeasuredConstant(BaseModel):
    """A parameter no fit frees, set by a script from named points (mla_layer_overhead_s, eager_mla_layer_overhead_s):
    those points trained it, so trains_on counts them as fitted and no table scores them as held out."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="the capacity.calibration.Efficiency field the points set")
    engine: str
    precision: str
    data: str = Field(description="folder under the plan's own folder holding the engine version's runs")
    runs: list[str] = Field(min_length=1, description="servers (sitting-N/server) or shapes (sitting-N/server/ISLxOSL)")
    loads: list[Literal["sync", "concurrency", "burst", "rate"]] | None = None
    max_tp: int = Field(default=1, ge=1)
    script: str = Field(description="what set the value from these points")
    source: str
    sittings: list[str] = Field(default_factory=list, max_length=0)  # runs only: fitted_run reads the same fields as a fit's


class MeasuredPlan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    holdout_shapes: list[str] = Field(min_length=1)
    fit: list[MeasuredFit] = Field(min_length=1)
    constant: list[MeasuredConstant] = Field(default_factory=list)

    def named(self, name: str) -> MeasuredFit:
        return next(f for f in self.fit if f.name == name)


def read_plan(path: Path) -> dict:
    """A calibration plan's TOML (this module's and validate/public/fit.py's); unreadable: a one-line ValidateError."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValidateError(f"{path}: cannot read the calibration plan: {exc}") from None


def load_measured_plan(path: Path | str = PLAN_PATH) -> MeasuredPlan:
    """The plan, checked: a bad file is a one-line ValidateError naming the field."""
    from validate.calibrate import BOUNDS

    path = Path(path)
    data = read_plan(path)
    try:
        plan = MeasuredPlan.model_validate(data)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise ValidateError(f"{path}: {'.'.join(map(str, e['loc']))}: {e['msg']}") from None
    names = [f.name for f in plan.fit]
    for i, shape in enumerate(plan.holdout_shapes):
        isl, _, osl = shape.partition("x")
        if not (isl.isdigit() and osl.isdigit() and int(isl) > 0 and int(osl) > 0):
            raise ValidateError(f"{path}: holdout_shapes.{i}: {shape!r} is not a shape ISLxOSL (e.g. 512x512)")
    for i, f in enumerate(plan.fit):
        if f.name in names[:i]:
            raise ValidateError(f"{path}: fit.{i}.name: {f.name!r} names an earlier fit too")
        if f.start is not None and f.start not in names[:i]:
            raise ValidateError(f"{path}: fit.{i}.start: {f.start!r} is not an earlier fit of the plan")
        unknown = sorted(set(f.free or ()) - set(BOUNDS))
        if unknown:
            raise ValidateError(f"{path}: fit.{i}.free: unknown parameters {unknown}")
    from capacity.calibration import Efficiency

    for i, c in enumerate(plan.constant):
        if c.name not in Efficiency.model_fields:
            raise ValidateError(f"{path}: constant.{i}.name: {c.name!r} is not a calibration parameter")
    return plan


def data_dir(plan_path: Path | str, fit: MeasuredFit | MeasuredConstant) -> Path:
    return (Path(plan_path).resolve().parent / fit.data).resolve()  # a symlinked data folder compares as its target


def fitted_run(plan_path: Path | str, fit: MeasuredFit | MeasuredConstant, run_dir: str | Path) -> bool:
    """Is this results folder (DATA/sitting-N/server/shape) one the fit trains on?"""
    parts = Path(run_dir).resolve().relative_to(data_dir(plan_path, fit)).parts
    return (fit.sittings == "all" or parts[0] in fit.sittings or "/".join(parts[:2]) in fit.runs
            or "/".join(parts[:3]) in fit.runs)


def trains_on(plan_path: Path | str, run_dir: str | Path, engine: str, precision: str, tp: int, load: str,
              plan: MeasuredPlan | None = None) -> bool:
    """Does any fit of the plan, or any constant it sets from named points, train on this point (its run, precision,
    TP and load kind, not a held-out shape)? Everything else is scored, never fitted. `plan`: the plan already read
    from plan_path (read here if None)."""
    plan = plan or load_measured_plan(plan_path)
    if Path(run_dir).name in plan.holdout_shapes:
        return False
    for f in [*plan.fit, *plan.constant]:
        if f.engine != engine or f.precision != precision or tp > f.max_tp:
            continue
        if f.loads is not None and load.split(":")[0] not in f.loads:
            continue
        try:
            if fitted_run(plan_path, f, run_dir):
                return True
        except ValueError:  # a folder outside this fit's data
            continue
    return False


def run_dirs(plan_path: Path | str, fit: MeasuredFit) -> list[str]:
    """Every results folder of the fit's engine version (warm-up folders aside)."""
    root = data_dir(plan_path, fit)
    return sorted(str(Path(p).parent) for p in glob.glob(str(root / "*/*/*/points.jsonl")) if "/warmup/" not in p)


def counted_front_end(path: Path | str, f: MeasuredFit, dirs: list[str], start: Efficiency | None
                      ) -> tuple[Efficiency, tuple[str, ...]]:
    """The fit's starting factors with the front end the engine's counters give on its training runs, and the
    parameters that holds out of the fit."""
    from validate.front_end import fit_front_end

    fe = fit_front_end(dirs)
    if fe is None:
        raise ValidateError(f"{path}: fit {f.name}: front_end = \"counters\" needs three or more lone-request points "
                            "with the engine's prefill counters among its fitted runs")
    eff = (start or Efficiency()).model_copy(update={"request_overhead_s": max(fe.fixed_s, 0.0),
                                                     "prompt_token_overhead_s": max(fe.per_prompt_token_s, 0.0)})
    return eff, ("request_overhead_s", "prompt_token_overhead_s")


def run_measured_plan(path: Path | str = PLAN_PATH, out_dir: Path | str | None = CALIBRATIONS
                      ) -> tuple[dict[str, Calibration], dict[str, dict]]:
    """Fit every calibration of the plan in order; write each to out_dir (None: write nothing). Returns the
    calibrations and the held-out report of each, by fit name."""
    from validate.calibrate import calibrate
    from validate.compare import load_run

    plan = load_measured_plan(path)
    cals: dict[str, Calibration] = {}
    reports: dict[str, dict] = {}
    for f in plan.fit:
        dirs = [d for d in run_dirs(path, f) if fitted_run(path, f, d)]
        dirs = [d for d in dirs if load_run(d).scenario.get("engine") == f.engine
                and load_run(d).scenario.get("tp", 1) <= f.max_tp]
        if not dirs:
            raise ValidateError(f"{path}: fit {f.name}: no results folders under {data_dir(path, f)}")
        start = cals[f.start] if f.start else None
        start_eff, hold, also = start.efficiency if start else None, (), ()
        if f.front_end == "counters":  # the front end read, not fitted; the idle engine's step cost fitted instead
            trained = [d for d in dirs if Path(d).name not in plan.holdout_shapes]  # held-out shapes stay unread
            start_eff, hold = counted_front_end(path, f, trained, start_eff)
            also = ("idle_step_s",)
        cal, rep = calibrate(dirs, f.engine, f.gpu, f.precision, plan.holdout_shapes, source=f.source,
                             start=start_eff, only=tuple(f.free) if f.free is not None else None,
                             base_residuals=start.residuals if start else None,
                             loads=tuple(f.loads) if f.loads is not None else None, hold=hold, also=also)
        cal = cal.model_copy(update={"notes": f.notes})
        if out_dir is not None:
            (Path(out_dir) / f"{cal.engine}--{cal.gpu}--{cal.precision}.json").write_text(cal.model_dump_json(indent=1) + "\n")
        cals[f.name], reports[f.name] = cal, rep
    return cals, reports
