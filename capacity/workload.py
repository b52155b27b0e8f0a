"""Load predictions for a continuous-batching engine: sync, concurrency C, burst N, arrival rate R.

Steady state of B running sequences, each living 1 prefill step + (O−1) decode steps. The engine
admits λ requests per step, limited by the slots (λ ≤ B/O) and by the token budget per step
(λ·(I+O−1) ≤ M). A step decodes d = λ(O−1) sequences; a share f of steps also carries a prefill
chunk of q tokens. Mean step time t̄ = f·t(d, q) + (1−f)·t(d, 0); ITL = the steps a sequence sees;
requests/s = λ ÷ t̄. TTFT = request overhead + wait for the running step + own prefill (+ queueing).
All functions broadcast over numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from capacity.calibration import Efficiency
from capacity.formulas import compiled
from capacity.kv import attended_tokens_prefill
from capacity.steptime import StepCosts, step_time_s


@dataclass(frozen=True)
class Extras:
    """Optional what-ifs: share of prompt tokens already in the prefix cache; speculative decoding."""

    prefix_hit_rate: float = 0.0
    spec_acceptance: float = 0.0  # 0 = no speculative decoding
    spec_draft_tokens: int = 0
    spec_draft_cost: float = 0.0  # one draft step's time as a share of one target decode step


@dataclass(frozen=True)
class LoadResult:
    ttft_s: np.ndarray
    itl_s: np.ndarray
    e2e_latency_s: np.ndarray
    requests_per_s: np.ndarray
    output_tokens_per_s: np.ndarray
    total_tokens_per_s: np.ndarray
    running: np.ndarray  # sequences running at once
    decode_step_s: np.ndarray
    prefill_step_s: np.ndarray
    saturated: np.ndarray


def _spec(extras: Extras) -> tuple[float, float]:
    """(tokens per decode step per sequence, extra query tokens per sequence per step)."""
    if extras.spec_draft_tokens <= 0 or extras.spec_acceptance <= 0:
        return 1.0, 0.0
    a = min(extras.spec_acceptance, 0.999)
    return float(compiled("spec_tokens_per_step")(a, extras.spec_draft_tokens)), float(extras.spec_draft_tokens)


def steady_state(c: StepCosts, eff: Efficiency, budget: float, isl, osl, running, ideal: bool,
                 extras: Extras = Extras()) -> dict[str, np.ndarray]:
    """Continuous batching with `running` sequence slots kept full."""
    I = np.asarray(isl, dtype=float)
    O = np.maximum(np.asarray(osl, dtype=float), 1.0)
    B = np.maximum(np.asarray(running, dtype=float), 1.0)
    hit = extras.prefix_hit_rate
    I_new = np.maximum(I * (1 - hit), 1.0)
    keys = attended_tokens_prefill(c.arch, I_new, I * hit)
    tau, extra_q = _spec(extras)
    steps_per_request = 1 + (O - 1) / tau
    lam = np.minimum(B / steps_per_request, budget / (I_new + (O - 1) / tau * (1 + extra_q)))
    d = lam * (O - 1) / tau
    ctx = I + O / 2
    room = np.maximum(budget - d * (1 + extra_q), 1.0)
    q = np.minimum(np.maximum(I_new, lam * I_new), room)
    f = np.minimum(1.0, lam * I_new / q)
    spec_q = d * extra_q
    draft = extras.spec_draft_cost * extra_q
    t_dec = step_time_s(c, eff, d, ctx, spec_q, ctx, ideal) + draft * step_time_s(c, eff, d, ctx, 0, 0, ideal)
    t_mix = step_time_s(c, eff, d, ctx, q + spec_q, keys, ideal) + draft * step_time_s(c, eff, d, ctx, 0, 0, ideal)
    t_bar = f * t_mix + (1 - f) * t_dec
    others = (B - 1) / B
    itl = (others * f * t_mix + (1 - others * f) * t_dec) / tau
    chunks = np.ceil(I_new / room)
    own_prefill = chunks * np.where(chunks > 1, step_time_s(c, eff, d, ctx, room, keys, ideal), t_mix)
    ttft = eff.request_overhead_s + others * t_bar / 2 + own_prefill
    rps = lam / t_bar
    return {"ttft": ttft, "itl": itl, "rps": rps, "t_bar": t_bar, "t_dec": t_dec, "t_mix": t_mix,
            "lam": lam, "running": lam * steps_per_request, "O": O, "I": I}


def _result(s: dict[str, np.ndarray], ttft, rps, saturated) -> LoadResult:
    O, I = s["O"], s["I"]
    e2e = compiled("e2e_latency_s")(ttft, O, s["itl"])
    return LoadResult(ttft, s["itl"], e2e, rps, rps * O, rps * (I + O), s["running"], s["t_dec"], s["t_mix"],
                      np.asarray(saturated))


def closed_loop(c, eff, budget, isl, osl, users, max_running, ideal, extras=Extras()) -> LoadResult:
    """`users` clients, each sending its next request when the last one ends (concurrency C; sync is C=1)."""
    U = np.asarray(users, dtype=float)
    B = np.minimum(U, max_running)
    s = steady_state(c, eff, budget, isl, osl, B, ideal, extras)
    e2e_running = s["ttft"] + (s["O"] - 1) * s["itl"]
    rps = np.minimum(s["rps"], U / e2e_running)
    queue = np.maximum(U / rps - e2e_running, 0.0)
    return _result(s, s["ttft"] + queue, rps, U > s["running"] + 0.5)


def burst(c, eff, budget, isl, osl, num_requests, max_running, ideal, extras=Extras()) -> LoadResult:
    """N requests submitted at once; throughput = N ÷ time until the last one ends."""
    N = np.asarray(num_requests, dtype=float)
    B = np.minimum(N, max_running)
    s = steady_state(c, eff, budget, isl, osl, B, ideal, extras)
    I_new = np.maximum(s["I"] * (1 - extras.prefix_hit_rate), 1.0)
    wave_prefill_steps = np.ceil(B * I_new / budget)
    total_steps = np.maximum(N / s["lam"], wave_prefill_steps + s["O"] - 1)
    duration = total_steps * s["t_bar"]
    rps = N / duration
    slot_wait = np.maximum(N - B, 0.0) ** 2 / (2 * N) / s["rps"]
    ramp = (wave_prefill_steps - 1) / 2 * s["t_mix"]
    ttft = s["ttft"] + ramp + slot_wait
    return _result(s, ttft, rps, N > B)


def open_loop(c, eff, budget, isl, osl, rate, max_running, ideal, extras=Extras(),
              num_requests=None, iterations: int = 12) -> LoadResult:
    """Requests arrive at `rate` per second. Below capacity, the running count solves B = R × e2e(B)
    (Little's law); queueing adds ρ/(1−ρ)·t̄/2. At or above capacity the queue grows for the whole test."""
    R = np.asarray(rate, dtype=float)
    cap = steady_state(c, eff, budget, isl, osl, max_running, ideal, extras)
    rps_max = cap["rps"]
    B = np.ones_like(R * rps_max)
    for _ in range(iterations):
        s = steady_state(c, eff, budget, isl, osl, B, ideal, extras)
        e2e = s["ttft"] + (s["O"] - 1) * s["itl"]
        B = np.clip(R * e2e, 1.0, max_running)
    s = steady_state(c, eff, budget, isl, osl, B, ideal, extras)
    rho = np.minimum(R / rps_max, 0.999)
    wait = compiled("queue_wait_s")(rho, s["t_bar"])
    n = R * 120.0 if num_requests is None else np.asarray(num_requests, dtype=float)
    over = R >= rps_max
    backlog = np.where(over, n / 2 * (1 / rps_max - 1 / np.maximum(R, 1e-12)), 0.0)
    served = np.where(over, rps_max, R)
    s_used = {k: np.where(over, cap[k], v) if k in ("itl", "t_dec", "t_mix", "running") else v for k, v in s.items()}
    ttft = np.where(over, cap["ttft"], s["ttft"] + wait) + backlog
    return _result(s_used, ttft, served, over)
