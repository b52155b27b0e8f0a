"""Disaggregated prefill/decode (xPyD) and data-parallel replicas behind a router: the model and the search.

A layout is either **aggregated** (n replicas of TP t, each prefilling and decoding, `capacity.loadmodel.workload`'s
closed forms) or **xPyD**: x prefill instances of TP_p and y decode instances of TP_d, each pool with its own
engine limits (`plan_for` on a Scenario per pool). For a target rate R (requests/s):

* **prefill pool**: one instance receives R·imb_p(x)/x requests/s of prompts that decode nothing (osl = 1):
  `run_load(..., "rate", ...)` on that prefill-only load gives its TTFT with the engine's token budget per step
  and the M/D/1-style queue wait of `capacity.loadmodel.workload.open_loop`.
* **KV transfer**: each request moves the KV of its prompt, bytes = cached token-layers(isl) × KV bytes per
  token-layer (the plan's KV precision, KV heads split over TP, replicated where TP exceeds them); each GPU of
  the sending instance sends its shard over its own link in parallel (and each receiving GPU takes its own),
  so t_x = max(per-GPU bytes_p, per-GPU bytes_d) ÷ (link bytes/s × efficiency). The link is the GPU's own
  scale-up link when the layout fits one scale-up domain, else the scale-out network
  (`hardware_specs/links/links.toml`). Streamed layer by layer while the prompt is computed (NIXL/Dynamo
  style, the default) the transfer is a two-stage pipeline of L equal layers, so it adds
  t_x/L when t_x ≤ t_p, else t_x − t_p·(1 − 1/L); after the prefill it adds t_x whole. Either way + latency.
* **decode pool**: one instance holds at most B_max sequences (KV room for isl + osl tokens each, capped by
  max_num_seqs) and runs decode-only steps (no prefill interference): t_d(B) = `step_time_s`(B decodes at mean
  context isl + osl/2). A request stays osl steps, so an instance serves B ÷ (osl · t_d(B)) requests/s; at rate
  R/y Little's law picks the smallest B that serves it, and ITL = t_d(B).
* TTFT = prefill TTFT + exposed transfer + 1.5 · t_d(B) (the decode instance admits the request at its next
  step boundary, half a step on average, then samples its first token in one step).
* **router**: m balls thrown uniformly at random into N bins leave the most loaded with m/N + sqrt(2·(m/N)·ln N)
  (Raab & Steger, "Balls into bins — a simple and tight analysis", RANDOM 1998, heavily loaded case m ≥ N ln N;
  used as an approximation below it, capped at N), so max/mean = min(N, 1 + sqrt(2·N·ln N / m)).
  `round-robin` spreads equal requests evenly (imbalance 1) but sends every prefix to every replica, so a prefix
  reused K = 1/(1 − h) times misses once on each of N replicas: h_N = max(0, 1 − N·(1 − h)); `random` assigns
  each request at random: the balls are the requests in the system at once (m = N·L, L = R/N × e2e per replica by
  Little's law at the mean load: the higher the utilization, the more balls and the smaller the imbalance), prefix
  hits as round-robin; `prefix-aware` keeps h but pins each of G prefix groups to one replica: G balls. The most
  loaded replica (at imbalance × the mean rate) must meet the objectives. Decode instances take requests by load
  (balanced). Aggregated replicas use the same router rule as the prefill pool.

No measurement has checked any of these terms yet (issue 22). Units in names, SI inside.
"""

from __future__ import annotations

import functools
import importlib.resources
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from capacity.calibration import Calibration
from capacity.errors import CapacityError, ConfigError, WorkloadError, closest, flatten_validation_error, one_line
from capacity.estimate import Scenario, calibration_for, plan_for, run_load
from capacity.hardware import Gpu, load_gpu
from capacity.model.kv import attended_tokens_prefill, cached_tokens
from capacity.plan import Plan
from capacity.model.steptime import step_time_s

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

Router = Literal["round-robin", "random", "prefix-aware"]
ROUTERS = ("round-robin", "random", "prefix-aware")
Transfer = Literal["overlapped", "after-prefill"]
LINK_SOURCED = ("bytes_per_s", "efficiency", "latency_s")
FIRST_TOKEN_DECODE_STEPS = 1.5  # half a step to the next step boundary, then the step that samples the token


