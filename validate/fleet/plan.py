"""A fleet plan (TOML or YAML) and its expansion into jobs: one job per engine configuration and shape.

The plan names axes; the jobs are their product, minus the configurations matched by an ``[[exclude]]`` entry
(every key of the entry matches; a list value matches any of its items). A job is what one ``validate run``
measures: one engine configuration on one workload shape (``validate run`` keeps one workload per folder), with
the plan's load profile. Its id is a hash of its configuration as written in the plan, so it is stable across
reruns, machines and the order of the axes; the load profile is not part of it (a guided run and a later full
grid share the folder and its points).

Bad input is one PlanError ``FILE: field: what was expected``.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import re
import shlex
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

import capacity.engines as capacity_engines
from validate.errors import UsageError, one_line
from validate.profiles import LoadOptions, parse_profile

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
    tp: list[int] = Field(default=[1], min_length=1)
    expert_parallel: list[bool] = Field(default=[False], min_length=1)
    max_num_seqs: list[int | None] = Field(default=[None], min_length=1)
    max_model_len: list[int | None] = Field(default=[None], min_length=1)
    gpu_memory_utilization: list[float | None] = Field(default=[None], min_length=1)
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

    @field_validator("tp")
    @classmethod
    def _tp(cls, v: list[int]) -> list[int]:
        if any(t < 1 for t in v):
            raise ValueError("tensor-parallel sizes are at least 1")
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
    arrivals: Literal["constant", "poisson"] = "constant"
    max_concurrency: int | None = Field(default=None, gt=0)
    seed: int = 0
    request_timeout_s: float | None = Field(default=None, gt=0)

    @field_validator("profile")
    @classmethod
    def _profile(cls, v: str) -> str:
        try:
            parse_profile(v)
        except UsageError as err:
            raise ValueError(str(err).removeprefix("--profile ")) from None
        return v


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
        return self


class Job(Strict):
    job_id: str
    config: dict[str, Any] = Field(description="the axis values of this job, as written in the plan")
    argv: list[str] = Field(description="`validate run` arguments, without --out")
    profile: str
    num_points: int = Field(description="load points the profile measures")
    num_gpus: float
    num_cpus: float
    resources: dict[str, float] = Field(default_factory=dict)


def load_plan(path: str | Path) -> FleetPlan:
    """Read and check a .toml, .yaml or .yml plan; PlanError on one line naming the file and the field."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
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


def _matches(entry: dict[str, Any], config: dict[str, Any]) -> bool:
    for key, want in entry.items():
        have = config[key]
        if key == "engine_args" and isinstance(want, list) and all(isinstance(w, str) for w in want):
            want = [want]  # one flag list, not a list of alternatives
        options = want if isinstance(want, list) else [want]
        if have not in options:
            return False
    return True


@functools.lru_cache(maxsize=4096)
def _resolve(value: str | None, base: Path) -> str | None:
    """A relative path that exists beside the plan becomes absolute (jobs run in other folders)."""
    if value is None or value.startswith("/") or not (base / value).exists():
        return value
    return str((base / value).resolve())


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text.rstrip("/").split("/")[-1]).strip("-").lower()[:40] or "job"


def job_id(config: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(config, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return f"{_slug(config['engine'])}-{_slug(config['model'])}-{digest[:10]}"


@functools.lru_cache(maxsize=4096)
def num_points(profile: str, sweep_rates: int) -> int:
    points = parse_profile(profile)
    return 2 + sweep_rates if points == "sweep" else len(points)


def run_argv(plan: FleetPlan, config: dict[str, Any], profile: str, base: Path) -> list[str]:
    """The `validate run` command of one configuration (without --out)."""
    shape = config["shape"]
    argv = ["run", "--engine", config["engine"], "--model", _resolve(config["model"], base) or "",
            "--isl", str(shape["isl"]), "--osl", str(shape["osl"]), "--length-dist", shape["length_dist"],
            "--profile", profile, "--startup-timeout-s", f"{plan.startup_timeout_s:g}"]
    options = {**PRECISIONS[config["precision"]], **KV_PRECISIONS[config["kv_precision"]]}
    argv += [part for k, v in options.items() for part in (RUN_FLAGS[k], v)]
    for key in ("max_num_seqs", "max_model_len", "gpu_memory_utilization"):
        if config[key] is not None:
            argv += [f"--{key.replace('_', '-')}", f"{config[key]:g}" if isinstance(config[key], float)
                     else str(config[key])]
    if config["tp"] != 1:
        argv += ["--tp", str(config["tp"])]
    if config["gpu"]:
        argv += ["--gpu", config["gpu"]]
    engine_args = list(config["engine_args"])
    if config["expert_parallel"]:
        try:
            engine_args += capacity_engines.get(config["engine"]).flags.argv({"expert_parallel": True})
        except KeyError:
            raise PlanError(f"axes.expert_parallel: engine {config['engine']} has no expert-parallel flag") from None
    if engine_args:
        argv.append(f"--engine-arg={shlex.join(engine_args)}")
    if python := _resolve(config["engine_python"], base):
        argv += ["--engine-python", python]
    if plan.served_model_name:
        argv += ["--served-model-name", plan.served_model_name]
    load = plan.load
    for key in ("num_requests", "duration_s", "burst_size", "max_concurrency", "request_timeout_s"):
        value = getattr(load, key)
        if value is not None:
            argv += [f"--{key.replace('_', '-')}", f"{value:g}" if isinstance(value, float) else str(value)]
    argv += ["--warmup", str(load.warmup), "--sweep-rates", str(load.sweep_rates), "--arrivals", load.arrivals,
             "--seed", str(load.seed)]
    return argv


def configurations(plan: FleetPlan) -> list[dict[str, Any]]:
    """The product of the axes minus the excluded configurations, in axis order."""
    values = [[v.model_dump() if isinstance(v, BaseModel) else v for v in getattr(plan.axes, a)] for a in AXES]
    out = []
    for combo in itertools.product(*values):
        config = dict(zip(AXES, combo))
        if not any(_matches(entry, config) for entry in plan.exclude):
            out.append(config)
    return out


def expand(plan: FleetPlan, base: Path | str = ".", profiles: dict[str, str] | None = None) -> list[Job]:
    """One Job per configuration. ``profiles`` (job id -> profile) overrides the plan's (model-guided points)."""
    base = Path(base)
    jobs, seen = [], set()
    for config in configurations(plan):
        jid = job_id(config)
        if jid in seen:  # an axis listing one value twice
            continue
        seen.add(jid)
        profile = (profiles or {}).get(jid, plan.load.profile)
        gpus = 0.0 if plan.devices == "cpu" else float(config["tp"])
        kind = plan.gpu_resources.get(config["gpu"] or "")
        jobs.append(Job(job_id=jid, config=config, argv=run_argv(plan, config, profile, base), profile=profile,
                        num_points=num_points(profile, plan.load.sweep_rates), num_gpus=gpus, num_cpus=plan.num_cpus_per_job,
                        resources={kind: float(config["tp"])} if kind and plan.devices == "gpu" else {}))
    return jobs


def load_options(plan: FleetPlan) -> LoadOptions:
    """The LoadOptions `validate run` builds from the plan's load (for resume checks)."""
    load = plan.load
    num_requests = load.num_requests if load.num_requests or load.duration_s else 100
    return LoadOptions(num_requests=num_requests, duration_s=load.duration_s, warmup=load.warmup,
                       burst_size=load.burst_size, sweep_rates=load.sweep_rates, arrivals=load.arrivals,
                       max_concurrency=load.max_concurrency, seed=load.seed)
