"""A fleet plan (TOML or YAML): the axes whose product are the jobs, the exclusions, the load of every job, and
how jobs ask Ray for resources (docs/fleet.md). jobs.py expands it.

Bad input is one PlanError ``FILE: field: what was expected``.
"""

from __future__ import annotations

import math

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

import capacity.engines as capacity_engines
from capacity.loads.draws import GAMMA_SHAPE_MAX, GAMMA_SHAPE_MIN, SEED_MAX
from validate.errors import UsageError, one_line
from validate.profiles import parse_profile

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

# Plan precision names -> `validate run` options. Names are the capacity model's (Scenario.precision).
PRECISIONS: dict[str, dict[str, str]] = {"auto": {}, "bf16": {"dtype": "bfloat16"}, "fp16": {"dtype": "float16"},
                                         "fp8": {"quantization": "fp8"}}
KV_PRECISIONS: dict[str, dict[str, str]] = {"auto": {}, "bf16": {}, "fp8": {"kv_cache_dtype": "fp8"}}
RUN_FLAGS = {"dtype": "--dtype", "quantization": "--quantization", "kv_cache_dtype": "--kv-cache-dtype"}


class PlanError(UsageError):
    """A plan file that cannot be read, or a field in it that is not what was expected."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Shape(Strict):
    isl: int = Field(gt=0, description="input tokens per request (mean)")
    osl: int = Field(gt=0, description="output tokens per request (mean)")
    length_dist: str = "fixed"


class Axes(Strict):
    """Each field is a list of values; the jobs are the product of all of them."""

    model: list[str] = Field(min_length=1, description="catalog id, config.json or model folder")
    engine: list[str] = Field(default=["vllm"], min_length=1)
    gpu: list[str | None] = Field(default=[None], min_length=1, description="hardware catalog id (h200-sxm, ...)")
    precision: list[str] = Field(default=["auto"], min_length=1)
    kv_precision: list[str] = Field(default=["auto"], min_length=1)
    tp: list[Annotated[int, Field(ge=1, le=1024)]] = Field(default=[1], min_length=1)
    expert_parallel: list[bool] = Field(default=[False], min_length=1)
    max_num_seqs: list[Annotated[int, Field(ge=1, le=10_000_000)] | None] = Field(default=[None], min_length=1)
    max_model_len: list[Annotated[int, Field(ge=1, le=100_000_000)] | None] = Field(default=[None], min_length=1)
    gpu_memory_utilization: list[Annotated[float, Field(gt=0, le=1)] | None] = Field(default=[None], min_length=1)
    engine_args: list[list[str]] = Field(default=[[]], min_length=1, description="extra engine flags, per value")
    engine_python: list[str | None] = Field(default=[None], min_length=1)
    shape: list[Shape] = Field(min_length=1)

    @field_validator("precision")
    @classmethod
    def _precision(cls, v: list[str]) -> list[str]:
        return _known(v, PRECISIONS)

    @field_validator("kv_precision")
    @classmethod
    def _kv_precision(cls, v: list[str]) -> list[str]:
        return _known(v, KV_PRECISIONS)

    @field_validator("engine")
    @classmethod
    def _engine(cls, v: list[str]) -> list[str]:
        names = capacity_engines.names()
        if bad := [e for e in v if e not in names]:
            raise ValueError(f"unknown engine {bad[0]!r}; choose from {', '.join(names)}")
        return v


def _known(values: list[str], table: dict[str, Any]) -> list[str]:
    if bad := [p for p in values if p not in table]:
        raise ValueError(f"unknown precision {bad[0]!r}; choose from {', '.join(table)}")
    return values


AXES = tuple(Axes.model_fields)


class Load(Strict):
    """The load points of every job (``validate run``'s workload and load options)."""

    profile: str = "sweep"
    num_requests: int | None = Field(default=None, gt=0)
    duration_s: float | None = Field(default=None, gt=0)
    warmup: int = Field(default=2, ge=0)
    burst_size: int | None = Field(default=None, gt=0)
    sweep_rates: int = Field(default=5, ge=0)
    arrivals: Literal["constant", "poisson", "gamma"] = "constant"
    gamma_shape: float | None = Field(default=None, ge=GAMMA_SHAPE_MIN, le=GAMMA_SHAPE_MAX, description="with arrivals gamma")
    max_concurrency: int | None = Field(default=None, gt=0)
    seed: int = Field(default=0, ge=0, le=SEED_MAX)
    request_timeout_s: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _gamma(self) -> "Load":
        if self.gamma_shape is not None and self.arrivals != "gamma":
            raise ValueError(f"gamma_shape {self.gamma_shape:g} needs arrivals gamma (got {self.arrivals})")
        return self

    @field_validator("profile")
    @classmethod
    def _profile(cls, v: str) -> str:
        try:
            parse_profile(v)
        except UsageError as err:
            raise ValueError(str(err).removeprefix("--profile ")) from None
        return v


JOBS_MAX = 10_000  # configurations of one plan: each is an engine start of minutes


class FleetPlan(Strict):
    name: str = "fleet"
    axes: Axes
    exclude: list[dict[str, Any]] = Field(default_factory=list, description="configurations left out")
    load: Load = Field(default_factory=Load)
    devices: Literal["gpu", "cpu"] = Field("gpu", description="cpu: jobs ask Ray for no GPU (the CPU build)")
    num_cpus_per_job: float = Field(1.0, ge=0)
    gpu_resources: dict[str, str] = Field(default_factory=dict, description="gpu id -> Ray custom resource "
                                          "per GPU of that kind (e.g. h200-sxm = 'H200'); a job asks tp of them")
    served_model_name: str | None = None
    startup_timeout_s: float = Field(900.0, gt=0)
    env: dict[str, str] = Field(default_factory=dict, description="extra environment of every job")

    @model_validator(mode="after")
    def _excludes(self) -> FleetPlan:
        for i, entry in enumerate(self.exclude):
            if not entry:
                raise ValueError(f"exclude[{i}] is empty (it would drop every configuration)")
            if bad := [k for k in entry if k not in AXES]:
                raise ValueError(f"exclude[{i}].{bad[0]}: not an axis (axes: {', '.join(AXES)})")
        product = math.prod(len(getattr(self.axes, a)) for a in AXES)
        if product > JOBS_MAX:
            raise ValueError(f"axes: {product:,} configurations before exclusions (at most {JOBS_MAX:,}: one engine "
                             "start each)")
        return self


def load_plan(path: str | Path) -> FleetPlan:
    """Read and check a .toml, .yaml or .yml plan; PlanError on one line naming the file and the field."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise PlanError(f"{path}: cannot read: {one_line(err)}") from None
    try:
        if path.suffix in (".yaml", ".yml"):
            import yaml  # lazy: only YAML plans need it

            raw = yaml.safe_load(text)
        else:
            raw = tomllib.loads(text)
    except Exception as err:  # tomllib.TOMLDecodeError, yaml.YAMLError: both say line and column
        raise PlanError(f"{path}: not valid {'YAML' if path.suffix in ('.yaml', '.yml') else 'TOML'}: "
                        f"{one_line(err)}") from None
    if not isinstance(raw, dict):
        raise PlanError(f"{path}: expected a table of plan fields at the top")
    try:
        return FleetPlan.model_validate(raw)
    except ValidationError as err:
        raise PlanError(f"{path}: {one_line(err)}") from None
