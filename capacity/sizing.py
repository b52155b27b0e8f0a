"""GPUs needed for a target request rate under TTFT and ITL objectives: find the highest rate one
replica serves within the objectives (a vectorized scan of arrival rates), then add replicas."""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, ConfigDict

from capacity.errors import CapacityError, WorkloadError
from capacity.estimate import Scenario, calibration_for, plan_for, run_load
from capacity.hardware import load_gpu


class SizingOption(BaseModel):
    model_config = ConfigDict(frozen=True)
    tp: int
    fits: bool
    reason: str = ""
    max_rps_per_replica: float = 0.0
    ttft_s_at_max: float | None = None
    itl_s_at_max: float | None = None
    replicas: int | None = None
    num_gpus: int | None = None
    usd_per_hour: float | None = None


def max_rate_within_slo(plan, cal, s: Scenario, ttft_slo_s: float, itl_slo_s: float, points: int = 400):
    """The highest arrival rate one replica takes within the objectives, with its TTFT and ITL there. A pipeline's
    replica is pp lanes, all busy at such rates, paced by its slowest stage (capacity.estimate.pipeline_paced)."""
    cap = run_load(plan, cal, s, s.isl, s.osl, "burst", 10**6)
    rates = np.linspace(0.0, 1.0, points + 1)[1:] * float(cap.requests_per_s)
    r = run_load(plan, cal, s, s.isl, s.osl, "rate", rates)
    pace = plan.pipeline_pace(plan.pp)
    itl = np.asarray(r.itl_s) * pace
    ok = (r.ttft_s <= ttft_slo_s) & (itl <= itl_slo_s) & ~np.asarray(r.saturated, dtype=bool)
    if not ok.any():
        return 0.0, None, None
    i = int(np.flatnonzero(ok)[-1])
    return float(rates[i]) * plan.pp / pace, float(r.ttft_s[i]), float(itl[i])


def size(s: Scenario, target_rps: float, ttft_slo_s: float, itl_slo_s: float, tps: list[int]) -> list[SizingOption]:
    for name, v in (("target_rps", target_rps), ("ttft_slo_s", ttft_slo_s), ("itl_slo_s", itl_slo_s)):
        if not (math.isfinite(v) and v > 0):
            raise WorkloadError(f"{name}: the target rate and objectives must be positive finite numbers, got {v!r}")
    if not tps or any(isinstance(t, bool) or not isinstance(t, int) or not 1 <= t <= 1024 for t in tps):
        raise WorkloadError(f"tps: expected one or more tensor-parallel sizes from 1 to 1,024, got {list(tps)[:10]!r}")
    gpu = load_gpu(s.gpu)
    price = s.price_usd_per_gpu_hour or gpu.price_usd_per_gpu_hour
    options = []
    for tp in tps:
        sc = s.model_copy(update={"tp": tp, "num_gpus": tp * s.pp})
        try:
            plan = plan_for(sc)  # the same plan and calibration `capacity estimate` would use at this TP
        except CapacityError as exc:
            options.append(SizingOption(tp=tp, fits=False, reason=str(exc)))
            continue
        cal = calibration_for(sc, plan)
        rate, ttft, itl = max_rate_within_slo(plan, cal, sc, ttft_slo_s, itl_slo_s)
        if rate <= 0:
            options.append(SizingOption(tp=tp, fits=True, reason="no rate meets the objectives on one replica"))
            continue
        replicas = math.ceil(target_rps / rate)
        options.append(SizingOption(tp=tp, fits=True, max_rps_per_replica=rate, ttft_s_at_max=ttft, itl_s_at_max=itl,
                                    replicas=replicas, num_gpus=replicas * tp * s.pp,
                                    usd_per_hour=price * replicas * tp * s.pp if price else None))
    return options


def size_layouts(s: Scenario, target_rps: float, ttft_slo_s: float, itl_slo_s: float, tps: list[int], *,
                 link: str = "auto", transfer: str = "overlapped", router: str = "round-robin",
                 prefix_groups: float = 64, prefill_max_num_batched_tokens: int | None = None,
                 decode_max_num_seqs: int | None = None):
    """`capacity size --disagg`: aggregated replicas and xPyD layouts searched together (capacity.disagg.search);
    the aggregated answer above is left as it is."""
    from capacity.disagg import search

    return search(s, target_rps, ttft_slo_s, itl_slo_s, tps, link=link, transfer=transfer, router=router,
                  prefix_groups=prefix_groups, prefill_max_num_batched_tokens=prefill_max_num_batched_tokens,
                  decode_max_num_seqs=decode_max_num_seqs)