class Link(BaseModel):
    """One link type between a prefill and a decode instance: per GPU, per direction."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
    id: str = Field(min_length=1, max_length=100)
    name: str = Field(max_length=200)
    scope: Literal["node", "network"]
    bytes_per_s: float = Field(ge=1e3, le=1e15)
    efficiency: float = Field(gt=0, le=1)
    latency_s: float = Field(ge=0, le=1)
    sources: dict[str, str]

    @model_validator(mode="after")
    def _every_number_has_a_source(self) -> "Link":
        missing = [f for f in LINK_SOURCED if f not in self.sources]
        if missing:
            raise ValueError(f"no source given for {', '.join(missing)}")
        return self

    @property
    def achieved_bytes_per_s(self) -> float:
        return self.bytes_per_s * self.efficiency


@functools.cache
def link_catalog() -> dict[str, Link]:
    path = Path(str(importlib.resources.files("hardware_specs") / "links" / "links.toml"))
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(one_line(f"link catalog {path}: {exc}")) from None
    links = {}
    for key, entry in data.items():
        try:
            links[key] = Link.model_validate({"id": key, **entry})
        except ValidationError as exc:
            raise ConfigError(f"link catalog {path}: [{key}] {flatten_validation_error(exc)}") from None
    return links


def scale_up_link(gpu: Gpu) -> Link:
    """The GPU's own scale-up link (bandwidth from its spec file), with the efficiency and latency of the
    catalog's NVLink 4 entry for NVLink parts, else of PCIe Gen5."""
    like = link_catalog()["nvlink4" if "nvlink" in gpu.interconnect_name.lower() else "pcie-gen5"]
    return like.model_copy(update={"id": f"{gpu.id}-scale-up", "name": f"{gpu.interconnect_name} ({gpu.id})",
                                   "bytes_per_s": gpu.interconnect_bytes_per_s_per_direction,
                                   "sources": {**like.sources, "bytes_per_s": f"hardware_specs/{gpu.id}.toml "
                                               "interconnect_bytes_per_s_per_direction"}})


def resolve_link(name: str, gpu: Gpu) -> tuple[Link, Link]:
    """(link within a scale-up domain, link across domains) for --link: `auto` is the GPU's own scale-up link
    within a domain and InfiniBand NDR across; a catalog id is used for both."""
    cat = link_catalog()
    if name == "auto":
        return scale_up_link(gpu), cat["ib-ndr"]
    if name not in cat:
        raise WorkloadError(one_line(f"unknown link {name[:100]!r}{closest(name[:100], list(cat))}; "
                                     f"known: auto, {', '.join(cat)}"))
    return cat[name], cat[name]


# --- terms ----------------------------------------------------------------------------------------------------


def kv_transfer_bytes(plan: Plan, prompt_tokens) -> np.ndarray:
    """KV bytes one request's prompt moves from prefill to decode (whole instance, all layers): cached
    token-layers (sliding-window layers keep at most the window) × KV bytes per token-layer at TP 1."""
    m = plan.model
    per_layer = plan.kv_bytes_per_token / m.num_layers
    return np.asarray(cached_tokens(m, prompt_tokens), dtype=float) * per_layer


def kv_transfer_bytes_per_gpu(plan: Plan, prompt_tokens) -> np.ndarray:
    """The shard one GPU of this instance holds (KV heads split over TP, replicated where TP exceeds them)."""
    return np.asarray(cached_tokens(plan.model, prompt_tokens), dtype=float) * plan.costs.kv_bytes_per_token_layer


def kv_transfer_time_s(bytes_per_gpu_prefill, bytes_per_gpu_decode, link_bytes_per_s, efficiency) -> np.ndarray:
    """Seconds to move the shards, every GPU over its own link in parallel (latency not included)."""
    shard = np.maximum(np.asarray(bytes_per_gpu_prefill, dtype=float), np.asarray(bytes_per_gpu_decode, dtype=float))
    return shard / (np.asarray(link_bytes_per_s, dtype=float) * efficiency)


def exposed_transfer_s(transfer_s, prefill_s, layers: int, overlapped: bool, latency_s) -> np.ndarray:
    """What the transfer adds to TTFT after the prompt's last layer is computed. Streamed layer by layer, the
    prefill and the transfer are a two-stage pipeline of `layers` equal stages: it ends at
    t_p/L + t_x/L + (L−1)·max(t_p, t_x)/L, i.e. t_x/L after the prefill when t_x ≤ t_p, else t_x − t_p(1 − 1/L)."""
    tx = np.asarray(transfer_s, dtype=float)
    tp = np.asarray(prefill_s, dtype=float)
    if overlapped:
        L = float(max(layers, 1))
        tail = np.where(tx <= tp, tx / L, tx - tp * (1 - 1 / L))
    else:
        tail = tx
    return tail + np.asarray(latency_s, dtype=float)


