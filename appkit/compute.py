"""What the page shows, computed with the capacity model's public API (no Streamlit here, so each piece is
testable and cacheable). SI units inside; the page converts for display."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from capacity import Scenario, estimate
from capacity.errors import CapacityError
from capacity.model.formulas import compiled
from capacity.hardware import load_gpu
from capacity.model.kv import attended_tokens_prefill
from capacity.estimate import calibration_for, pipeline_paced, plan_for, run_load, simulated_load, simulation_reasons
from capacity.sizing import max_rate_within_slo, size
from capacity.model.steptime import step_parts


@dataclass(frozen=True)
class Headline:
    """The numbers of the metrics row, for the whole deployment (all replicas) unless named per replica."""

    fits: bool
    reason: str
    max_concurrent_users: int
    kv_capacity_tokens: int
    replicas: int
    # at the objectives: the highest arrival rate whose TTFT and ITL meet them (None: no rate does)
    rate_per_replica: float | None
    requests_per_s: float | None
    output_tokens_per_s: float | None
    total_tokens_per_s: float | None
    ttft_s: float | None
    itl_s: float | None
    usd_per_million_output_tokens: float | None
    usd_per_million_total_tokens: float | None
    power_w: float | None  # predicted mean power of all GPUs at that rate (capacity/model/power.py)
    joules_per_output_token: float | None
    # one request alone (sync): the best latency the deployment gives
    sync_ttft_s: float
    sync_itl_s: float
    # the ceiling: every KV slot busy
    max_requests_per_s: float
    max_output_tokens_per_s: float
    # for the target rate
    target_rps: float
    gpus_for_target: int | None
    replicas_for_target: int | None
    usd_per_hour_for_target: float | None
    price_usd_per_gpu_hour: float | None
    weight_format: str
    compute_precision: str
    weight_bytes_per_gpu: float
    kv_cache_bytes_per_gpu: float
    prefill_bound: str
    decode_bound: str
    calibration: str
    notes: tuple[str, ...]
    start_refusal: str = ""  # the estimate's note when the engine would not start at this max_model_len ('' if it would)

    def as_dict(self) -> dict:
        return asdict(self)


def headline(s: Scenario, ttft_slo_s: float, itl_slo_s: float, target_rps: float) -> Headline:
    sync = estimate(s.model_copy(update={"load": "sync"}))
    peak = estimate(s.model_copy(update={"load": f"burst:{10**6}"}))
    if target_rps > 0:  # sizing.size scans the rates within the objectives and adds replicas for the target
        opt = size(s, target_rps, ttft_slo_s, itl_slo_s, [s.tp])[0]
        rate = opt.max_rps_per_replica
    else:
        opt = None
        plan = plan_for(s)
        rate, _, _ = max_rate_within_slo(plan, calibration_for(s, plan), s, ttft_slo_s, itl_slo_s)
    at = estimate(s.model_copy(update={"load": f"rate:{rate:.9g}"})) if rate > 0 else None
    reason = "" if at else (f"no arrival rate meets TTFT ≤ {ttft_slo_s * 1e3:,.0f} ms and ITL ≤ {itl_slo_s * 1e3:,.1f} ms: "
                            f"one request alone takes TTFT {sync.ttft_s * 1e3:,.0f} ms, ITL {sync.itl_s * 1e3:,.1f} ms")
    return Headline(
        fits=True, reason=reason, max_concurrent_users=sync.max_concurrent_requests,
        kv_capacity_tokens=sync.kv_capacity_tokens, replicas=sync.replicas,
        rate_per_replica=rate if at else None,
        requests_per_s=at.requests_per_s if at else None,
        output_tokens_per_s=at.output_tokens_per_s if at else None,
        total_tokens_per_s=at.total_tokens_per_s if at else None,
        ttft_s=at.ttft_s if at else None, itl_s=at.itl_s if at else None,
        usd_per_million_output_tokens=at.usd_per_million_output_tokens if at else None,
        usd_per_million_total_tokens=at.usd_per_million_total_tokens if at else None,
        power_w=at.power_w if at else None, joules_per_output_token=at.joules_per_output_token if at else None,
        sync_ttft_s=sync.ttft_s, sync_itl_s=sync.itl_s,
        max_requests_per_s=peak.requests_per_s, max_output_tokens_per_s=peak.output_tokens_per_s,
        target_rps=target_rps,
        gpus_for_target=opt.num_gpus if opt else None, replicas_for_target=opt.replicas if opt else None,
        usd_per_hour_for_target=opt.usd_per_hour if opt else None,
        price_usd_per_gpu_hour=sync.price_usd_per_gpu_hour, weight_format=sync.weight_format,
        weight_bytes_per_gpu=sync.weight_bytes_per_gpu, kv_cache_bytes_per_gpu=sync.kv_cache_bytes_per_gpu,
        compute_precision=sync.compute_precision, prefill_bound=sync.prefill_bound, decode_bound=sync.decode_bound,
        start_refusal=sync.start_refusal,
        calibration=sync.calibration, notes=tuple(n for n in sync.notes if n != sync.start_refusal) + (
            ("at full load decode is host-bound: the engine's per-sequence host work, not the GPU, caps "
             f"throughput near {peak.output_tokens_per_s / sync.replicas:,.0f} output tokens/s per replica",)
            if peak.decode_host_bound else ()),
    )


def fit_options(s: Scenario, precisions: tuple[str, ...] = ("bf16", "fp8", "fp4")) -> pd.DataFrame:
    """What does fit on this GPU when `s` does not: KV tokens per replica for TP 1, 2, 4, … (up to the GPU's
    scale-up domain, at most 64) × weight precision, same workload. 0 tokens: does not fit."""
    gpu = load_gpu(s.gpu)
    tps = [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= max(gpu.scale_up_domain_size, 1)] or [1]
    rows = []
    for precision in precisions:
        row = {"weights": precision.upper()}
        for tp in tps:
            try:
                plan = plan_for(s.model_copy(update={"precision": precision, "tp": tp, "num_gpus": tp, "pp": 1,
                                                     "attention_dp": s.attention_dp and tp > 1}))
                row[f"TP {tp}"] = int(plan.max_concurrent(s.isl + s.osl))
            except CapacityError:
                row[f"TP {tp}"] = 0
        rows.append(row)
    return pd.DataFrame(rows)


def memory_breakdown(s: Scenario) -> pd.DataFrame:
    """Per GPU: where its memory goes (bytes), in the order the engine accounts for it."""
    plan = plan_for(s)
    m = plan.memory
    kv_what = (f"{m.kv_capacity_tokens:,} tokens of context" if m.num_groups == 1 else
               f"{m.num_blocks:,} blocks of {plan.profile.block_size_tokens} tokens shared by {m.num_groups} layer "
               f"groups (sliding-window layers keep only the window); the engine reports {m.kv_capacity_tokens:,} tokens")
    rows = [("Weights", m.weight_bytes, "the model's weights on this GPU (its 1/TP share)"),
            ("Activations", m.activation_bytes, "peak of the engine's profile run (token budget forward / sampler)"),
            ("Engine overhead", m.non_torch_bytes + m.cuda_graph_bytes, "CUDA context, workspaces, CUDA graphs"),
            ("KV cache", m.kv_cache_bytes, kv_what),
            ("Kept free", m.usable_bytes - m.weight_bytes - m.activation_bytes - m.non_torch_bytes - m.cuda_graph_bytes
             - m.kv_cache_bytes, "left unused by the engine: 1 − its memory fraction (of the total, or for "
                                 "TensorRT-LLM of what the weights leave free)")]
    df = pd.DataFrame(rows, columns=["part", "bytes", "what"])
    df["GB"] = df["bytes"] / 1e9
    df["GiB"] = df["bytes"] / 2**30
    df["share"] = df["bytes"] / m.usable_bytes
    return df


def load_curve(s: Scenario, points: int = 40) -> pd.DataFrame:
    """Closed-loop concurrency sweep (C users per replica, 1 … 2× what the KV cache holds), whole deployment."""
    plan = plan_for(s)
    cal = calibration_for(s, plan)
    cap = max(int(plan.max_concurrent(s.isl + s.osl)), 1)
    users = np.unique(np.round(np.geomspace(1, max(2 * cap, 2), points)))
    reps = plan.lanes  # C users per batch the engine runs side by side: a replica, or each of a pipeline's stages
    # every lane holds C >= 1 users, so a pipeline runs full: at its slowest stage's pace, as the estimate prices it
    r = pipeline_paced(plan, run_load(plan, cal, s, float(s.isl), float(s.osl), "concurrency", users), reps, s.ideal)
    price = s.price_usd_per_gpu_hour or plan.gpu.price_usd_per_gpu_hour
    usd = compiled("usd_per_million_tokens")
    out_tps = np.asarray(r.output_tokens_per_s) * reps
    tot_tps = np.asarray(r.total_tokens_per_s) * reps
    hourly = price * s.num_gpus if price else np.nan
    return pd.DataFrame({
        "concurrency": users * reps, "concurrency_per_replica": users * plan.pp,
        "requests_per_s": np.asarray(r.requests_per_s) * reps, "output_tokens_per_s": out_tps,
        "total_tokens_per_s": tot_tps, "ttft_s": np.asarray(r.ttft_s), "itl_s": np.asarray(r.itl_s),
        "e2e_latency_s": np.asarray(r.e2e_latency_s),
        "usd_per_million_output_tokens": usd(hourly, out_tps), "usd_per_million_total_tokens": usd(hourly, tot_tps),
        "queued": users > cap,
    })


SIMULATED_CURVE_POINTS = 6


def simulated_curve(s: Scenario, points: int = SIMULATED_CURVE_POINTS) -> pd.DataFrame:
    """The same closed-loop sweep as the step simulator runs it (what `capacity estimate --load concurrency:C` gives
    for C > 1): a few concurrencies from 2 to 2× what the KV cache holds, each simulated as an endless loop's steady
    state, where clients drift out of the lockstep waves the closed forms price. Concurrencies whose simulation
    would exceed the simulator's request limit are left out (the estimate leaves them to the closed forms too)."""
    columns = ["concurrency", "requests_per_s", "output_tokens_per_s", "ttft_s", "itl_s"]
    if s.ideal:  # a bound: nothing to simulate
        return pd.DataFrame(columns=columns)
    plan = plan_for(s)
    cal = calibration_for(s, plan)
    cap = max(int(plan.max_concurrent(s.isl + s.osl)), 1)
    users = np.unique(np.round(np.geomspace(2, max(2 * cap, 3), points)))
    endless = s.model_copy(update={"num_requests": None, "method": "auto"})
    rows = []
    for u in users:
        if not simulation_reasons(endless, "concurrency", float(u)):  # the estimate keeps these closed-form
            continue
        r = pipeline_paced(plan, simulated_load(plan, cal, s, "concurrency", float(u))[0], plan.lanes, s.ideal)
        rows.append({"concurrency": u * plan.lanes, "requests_per_s": float(r.requests_per_s) * plan.lanes,
                     "output_tokens_per_s": float(r.output_tokens_per_s) * plan.lanes,
                     "ttft_s": float(r.ttft_s), "itl_s": float(r.itl_s)})
    return pd.DataFrame(rows, columns=columns)


