"""Model-guided points (``validate fleet --guided K``): per job, K of the plan's candidate loads, where the capacity
model is least sure, in that order (they are measured first, and alone: the job's profile becomes those K).

The plan's profile lists the candidates (``concurrency:1,2,4,...`` or ``rate:...``). For each candidate the
model's estimate (capacity.estimate, the public API) gives a 90 % interval per metric: the accuracy card's where
it has one, else the calibration's. The card's intervals are per slice (engine x GPU class x model class x load
regime), so along one ladder of one regime they are nearly the same width; what varies is where the model's own
answer turns. The score therefore widens the card's interval where the model is structurally least sure:

    score(x) = w(x) * (1 + near(x, knee) + near(running(x), kv_limit))
    w(x)          = mean over throughput and ITL of ln(hi / lo) of the 90 % interval
    knee          = the load where d ln(requests/s) / d ln(load) falls through 1/2 (interpolated in ln load)
    kv_limit      = the requests that fit in the KV cache at once (Estimate.max_concurrent_requests)
    near(a, b)    = exp(-(ln a - ln b)^2 / (2 ln(2)^2))   (1 at b, 1/2 at a factor 2.2 away)

Points are picked greedily: the highest score first, then the highest score times a spacing factor that is 0 at
an already picked load and 1 far from it, so K picks do not crowd one spot. Nothing here is measured: it only
chooses where to measure. The plain grid of the same budget is K loads evenly spaced over the candidate list.
"""

from __future__ import annotations

import math
from typing import Any

from validate.fleet.jobs import Job
from validate.fleet.plan import KV_PRECISIONS, FleetPlan, PlanError
from validate.profiles import parse_profile

SIGMA = math.log(2.0)


def candidates(plan: FleetPlan) -> tuple[str, list[float]]:
    points = parse_profile(plan.load.profile)
    if points == "sweep" or points[0].kind not in ("concurrency", "rate"):
        raise PlanError(f"load.profile {plan.load.profile!r}: --guided picks from a list of concurrencies or "
                        "rates (concurrency:1,2,4,... or rate:...)")
    return points[0].kind, [float(p.value or 0) for p in points]


def _near(a: float, b: float) -> float:
    if a <= 0 or b <= 0:
        return 0.0
    return math.exp(-((math.log(a) - math.log(b)) ** 2) / (2 * SIGMA**2))


def knee(loads: list[float], requests_per_s: list[float]) -> float:
    """The load where the log-log slope of throughput vs load falls through 1/2 (the ends if it never does)."""
    logs = [math.log(x) for x in loads]
    for i in range(len(loads) - 1):
        t0, t1 = max(requests_per_s[i], 1e-300), max(requests_per_s[i + 1], 1e-300)
        slope = (math.log(t1) - math.log(t0)) / (logs[i + 1] - logs[i])
        if slope <= 0.5:
            return math.exp((logs[i] + logs[i + 1]) / 2)
    return loads[-1]


def scenario_fields(job: Job, kind: str, value: float) -> dict[str, Any]:
    c = job.config
    if not c["gpu"]:
        raise PlanError(f"job {job.job_id}: --guided asks the capacity model, which needs axes.gpu (a hardware "
                        "catalog id such as h200-sxm)")
    load = f"concurrency:{int(value)}" if kind == "concurrency" else f"rate:{value:g}"
    fields = dict(model=c["model"], gpu=c["gpu"], num_gpus=c["tp"], tp=c["tp"],
                  expert_parallel=c["expert_parallel"], engine=c["engine"], isl=c["shape"]["isl"],
                  osl=c["shape"]["osl"], load=load,
                  precision="bf16" if c["precision"] in ("auto", "fp16") else c["precision"],
                  kv_precision="fp8" if KV_PRECISIONS[c["kv_precision"]] else "bf16")
    for key in ("max_num_seqs", "max_model_len", "gpu_memory_utilization"):
        if c[key] is not None:
            fields[key] = c[key]
    return fields


def scores(job: Job, kind: str, loads: list[float]) -> list[dict[str, float]]:
    """Per candidate: the load, the model's requests/s, interval width w, knee and KV nearness, and the score."""
    from capacity import Scenario, estimate  # lazy: the capacity model (sympy, pandas) only for --guided

    estimates = []
    for x in loads:
        try:
            estimates.append(estimate(Scenario(**scenario_fields(job, kind, x))))
        except Exception as err:  # CapacityError (does not fit, unknown model) or a bad field
            raise PlanError(f"job {job.job_id}: the capacity model cannot price {kind}:{x:g}: "
                            f"{type(err).__name__}: {' '.join(str(err).split())[:200]}") from None
    k = knee(loads, [e.requests_per_s for e in estimates])
    rows = []
    for x, e in zip(loads, estimates):
        intervals = e.card.intervals if e.card and e.card.intervals else e.intervals
        widths = [math.log(hi / lo) for name, (lo, hi) in intervals.items()
                  if name in ("requests_per_s", "itl_s") and lo > 0 and hi > lo]
        w = sum(widths) / len(widths) if widths else 1.0
        near_knee = _near(x, k)
        near_kv = _near(e.running_requests, float(e.max_concurrent_requests))
        rows.append({"load": x, "requests_per_s": e.requests_per_s, "width": w, "near_knee": near_knee,
                     "near_kv": near_kv, "score": w * (1 + near_knee + near_kv), "knee": k,
                     "kv_limit": float(e.max_concurrent_requests)})
    return rows


def pick(rows: list[dict[str, float]], budget: int) -> list[float]:
    """K loads, most uncertain first, spaced apart."""
    picked: list[float] = []
    left = list(rows)
    while left and len(picked) < budget:
        def value(r: dict[str, float]) -> float:
            spacing = math.prod(1 - _near(r["load"], p) for p in picked)
            return r["score"] * spacing
        best = max(left, key=value)
        picked.append(best["load"])
        left.remove(best)
    return picked


def grid(loads: list[float], budget: int) -> list[float]:
    """The plain grid of the same budget: K loads evenly spaced over the candidate list."""
    if budget >= len(loads):
        return list(loads)
    if budget == 1:
        return [loads[len(loads) // 2]]
    return [loads[round(i * (len(loads) - 1) / (budget - 1))] for i in range(budget)]


def profile(kind: str, loads: list[float]) -> str:
    return f"{kind}:" + ",".join(f"{int(x)}" if kind == "concurrency" else f"{x:g}" for x in loads)


def guided_profiles(plan: FleetPlan, jobs: list[Job], budget: int) -> dict[str, str]:
    """Job id -> the profile of its K guided points."""
    kind, loads = candidates(plan)
    return {job.job_id: profile(kind, pick(scores(job, kind, loads), budget)) for job in jobs}