def max_over_mean_load(n, balls) -> np.ndarray:
    """Expected most-loaded ÷ mean of n bins after `balls` uniform random throws (Raab & Steger 1998, heavily
    loaded case: m/n + sqrt(2·(m/n)·ln n)), capped at n (everything in one bin)."""
    N = np.maximum(np.asarray(n, dtype=float), 1.0)
    m = np.maximum(np.asarray(balls, dtype=float), 1e-9)
    return np.minimum(N, 1.0 + np.sqrt(2.0 * N * np.log(N) / m))


def replica_imbalance(n, router: str, prefix_groups: float, in_flight_per_replica=None) -> np.ndarray:
    """Most-loaded ÷ mean load of n replicas: 1 for round-robin; prefix-aware: G prefix groups as the balls;
    random: the requests in the system at once (n × in-flight per replica at the mean load)."""
    N = np.maximum(np.asarray(n, dtype=float), 1.0)
    if router == "round-robin":
        return np.ones_like(N)
    if router == "random":
        if in_flight_per_replica is None:
            raise WorkloadError("random routing: the imbalance needs the requests in flight per replica")
        return max_over_mean_load(N, N * np.asarray(in_flight_per_replica, dtype=float))
    return max_over_mean_load(N, max(float(prefix_groups), 1.0))


def router_hit_rate(n, router: str, hit_rate: float) -> np.ndarray:
    """Prefix-cache hit rate each replica sees: kept by prefix-aware routing; round-robin (and random) send a prefix
    reused K = 1/(1−h) times to all n replicas, so each misses once: max(0, 1 − n·(1 − h))."""
    N = np.maximum(np.asarray(n, dtype=float), 1.0)
    if router == "prefix-aware" or hit_rate <= 0:
        return np.full_like(N, hit_rate)
    return np.maximum(0.0, 1.0 - N * (1.0 - hit_rate))


def prefill_alone_s(plan: Plan, cal: Calibration, s: Scenario) -> float:
    """One prompt prefilled alone with the instance's token budget: ⌈I_new/M⌉ chunk steps of no decodes."""
    budget = float(plan.profile.max_num_batched_tokens)
    i_new = max(s.isl * (1 - s.prefix_hit_rate), 1.0)
    chunks = math.ceil(i_new / budget)
    chunk = i_new / chunks
    keys = attended_tokens_prefill(plan.model, chunk, s.isl * s.prefix_hit_rate + (chunks - 1) * chunk / 2)
    return float(chunks * step_time_s(plan.costs, cal.efficiency, 0.0, s.isl, chunk, keys, s.ideal))


