"""Calibrations per (engine, GPU, weight format) fitted on the public corpus, as a committed plan declares
(data/public/calibration-plan.toml: which rows train each fit, which parameters it frees); every other row is held
out. The fit is validate.calibrate's (weighted log errors, bounded least squares), on samples planned once.

    validate calibrate --public-plan data/public/calibration-plan.toml [--out-dir capacity/calibrations]
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from capacity.calibration import Calibration, shipped_calibrations
from capacity.errors import CapacityError
from capacity.estimate import Scenario
from validate.calibrate import BOUNDS, Sample, fit, residual_stats
from validate.calibration_plan import read_plan
from validate.errors import ValidateError
from validate.public.scenario import estimate_metric, scenario_for
from validate.public.schema import Row

PLAN_PATH = Path(__file__).resolve().parents[2] / "data" / "public" / "calibration-plan.toml"
SOURCE_TAG = "data/public"  # in a calibration's source: the card's "calibrated-on-public-data" domain


class FitSpec(BaseModel):
    """One calibration to fit: its key, its training rows, the parameters freed and where the rest come from."""

    model_config = ConfigDict(extra="forbid")

    engine: str
    gpu: str
    precision: str
    start: str = Field(description="shipped calibration (ENGINE--GPU--PRECISION) the unfreed factors come from")
    train_sources: list[str] = Field(min_length=1)
    train_models: list[str] = Field(min_length=1)
    max_pp: int = Field(default=1, ge=1)
    free: list[str] = Field(min_length=1)
    fixed: dict[str, float] = Field(default_factory=dict, description="factors set before the fit, not fitted")

    def key(self) -> str:
        return f"{self.engine}--{self.gpu}--{self.precision}"

    def trains_on(self, r: Row) -> bool:
        return (r.engine == self.engine and r.gpu == self.gpu and r.weight_precision == self.precision
                and r.source_id in self.train_sources and r.model in self.train_models and r.pp <= self.max_pp
                and r.metric != "e2e_latency_s")


def load_plan(path: Path | str = PLAN_PATH) -> list[FitSpec]:
    """The plan's fits (each [[fit]] over [defaults]); a bad file is a one-line ValidateError naming the field."""
    path = Path(path)
    data = read_plan(path)
    defaults = data.get("defaults", {})
    fits = data.get("fit")
    if not isinstance(defaults, dict) or not isinstance(fits, list) or not fits:
        raise ValidateError(f"{path}: expected a [defaults] table and at least one [[fit]]")
    out = []
    for i, f in enumerate(fits):
        try:
            spec = FitSpec.model_validate({**defaults, **f})
        except (ValidationError, TypeError) as exc:
            first = exc.errors()[0] if isinstance(exc, ValidationError) else {"loc": (), "msg": str(exc)}
            raise ValidateError(f"{path}: fit {i + 1}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
        unknown = sorted(set(spec.free) - set(BOUNDS))
        if unknown:
            raise ValidateError(f"{path}: fit {i + 1}: free: unknown parameters {unknown}")
        unknown = sorted(set(spec.fixed) - set(BOUNDS))
        if unknown or set(spec.fixed) & set(spec.free):
            raise ValidateError(f"{path}: fit {i + 1}: fixed: {unknown or 'a parameter also freed'}: expected "
                                "parameters that are not freed")
        out.append(spec)
    return out


def training_rows(plan: list[FitSpec], rows: list[Row]) -> dict[str, list[Row]]:
    return {spec.key(): [r for r in rows if spec.trains_on(r)] for spec in plan}


def fitted_row_ids(plan: list[FitSpec] | None = None, rows: list[Row] | None = None) -> set[str]:
    """Rows some plan fit trains on: never scored as held out."""
    from validate.public.build import load_rows
    from validate.public.common import ROWS_PATH

    plan = load_plan() if plan is None else plan
    rows = load_rows(ROWS_PATH) if rows is None else rows
    return {r.row_id for group in training_rows(plan, rows).values() for r in group}


def samples_of(rows: list[Row]) -> list[Sample]:
    out = []
    for r in rows:
        fields, _ = scenario_for(r)
        metric, value = estimate_metric(r)
        fields["method"] = "closed-form"  # the fit prices with the closed forms (fast)
        out.append(Sample.planned(r.row_id, f"{r.isl}x{r.osl}", Scenario(**fields), {metric: value}))
    return [s for s in out if s.plan is not None]


def fit_one(spec: FitSpec, rows: list[Row]) -> Calibration:
    start = shipped_calibrations().get(tuple(spec.start.split("--")))
    if start is None:
        raise ValidateError(f"calibration plan: start {spec.start!r} is not a shipped calibration")
    train = samples_of([r for r in rows if spec.trains_on(r)])
    if len(train) < 2 * len(spec.free):
        raise ValidateError(f"calibration plan: {spec.key()}: {len(train)} training rows for {len(spec.free)} "
                            "parameters: too few to fit")
    eff = fit(train, start.efficiency.model_copy(update=spec.fixed), tuple(spec.free), extra_starts=False)
    stats = residual_stats(train, eff)
    sources = ", ".join(spec.train_sources)
    return Calibration(
        engine=spec.engine, gpu=spec.gpu, precision=spec.precision, efficiency=eff, residuals=stats,
        fitted_on=sorted(s.label for s in train), held_out=[],
        source=(f"fitted on public data ({SOURCE_TAG}/rows.jsonl, plan {SOURCE_TAG}/calibration-plan.toml): "
                f"{len(train)} offline-throughput rows of {sources} ({', '.join(m.split('/')[1] for m in spec.train_models)}); "
                f"freed {', '.join(spec.free)}; "
                + (f"set {', '.join(f'{k}={v:g}' for k, v in spec.fixed.items())}; " if spec.fixed else "")
                + f"the rest from {spec.start}; every other row held out"),
        notes=("Calibrated on published measurements, not measured here: throughput rows only, so its TTFT and "
               "ITL are extrapolations. Its held-out error is in docs/public-corpus.md."),
        created=str(date.today()))


def run_plan(path: Path | str = PLAN_PATH, out_dir: Path | str | None = None) -> list[Calibration]:
    from validate.public.build import load_rows
    from validate.public.common import ROWS_PATH

    plan = load_plan(path)
    rows = load_rows(ROWS_PATH)
    out_dir = Path(out_dir) if out_dir else Path(__file__).resolve().parents[2] / "capacity" / "calibrations"
    cals = []
    for spec in plan:
        try:
            cal = fit_one(spec, rows)
        except CapacityError as exc:
            raise ValidateError(f"calibration plan: {spec.key()}: {exc}") from None
        (out_dir / f"{spec.key()}.json").write_text(cal.model_dump_json(indent=1) + "\n")
        cals.append(cal)
        print(f"{spec.key()}: fitted on {len(cal.fitted_on)} rows; "
              + ", ".join(f"{n}={getattr(cal.efficiency, n):.4g}" for n in spec.free), flush=True)
    return cals