def roofline(s: Scenario, running: float | None) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Per GPU: the roof (attainable FLOP/s vs arithmetic intensity) and the operating points of the
    prefill step (one prompt) and of decode steps (batch 1 … the batch at the objective … KV-full)."""
    plan = plan_for(s)
    cal = calibration_for(s, plan)
    c = plan.costs
    keys = attended_tokens_prefill(plan.model, float(s.isl))
    pre = step_parts(c, cal.efficiency, 0.0, 0.0, float(s.isl), keys, s.ideal)
    ridge = c.peak_flops_per_s / c.bandwidth_bytes_per_s
    ai = np.geomspace(0.5, max(4 * ridge, 3 * float(pre.flops / pre.bytes)), 200)
    roofs = [pd.DataFrame({"intensity": ai, "flops_per_s": np.minimum(c.peak_flops_per_s, ai * c.bandwidth_bytes_per_s),
                           "roof": f"{plan.compute_precision.upper()} peak"})]
    if c.attention_peak_flops_per_s != c.peak_flops_per_s:
        roofs.append(pd.DataFrame({"intensity": ai, "flops_per_s": np.minimum(c.attention_peak_flops_per_s,
                                                                               ai * c.bandwidth_bytes_per_s),
                                   "roof": "BF16 peak (attention)"}))
    roof = pd.concat(roofs, ignore_index=True)
    ctx = s.isl + s.osl / 2
    cap = float(plan.max_running(s.isl, s.osl))
    batches = np.unique(np.concatenate([np.geomspace(1, max(cap, 1), 12).round(), [1, cap] + ([running] if running else [])]))
    dec = step_parts(c, cal.efficiency, batches, ctx, 0.0, 0.0, s.ideal)
    pts = pd.DataFrame({
        "step": ["decode"] * len(batches) + ["prefill"],
        "batch": list(batches) + [1],
        "intensity": list(np.asarray(dec.flops / dec.bytes)) + [float(pre.flops / pre.bytes)],
        "flops_per_s": list(np.asarray(dec.flops / dec.time_s)) + [float(pre.flops / pre.time_s)],
        "time_ms": list(np.asarray(dec.time_s) * 1e3) + [float(pre.time_s) * 1e3],
    })
    pts["label"] = [f"decode, {int(b)} seq" for b in batches] + [f"prefill, {s.isl:,} tokens"]
    marks = {"decode, batch 1": 1.0, "decode, KV-full": cap}
    if running:
        marks["decode at objective"] = running
    pts["mark"] = ""
    for name, b in marks.items():
        pts.loc[(pts["step"] == "decode") & (pts["batch"] == b), "mark"] = name
    pts.loc[pts["step"] == "prefill", "mark"] = "prefill"
    info = {"peak_flops_per_s": c.peak_flops_per_s, "bandwidth_bytes_per_s": c.bandwidth_bytes_per_s,
            "ridge": c.peak_flops_per_s / c.bandwidth_bytes_per_s, "compute_precision": plan.compute_precision}
    return roof, pts, info


COMPARE_COLUMNS = ["gpu", "gpu_name", "precision", "weight_format", "fits", "max_concurrent_users",
                   "rps_per_replica_at_objective", "output_tokens_per_s_per_gpu", "ttft_s", "itl_s",
                   "usd_per_million_output_tokens", "gpus_for_target", "usd_per_hour_for_target",
                   "max_output_tokens_per_s_per_gpu", "reason"]


def compare(s: Scenario, gpus: list[str], precisions: list[str], ttft_slo_s: float, itl_slo_s: float,
            target_rps: float, headline_fn=None) -> pd.DataFrame:
    """The same workload and objectives on each GPU × weight precision (one replica of TP GPUs each).
    `headline_fn` (default `headline`) lets the app pass its cached version."""
    headline_fn = headline_fn or headline
    rows = []
    for gpu_id in gpus:
        for precision in precisions:
            sc = s.model_copy(update={"gpu": gpu_id, "precision": precision, "num_gpus": s.tp * s.pp,
                                      "price_usd_per_gpu_hour": None})
            row = {"gpu": gpu_id, "precision": precision}
            try:
                gpu = load_gpu(gpu_id)
                row["gpu_name"] = gpu.name
                h = headline_fn(sc, ttft_slo_s, itl_slo_s, target_rps)
            except CapacityError as exc:
                row.update(fits=False, reason=str(exc))
                rows.append(row)
                continue
            row.update(
                weight_format=h.weight_format, fits=True, max_concurrent_users=h.max_concurrent_users,
                rps_per_replica_at_objective=h.rate_per_replica or 0.0,
                output_tokens_per_s_per_gpu=(h.output_tokens_per_s or 0.0) / (s.tp * s.pp),
                ttft_s=h.ttft_s, itl_s=h.itl_s, usd_per_million_output_tokens=h.usd_per_million_output_tokens,
                gpus_for_target=h.gpus_for_target, usd_per_hour_for_target=h.usd_per_hour_for_target,
                max_output_tokens_per_s_per_gpu=h.max_output_tokens_per_s / (s.tp * s.pp), reason=h.reason)
            rows.append(row)
    return pd.DataFrame(rows).reindex(columns=COMPARE_COLUMNS)


def formula_values(s: Scenario) -> dict[str, str]:
    """This scenario's numbers in a few formulas (shown under the LaTeX)."""
    plan = plan_for(s)
    e = estimate(s.model_copy(update={"load": "sync"}))
    c = plan.costs
    out = {
        "kv_bytes_per_token_layer": f"{plan.kv_bytes_per_token:,.0f} bytes per token over all layers "
                                    f"({plan.kv_bytes_per_token / 1e3:,.1f} kB, {e.kv_bytes_per_token / plan.model.num_layers:,.0f} per layer)",
        "kv_capacity_tokens": f"{plan.memory.kv_cache_bytes / 1e9:,.1f} GB of KV cache per GPU → "
                              f"{plan.memory.kv_capacity_tokens:,} tokens",
        "ridge_point_flops_per_byte": f"{c.peak_flops_per_s / 1e12:,.0f} TFLOP/s ÷ {c.bandwidth_bytes_per_s / 1e12:,.2f} TB/s "
                                      f"= {c.peak_flops_per_s / c.bandwidth_bytes_per_s:,.0f} FLOP/byte",
        "linear_flops": f"{e.active_params_per_token / 1e9:,.2f} B active parameters → "
                        f"{2 * e.active_params_per_token / 1e9:,.1f} GFLOP per token",
    }
    if plan.model.mla is not None:
        out["mla_kv_bytes_per_token_layer"] = out.pop("kv_bytes_per_token_layer")
    return out


def deployment_summary(s: Scenario) -> str:
    per = s.tp * s.pp
    reps = s.num_gpus // per if per and s.num_gpus % per == 0 else 1
    layout = f"TP {s.tp}" + (f" × PP {s.pp}" if s.pp > 1 else "") + (" (attention DP)" if s.attention_dp else "")
    return f"{reps} replica{'s' if reps != 1 else ''} × {layout}" if reps > 1 else layout


def ceil_div(a: float, b: float) -> int:
    return int(math.ceil(a / b))