@dataclass(frozen=True)
class DecodeCurve:
    """Decode-only steps of one decode instance at every batch from 1 to B_max."""

    batch: np.ndarray
    step_s: np.ndarray
    requests_per_s: np.ndarray  # B / (osl · t_d(B)), made non-decreasing (a larger batch can always idle)

    def at_rate(self, rate) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(batch, ITL, feasible) of the instance serving `rate` requests/s: the smallest B that serves it."""
        r = np.asarray(rate, dtype=float)
        i = np.searchsorted(self.requests_per_s, r, side="left")
        ok = i < len(self.batch)
        j = np.minimum(i, len(self.batch) - 1)
        return self.batch[j], self.step_s[j], ok


def decode_curve(plan: Plan, cal: Calibration, s: Scenario) -> DecodeCurve:
    b_max = int(max(min(plan.max_concurrent(s.isl + s.osl), plan.profile.max_num_seqs), 1))
    B = np.arange(1, b_max + 1, dtype=float)
    t = np.asarray(step_time_s(plan.costs, cal.efficiency, B, s.isl + s.osl / 2, 0.0, 0.0, s.ideal), dtype=float)
    rps = np.maximum.accumulate(B / (max(s.osl, 1) * t))
    return DecodeCurve(B, t, rps)


# --- layouts and the search -----------------------------------------------------------------------------------


class LayoutPoint(BaseModel):
    model_config = ConfigDict(frozen=True)
    kind: Literal["aggregated", "disaggregated"]
    name: str = Field(description="e.g. '3x TP1' or '1P(TP2) 2D(TP1)'")
    tp: int | None = None
    replicas: int | None = None
    prefill_tp: int | None = None
    prefill_instances: int | None = None
    decode_tp: int | None = None
    decode_instances: int | None = None
    num_gpus: int
    usd_per_hour: float | None
    ttft_s: float
    itl_s: float
    kv_transfer_s: float = Field(0.0, description="exposed KV transfer added to TTFT (disaggregated only)")
    output_tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float
    link: str = ""


class PoolFacts(BaseModel):
    """One instance of a pool at one TP: what it carries alone (no router imbalance)."""

    model_config = ConfigDict(frozen=True)
    tp: int
    prefill_max_rps: float = Field(description="prefill-only load, saturated")
    prefill_rps_within_ttft_slo: float = Field(description="highest rate whose prefill TTFT alone meets the TTFT objective")
    prefill_alone_s: float
    decode_max_batch: int = Field(description="sequences of isl + osl tokens the KV cache and max_num_seqs allow")
    decode_max_rps: float
    decode_rps_within_itl_slo: float
    kv_bytes_per_request: float
    kv_bytes_per_gpu_per_request: float


class DisaggAnswer(BaseModel):
    model_config = ConfigDict(frozen=True)
    model: str
    gpu: str
    isl: int
    osl: int
    target_rps: float
    ttft_slo_s: float
    itl_slo_s: float
    router: str
    transfer: str
    link: str
    layouts_evaluated: int
    layouts_within_slo: int
    pareto_front: list[LayoutPoint]
    chosen: LayoutPoint | None
    best_aggregated: LayoutPoint | None
    best_disaggregated: LayoutPoint | None
    unfit: dict[str, str] = Field(default_factory=dict, description="TP → why it does not fit")
    pools: list[PoolFacts] = Field(default_factory=list, description="per TP: one prefill and one decode instance alone")
    search_s: float
    launch: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


@dataclass
class _Pool:
    tp: int
    scenario: Scenario
    plan: Plan
    cal: Calibration


def _pool(s: Scenario, tp: int, **update) -> _Pool:
    sc = s.model_copy(update={"tp": tp, "num_gpus": tp, **update})
    plan = plan_for(sc)
    return _Pool(tp, sc, plan, calibration_for(sc, plan))


def _count_range(n_min: int, max_instances: int) -> np.ndarray:
    """Instance counts to try: from the fewest that can carry the rate to 4× that (+8), for lower latency."""
    n_min = max(int(n_min), 1)
    return np.arange(n_min, min(4 * n_min + 8, max(max_instances, n_min)) + 1)


def _capacity_rps(pool: _Pool, osl: int) -> float:
    r = run_load(pool.plan, pool.cal, pool.scenario, pool.scenario.isl, osl, "burst", 10**6)
    return float(np.asarray(r.requests_per_s))


def _open_loop_by_hit_rate(pool: _Pool, osl: int, rates: np.ndarray, hits: np.ndarray):
    """TTFT, ITL and saturation at each rate, each with its own prefix hit rate (one closed-form call per value)."""
    ttft, itl, sat = np.empty_like(rates), np.empty_like(rates), np.zeros(rates.shape, dtype=bool)
    for h in np.unique(hits):
        m = hits == h
        sc = pool.scenario.model_copy(update={"prefix_hit_rate": float(h)})
        r = run_load(pool.plan, pool.cal, sc, sc.isl, osl, "rate", rates[m])
        ttft[m] = np.broadcast_to(r.ttft_s, rates[m].shape)
        itl[m] = np.broadcast_to(r.itl_s, rates[m].shape)
        sat[m] = np.broadcast_to(np.asarray(r.saturated, dtype=bool), rates[m].shape)
    return ttft, itl, sat


def _validate(target_rps, ttft_slo_s, itl_slo_s, tps, prefix_groups, max_instances):
    for name, v in (("target_rps", target_rps), ("ttft_slo_s", ttft_slo_s), ("itl_slo_s", itl_slo_s),
                    ("prefix_groups", prefix_groups)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise WorkloadError(f"{name}: must be a positive finite number, got {v!r}")
    if not tps or any(isinstance(t, bool) or not isinstance(t, int) or not 1 <= t <= 1024 for t in tps):
        raise WorkloadError(f"tps: expected one or more tensor-parallel sizes from 1 to 1,024, got {list(tps)[:10]!r}")
    if not (isinstance(max_instances, int) and 1 <= max_instances <= 4096):
        raise WorkloadError(f"max_instances: expected 1 to 4,096, got {max_instances!r}")


def pareto_mask(gpus: np.ndarray, per_user: np.ndarray) -> np.ndarray:
    """Points no other point beats on both output tokens/s per GPU (fewer GPUs at a fixed target) and tokens/s
    per user (ties on both keep the first)."""
    order = np.lexsort((-per_user, gpus))
    keep = np.zeros(len(gpus), dtype=bool)
    best = -np.inf
    for i in order:
        if per_user[i] > best:
            keep[i] = True
            best = per_user[i]
    return keep


def search(s: Scenario, target_rps: float, ttft_slo_s: float, itl_slo_s: float, tps: list[int] = (1, 2, 4, 8),
           link: str = "auto", transfer: Transfer = "overlapped", router: Router = "round-robin",
           prefix_groups: float = 64, max_instances: int = 256, disagg: bool = True,
           prefill_max_num_batched_tokens: int | None = None, decode_max_num_seqs: int | None = None) -> DisaggAnswer:
    """Aggregated and xPyD layouts for `target_rps` within the TTFT and ITL objectives; the Pareto front of
    (output tokens/s per GPU, tokens/s per user), and the layout with the fewest GPUs (then the faster one)."""
    t0 = time.perf_counter()
    tps = list(tps)
    _validate(target_rps, ttft_slo_s, itl_slo_s, tps, prefix_groups, max_instances)
    if transfer not in ("overlapped", "after-prefill"):
        raise WorkloadError(f"transfer: expected overlapped or after-prefill, got {transfer!r}")
    if router not in ROUTERS:
        raise WorkloadError(f"router: expected one of {', '.join(ROUTERS)}, got {router!r}")
    if s.pp > 1 or s.attention_dp:
        raise WorkloadError("--disagg searches tensor-parallel pools of one stage: pp and attention_dp are not "
                            "searched (size one such layout with capacity estimate)")
    gpu = load_gpu(s.gpu)
    node_link, net_link = resolve_link(link, gpu)
    price = s.price_usd_per_gpu_hour or gpu.price_usd_per_gpu_hour
    R, O = float(target_rps), max(s.osl, 1)
    unfit: dict[str, str] = {}
    agg, pre, dec = {}, {}, {}
    for tp in sorted(set(tps)):
        try:
            agg[tp] = _pool(s, tp)
            if disagg:
                pre[tp] = _pool(s, tp, osl=1, **({"max_num_batched_tokens": prefill_max_num_batched_tokens}
                                               if prefill_max_num_batched_tokens else {}))
                dec[tp] = _pool(s, tp, **({"max_num_seqs": decode_max_num_seqs} if decode_max_num_seqs else {}))
        except CapacityError as exc:
            unfit[str(tp)] = str(exc)
            agg.pop(tp, None), pre.pop(tp, None), dec.pop(tp, None)
    cols: dict[str, list] = {k: [] for k in ("kind", "tp_a", "n_a", "tp_p", "x", "tp_d", "y", "gpus", "ttft", "itl",
                                             "xfer", "net")}
    evaluated = 0

    def add(ok, **arrays):
        nonlocal evaluated
        evaluated += int(ok.size)
        idx = np.flatnonzero(ok.ravel())
        for k in cols:
            v = arrays.get(k, 0)
            cols[k].append(np.broadcast_to(np.asarray(v), ok.shape).ravel()[idx])

    # aggregated: n replicas of TP t behind the router
    for tp, pool in agg.items():
        n = _count_range(math.ceil(R / max(_capacity_rps(pool, O), 1e-12)), max_instances)
        hits = router_hit_rate(n, router, s.prefix_hit_rate)
        in_flight = None
        if router == "random":  # Little's law at the mean load gives the balls
            t0_, i0_, _ = _open_loop_by_hit_rate(pool, O, R / n, hits)
            in_flight = R / n * (t0_ + (O - 1) * i0_)
        rates = R * replica_imbalance(n, router, prefix_groups, in_flight) / n
        ttft, itl, sat = _open_loop_by_hit_rate(pool, O, rates, hits)
        ok = ~sat & (ttft <= ttft_slo_s) & (itl <= itl_slo_s)
        add(ok, kind=0, tp_a=tp, n_a=n, gpus=n * tp, ttft=ttft, itl=itl)

    # disaggregated: x prefill instances of TP_p, y decode instances of TP_d
    domain = gpu.scale_up_domain_size
    for tp_p, pp in pre.items():
        x = _count_range(math.ceil(R / max(_capacity_rps(pp, 1), 1e-12)), max_instances)
        hits = router_hit_rate(x, router, s.prefix_hit_rate)
        in_flight = None
        if router == "random":
            in_flight = R / x * _open_loop_by_hit_rate(pp, 1, R / x, hits)[0]
        rates_p = R * replica_imbalance(x, router, prefix_groups, in_flight) / x
        ttft_p, _, sat_p = _open_loop_by_hit_rate(pp, 1, rates_p, hits)
        t_alone = prefill_alone_s(pp.plan, pp.cal, pp.scenario)
        bytes_p = float(kv_transfer_bytes_per_gpu(pp.plan, s.isl))
        for tp_d, dp in dec.items():
            curve = decode_curve(dp.plan, dp.cal, dp.scenario)
            y = _count_range(math.ceil(R / max(float(curve.requests_per_s[-1]), 1e-12)), max_instances)
            _, t_d, ok_d = curve.at_rate(R / y)
            bytes_d = float(kv_transfer_bytes_per_gpu(dp.plan, s.isl))
            X, Y = x[:, None], y[None, :]
            gpus = X * tp_p + Y * tp_d
            on_node = gpus <= domain
            xfer_node, xfer_net = (
                exposed_transfer_s(kv_transfer_time_s(bytes_p, bytes_d, lk.bytes_per_s, lk.efficiency), t_alone,
                                   pp.plan.model.num_layers, transfer == "overlapped", lk.latency_s)
                for lk in (node_link, net_link))
            xfer = np.where(on_node, xfer_node, xfer_net)
            ttft = ttft_p[:, None] + xfer + FIRST_TOKEN_DECODE_STEPS * t_d[None, :]
            itl = np.broadcast_to(t_d[None, :], ttft.shape)
            ok = (~sat_p)[:, None] & ok_d[None, :] & (ttft <= ttft_slo_s) & (itl <= itl_slo_s)
            add(ok, kind=1, tp_p=tp_p, x=X, tp_d=tp_d, y=Y, gpus=gpus, ttft=ttft, itl=itl, xfer=xfer, net=~on_node)

    pools = []
    for tp in sorted(set(pre) & set(dec)):
        pp, dp = pre[tp], dec[tp]
        cap = _capacity_rps(pp, 1)
        grid = np.linspace(0.0, 1.0, 201)[1:] * cap
        r = run_load(pp.plan, pp.cal, pp.scenario, s.isl, 1, "rate", grid)
        ok = (np.asarray(r.ttft_s) <= ttft_slo_s) & ~np.asarray(r.saturated, dtype=bool)
        curve = decode_curve(dp.plan, dp.cal, dp.scenario)
        within = curve.requests_per_s[curve.step_s <= itl_slo_s]
        pools.append(PoolFacts(tp=tp, prefill_max_rps=cap, prefill_rps_within_ttft_slo=float(grid[ok].max()) if ok.any() else 0.0,
                               prefill_alone_s=prefill_alone_s(pp.plan, pp.cal, pp.scenario),
                               decode_max_batch=int(curve.batch[-1]), decode_max_rps=float(curve.requests_per_s[-1]),
                               decode_rps_within_itl_slo=float(within.max()) if within.size else 0.0,
                               kv_bytes_per_request=float(kv_transfer_bytes(pp.plan, s.isl)),
                               kv_bytes_per_gpu_per_request=float(kv_transfer_bytes_per_gpu(pp.plan, s.isl))))
    c = {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in cols.items()}
    within = int(c["gpus"].size)
    points: list[LayoutPoint] = []
    chosen = best_agg = best_dis = None
    front: list[LayoutPoint] = []
    if within:
        per_user = 1.0 / c["itl"]
        gpus = c["gpus"].astype(int)

        def point(i: int) -> LayoutPoint:
            g = int(gpus[i])
            common = dict(num_gpus=g, usd_per_hour=price * g if price else None, ttft_s=float(c["ttft"][i]),
                          itl_s=float(c["itl"][i]), output_tokens_per_s_per_gpu=R * O / g,
                          tokens_per_s_per_user=float(per_user[i]))
            if c["kind"][i] == 0:
                tp, n = int(c["tp_a"][i]), int(c["n_a"][i])
                return LayoutPoint(kind="aggregated", name=f"{n}x TP{tp}", tp=tp, replicas=n, **common)
            tp_p, x, tp_d, y = (int(c[k][i]) for k in ("tp_p", "x", "tp_d", "y"))
            lk = net_link if c["net"][i] else node_link
            return LayoutPoint(kind="disaggregated", name=f"{x}P(TP{tp_p}) {y}D(TP{tp_d})", prefill_tp=tp_p,
                               prefill_instances=x, decode_tp=tp_d, decode_instances=y,
                               kv_transfer_s=float(c["xfer"][i]), link=lk.id, **common)

        def best(mask) -> LayoutPoint | None:
            idx = np.flatnonzero(mask)
            if not idx.size:
                return None
            # fewest GPUs, then the fastest per user, then aggregated before disaggregated
            i = idx[np.lexsort((c["kind"][idx], -per_user[idx], gpus[idx]))[0]]
            return point(int(i))

        front = [point(int(i)) for i in np.flatnonzero(pareto_mask(gpus, per_user))]
        front.sort(key=lambda p: p.num_gpus)
        chosen = best(np.ones(within, dtype=bool))
        best_agg = best(c["kind"] == 0)
        best_dis = best(c["kind"] == 1)
    notes = [f"router {router}: " + {"round-robin": "equal requests spread evenly; each prefix is cached on every replica",
                                     "random": "each request to a random replica: the busiest carries the balls-into-bins "
                                               "excess of the requests in flight",
                                     "prefix-aware": f"{prefix_groups:g} prefix groups hashed to replicas (balls into bins)"
                                     }[router],
             f"KV transfer {transfer}: " + ("streamed layer by layer while the prompt is computed"
                                            if transfer == "overlapped" else "starts when the prefill ends"),
             "checked only against published DeepSeek-R1 disaggregated runs, which it prices well off (throughput "
             "per GPU too high, TTFT too low: docs/disagg.md); the KV-transfer, router and search terms no "
             "measurement has checked"]
    if not within:
        notes.append("no layout meets the objectives at this rate")
    return DisaggAnswer(model=s.model, gpu=gpu.id, isl=s.isl, osl=s.osl, target_rps=R, ttft_slo_s=ttft_slo_s,
                        itl_slo_s=itl_slo_s, router=router, transfer=transfer,
                        link=f"{node_link.id} within a {domain}-GPU domain, {net_link.id} across",
                        layouts_evaluated=evaluated, layouts_within_slo=within, pareto_front=front, chosen=chosen,
                        best_aggregated=best_agg, best_disaggregated=best_dis, unfit=unfit, pools=pools,
                        search_s=time.perf_counter() - t0, launch=launch_snippet(s, chosen) if chosen else [],
                        notes=notes)


# --- one layout at one load (issue 22's predictions) ----------------------------------------------------------


@dataclass(frozen=True)
class DisaggPoint:
    ttft_s: float
    itl_s: float
    requests_per_s: float
    prefill_ttft_s: float
    kv_transfer_s: float
    kv_transfer_bytes: float
    decode_batch: float
    saturated: bool


def one_p_one_d(s: Scenario, load_kind: str, value: float, link: Link, overlapped: bool = True,
                prefill_tp: int = 1, decode_tp: int = 1) -> DisaggPoint:
    """1 prefill + 1 decode instance under one load (sync, concurrency C, or rate R): `xpyd_point` at 1P1D."""
    return xpyd_point(s, load_kind, value, link, 1, 1, prefill_tp, decode_tp, overlapped)


def xpyd_point(s: Scenario, load_kind: str, value: float, link: Link, x: int = 1, y: int = 1, prefill_tp: int = 1,
               decode_tp: int = 1, overlapped: bool = True, prefill_ep: bool | None = None,
               decode_ep: bool | None = None) -> DisaggPoint:
    """x prefill instances of TP_p and y decode instances of TP_d under one load (sync, concurrency C or rate R),
    each prefill instance at R/x and each decode instance at R/y; expert parallel per pool (None: the scenario's).
    Closed loops solve C = X · e2e(X) for the throughput X by bisection (e2e grows with X through the decode batch
    and the prefill queue)."""
    ep = s.expert_parallel
    pp = _pool(s, prefill_tp, osl=1, expert_parallel=ep if prefill_ep is None else prefill_ep)
    dp = _pool(s, decode_tp, expert_parallel=ep if decode_ep is None else decode_ep)
    curve = decode_curve(dp.plan, dp.cal, dp.scenario)
    t_alone = prefill_alone_s(pp.plan, pp.cal, pp.scenario)
    tx = float(kv_transfer_time_s(kv_transfer_bytes_per_gpu(pp.plan, s.isl), kv_transfer_bytes_per_gpu(dp.plan, s.isl),
                                  link.bytes_per_s, link.efficiency))
    xfer = float(exposed_transfer_s(tx, t_alone, pp.plan.model.num_layers, overlapped, link.latency_s))
    O = max(s.osl, 1)
    cap = min(x * _capacity_rps(pp, 1), y * float(curve.requests_per_s[-1]))

    def at(rate: float):
        r = run_load(pp.plan, pp.cal, pp.scenario, s.isl, 1, "rate", np.asarray([rate / x]))
        b, t_d, ok = curve.at_rate(np.asarray([rate / y]))
        ttft_p = float(r.ttft_s[0])
        ttft = ttft_p + xfer + FIRST_TOKEN_DECODE_STEPS * float(t_d[0])
        return ttft, float(t_d[0]), ttft_p, float(b[0]), bool(ok[0]) and not bool(np.asarray(r.saturated)[0])

    kv_bytes = float(kv_transfer_bytes(pp.plan, s.isl))
    if load_kind == "rate":
        rate = min(float(value), cap * 0.999)
        ttft, itl, ttft_p, b, ok = at(rate)
        return DisaggPoint(ttft, itl, rate, ttft_p, xfer, kv_bytes, b, float(value) >= cap or not ok)
    users = 1.0 if load_kind == "sync" else float(value)
    lo, hi = 0.0, cap * 0.999
    for _ in range(60):  # the rate X at which `users` clients, each resending at once, keep X · e2e(X) = users
        mid = (lo + hi) / 2
        ttft, itl, *_ = at(max(mid, 1e-9))
        if mid * (ttft + (O - 1) * itl) < users:
            lo = mid
        else:
            hi = mid
    rate = max(lo, 1e-9)
    ttft, itl, ttft_p, b, ok = at(rate)
    saturated = hi >= cap * 0.998
    if saturated:  # more clients than the pools carry: the excess waits in the prefill queue
        ttft += max(users / rate - (ttft + (O - 1) * itl), 0.0)
    return DisaggPoint(ttft, itl, rate, ttft_p, xfer, kv_bytes, b, saturated)


# --- launch snippet -------------------------------------------------------------------------------------------


NODE_GPUS = 8  # GPUs per node in the snippet's numbering


def launch_snippet(s: Scenario, p: LayoutPoint) -> list[str]:
    """Commands for a chosen layout. Which flag names were confirmed where is listed in docs/disagg.md."""
    m = s.model
    if p.kind == "aggregated":
        return [f"# {p.replicas} aggregated replica(s) of TP {p.tp} (vLLM's own data-parallel front end):",
                f"vllm serve {m} --tensor-parallel-size {p.tp} --data-parallel-size {p.replicas}",
                f"# SGLang: python -m sglang.launch_server --model-path {m} --tp {p.tp} --dp {p.replicas}"]
    lines = [f"# {p.name}: vLLM with the NIXL KV connector, one server per instance"]
    kv = "'{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}'"
    gpu = 0
    for role, count, tp, port in (("prefill", p.prefill_instances, p.prefill_tp, 8100),
                                  ("decode", p.decode_instances, p.decode_tp, 8200)):
        for i in range(count or 0):
            if gpu % NODE_GPUS + (tp or 1) > NODE_GPUS:  # an instance stays within one node
                gpu += NODE_GPUS - gpu % NODE_GPUS
            devices = ",".join(str(gpu % NODE_GPUS + k) for k in range(tp or 1))
            lines.append(f"CUDA_VISIBLE_DEVICES={devices} VLLM_NIXL_SIDE_CHANNEL_PORT={5600 + gpu % NODE_GPUS} "
                         f"vllm serve {m} --port {port + i} --tensor-parallel-size {tp} --kv-transfer-config {kv}"
                         f"  # {role} {i}, node {gpu // NODE_GPUS}")
            gpu += tp or 1
    lines += ["# then a proxy that sends each request to a prefill server with max_tokens=1 and "
              "kv_transfer_params {\"do_remote_decode\": true}, and passes the returned kv_transfer_params to a "
              "decode server (vLLM's toy_proxy_server.py in tests/v1/kv_connector/nixl_integration does this)",
              f"# SGLang: python -m sglang.launch_server --model-path {m} --tp {p.prefill_tp} "
              "--disaggregation-mode prefill --disaggregation-transfer-backend nixl (decode servers: "
              f"--disaggregation-mode decode --tp {p.decode_tp}), behind python -m sglang_router.launch_router "
              "--pd-disaggregation --prefill URL [BOOTSTRAP_PORT] --decode URL",
              f"# Dynamo: python -m dynamo.frontend; decode workers python -m dynamo.vllm --model {m} --connector nixl; "
              "prefill workers the same with --is-prefill-worker (each with its own VLLM_NIXL_SIDE_CHANNEL_PORT)"]
    return lines
