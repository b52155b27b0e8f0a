"""A plan's jobs: one per engine configuration and shape, with its `validate run` command and Ray resources.

The jobs are the product of the plan's axes, minus the configurations an ``[[exclude]]`` entry matches (every key of
the entry matches; a list value matches any of its items). A job is what one ``validate run`` measures: one engine
configuration on one workload shape (``validate run`` keeps one workload per folder), with the plan's load profile.
Its id is a hash of its configuration as written in the plan, so it is stable across reruns, machines and the order
of the axes; the load profile is not part of it (a guided run and a later full ladder share the folder and points).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import re
import shlex
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

import capacity.engines as capacity_engines
from validate.fleet.plan import AXES, KV_PRECISIONS, PRECISIONS, RUN_FLAGS, FleetPlan, PlanError, Strict
from validate.profiles import LoadOptions, parse_profile


class Job(Strict):
    job_id: str
    config: dict[str, Any] = Field(description="the axis values of this job, as written in the plan")
    argv: list[str] = Field(description="`validate run` arguments, without --out")
    profile: str
    num_points: int = Field(description="load points the profile measures")
    num_gpus: float
    num_cpus: float
    resources: dict[str, float] = Field(default_factory=dict)


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
    if load.arrivals == "gamma" and load.gamma_shape is not None:
        argv += ["--gamma-shape", repr(load.gamma_shape)]
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
                       gamma_shape=load.gamma_shape or 1.0, max_concurrency=load.max_concurrency, seed=load.seed)
