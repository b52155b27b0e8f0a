"""Load predictions for a continuous-batching engine: sync, concurrency C, burst N, arrival rate R.

Two regimes, both with the engine's token budget per step M (chunked prefill) and its slot limit:

* **Waves.** Requests that arrive together with equal lengths move together: a burst of N, and a
  closed loop of C clients with fixed lengths (each client resends when its request ends, so the
  clients stay in step — the wave a benchmark with fixed lengths produces). A wave prefills N·I tokens
  in k = ⌈N·I ÷ M⌉ chunk steps, then decodes O−1 steps at batch N. The request finishing prefill in
  chunk j waits j chunk steps for its first token (mean TTFT (k+1)/2 chunk steps) and sits through
  k−j chunk steps while decoding (mean ITL rises by (k−1)/2 chunk steps over O−1 gaps). When the KV
  cache cannot hold every sequence at full length, the engine preempts the excess and recomputes it
  after the others finish: a tail. The engine's front-end takes requests in one at a time
  (`admission_s` each), so a group submitted together waits N·admission before tokens stream back.
  An engine that does not mix prefill into decode steps (SGLang) runs each chunk alone: the chunk step
  carries no decodes, and a request that finished prefill in chunk j waits k−j chunk steps for nothing.
* **Steady state.** Staggered arrivals (a rate R), or more requests than slots: B sequences running,
  λ admitted per step (λ ≤ B/O slots, λ·(I+O−1) ≤ M budget), a share f of steps carrying a prefill
  chunk q; mean step t̄ = f·t(d, q) + (1−f)·t(d, 0); requests/s = λ ÷ t̄. Below capacity the running
  count solves Little's law B = R × e2e(B) and queueing adds ρ/(1−ρ)·t̄/2. Without mixing, a step that
  admits a prefill is a decode step plus a prefill-only step: t(d, 0) + t(0, q).

All functions broadcast over numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from capacity.calibration import Efficiency
from capacity.model.formulas import compiled
from capacity.model.kv import attended_tokens_decode, attended_tokens_prefill
from capacity.model.steptime import StepCosts, draft_forwards_s, draft_key_ratio, step_time_s


@dataclass(frozen=True)
class Extras:
    """Optional what-ifs: share of prompt tokens already in the prefix cache; speculative decoding."""

    prefix_hit_rate: float = 0.0
    spec_acceptance: float = 0.0  # 0 = no speculative decoding
    spec_draft_tokens: int = 0
    spec_draft_cost: float = 0.0  # one draft step's time as a share of one target decode step (no draft model)


@dataclass(frozen=True)
class Slots:
    """How many sequences one replica runs: in steady state (mean context I + O/2), at full length, and
    how many a wave can admit at once (the engine admits a request when its prompt's blocks are free)."""

    running: np.ndarray
    full_length: np.ndarray
    admitted: np.ndarray


@dataclass(frozen=True)
class LoadContext:
    """One engine on one GPU as the closed forms see it: the step costs and efficiencies, the token budget per step,
    the slots for the lengths priced, the what-ifs, and whether prefill chunks ride in decode steps. Each load shape
    (capacity/loads/) prices its load over this one object."""

    costs: StepCosts
    efficiency: Efficiency
    budget_tokens: float
    slots: Slots
    ideal: bool = False
    extras: Extras = Extras()
    mixed: bool = True
    recv_interval_steps: int = 1  # EngineProfile.recv_interval_steps (SGLang's --scheduler-recv-interval)
    steps_ahead: int = 0  # EngineProfile.steps_scheduled_ahead (vLLM's async scheduling: 1)

    def closed_loop(self, isl, osl, users, num_requests=None) -> LoadResult:
        r = closed_loop(self.costs, self.efficiency, self.budget_tokens, isl, osl, users, self.slots, self.ideal,
                        self.extras, self.mixed, num_requests)
        wait = np.where(waits_for_read("concurrency", users), receive_wait_s(r.decode_step_s, self.recv_interval_steps),
                        0.0)
        return with_receive_wait(r, wait, closed=True)

    def burst(self, isl, osl, num_requests) -> LoadResult:
        return burst(self.costs, self.efficiency, self.budget_tokens, isl, osl, num_requests, self.slots, self.ideal,
                     self.extras, self.mixed)

    def open_loop(self, isl, osl, rate, num_requests=None) -> LoadResult:
        r = open_loop(self.costs, self.efficiency, self.budget_tokens, isl, osl, rate, self.slots, self.ideal,
                      self.extras, num_requests, mixed=self.mixed)
        wait = np.where(waits_for_read("rate", rate), receive_wait_s(r.decode_step_s, self.recv_interval_steps), 0.0)
        return with_receive_wait(r, wait + scheduled_ahead_wait_s(r.decode_step_s, r.running, self.steps_ahead),
                                 closed=False)


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


def waits_for_read(kind: str, value) -> np.ndarray:
    """Whether a request of this load can arrive while a batch runs, and so waits for the scheduler's next read of
    its socket: a closed loop of several clients, and open arrivals. One client (sync, concurrency 1) and a burst meet
    an idle scheduler."""
    value = np.asarray(value, dtype=float)
    if kind == "rate":
        return np.ones(value.shape, dtype=bool)
    return value > 1 if kind == "concurrency" else np.zeros(value.shape, dtype=bool)


def receive_wait_s(decode_step_s, interval_steps: int):
    """The mean wait of a request for the scheduler's next read of its socket beyond the every-step reading the
    closed forms assume, when it reads only every `interval_steps` decode steps (SGLang's
    --scheduler-recv-interval): an arrival at a random moment of the N-step cycle waits (N − 1) / 2 steps more.
    Where a request meets an idle scheduler it reads at once (`waits_for_read`). Lockstep waves that empty the batch together would wait none either; a closed loop of several clients is taken
    as drifted (lengths spread, as the public benchmarks draw them)."""
    return (interval_steps - 1) / 2 * np.asarray(decode_step_s, dtype=float)


def scheduled_ahead_wait_s(decode_step_s, running, steps_ahead: int):
    """The mean extra wait of an open-loop arrival under async scheduling: a busy engine scheduled the successor of
    the step now running when that step started, so a request arriving meanwhile waits `steps_ahead` steps more than
    a synchronous scheduler makes it wait (EngineProfile.steps_scheduled_ahead). It meets a busy engine with the
    chance that a Poisson count of mean `running` is not zero; an idle engine schedules it at once. Closed loops
    priced as lockstep waves resend to an idle engine and wait none."""
    busy = 1.0 - np.exp(-np.asarray(running, dtype=float))
    return steps_ahead * busy * np.asarray(decode_step_s, dtype=float)


def with_receive_wait(r: LoadResult, wait_s, closed: bool) -> LoadResult:
    """`r` with every request waiting `wait_s` longer before its prompt runs: TTFT and end-to-end latency grow by
    it; a closed loop's clients then send proportionally fewer requests (an open loop's arrivals are set)."""
    wait_s = np.asarray(wait_s, dtype=float)
    if not np.any(wait_s):
        return r
    e2e = r.e2e_latency_s + wait_s
    share = np.where(e2e > 0, r.e2e_latency_s / e2e, 1.0) if closed else 1.0
    return replace(r, ttft_s=r.ttft_s + wait_s, e2e_latency_s=e2e, requests_per_s=r.requests_per_s * share,
                   output_tokens_per_s=r.output_tokens_per_s * share, total_tokens_per_s=r.total_tokens_per_s * share)


def spec_tokens_per_step(acceptance: float, draft_tokens: int) -> float:
    """Tokens a sequence gains per verification step with k drafts at per-token acceptance a (1 without drafts)."""
    if draft_tokens <= 0 or acceptance <= 0:
        return 1.0
    return float(compiled("spec_tokens_per_step")(min(acceptance, 0.999), draft_tokens))


def speculation(extras: Extras, c: StepCosts) -> tuple[float, float]:
    """(tokens per decode step per sequence, extra query tokens per sequence per step). Without a draft model an
    acceptance of 0 means no speculative decoding; a draft model (the plan's `c.draft`) still drafts, and the target
    verifies, k tokens."""
    if extras.spec_draft_tokens <= 0 or (extras.spec_acceptance <= 0 and c.draft is None):
        return 1.0, 0.0
    return spec_tokens_per_step(extras.spec_acceptance, extras.spec_draft_tokens), float(extras.spec_draft_tokens)


def spec_acceptance_for(tokens_per_step: float, draft_tokens: int) -> float:
    """The per-token acceptance a whose expected tokens per verification step, (1 - a^(k+1)) / (1 - a), is the
    measured one (1 + accepted / drafts, from the engine's counters); capped below 1."""
    k = int(draft_tokens)
    target = min(max(float(tokens_per_step), 1.0), k + 1.0)
    lo, hi = 0.0, 0.999
    if spec_tokens_per_step(hi, k) <= target:
        return hi
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if spec_tokens_per_step(mid, k) < target else (lo, mid)
    return lo


def _decode_step(c, eff, d, ctx, ideal, extras: Extras, prefill=0.0, keys=0.0):
    """A step decoding d sequences (with speculative verification and drafts) plus `prefill` tokens. The drafts: a
    draft model's own forwards when the plan has its costs (`c.draft`, `draft_forwards_s`), else the ratio
    `spec_draft_cost` × a target decode step per draft."""
    tau, extra_q = speculation(extras, c)
    spec_q = d * extra_q
    # the verification queries attend their sequence's context in every layer (keys per token summed over layers,
    # as a prompt chunk's are): attended_tokens_decode, not the bare context
    t = step_time_s(c, eff, d, ctx, prefill + spec_q, np.where(prefill > 0, keys, attended_tokens_decode(c.arch, ctx)),
                    ideal)
    if extra_q and c.draft is not None:
        # the draft attends the same keys over its own layers (keys are summed over layers)
        keys_d = np.asarray(keys, dtype=float) * draft_key_ratio(c)
        t = t + draft_forwards_s(c.draft, eff, d, ctx, extra_q, tau, prefill, keys_d, ideal)
    elif extra_q:
        t = t + extras.spec_draft_cost * extra_q * step_time_s(c, eff, d, ctx, 0, 0, ideal)
    return t


def _lengths(isl, osl, extras: Extras):
    I = np.asarray(isl, dtype=float)
    O = np.maximum(np.asarray(osl, dtype=float), 1.0)
    I_new = np.maximum(I * (1 - extras.prefix_hit_rate), 1.0)
    return I, O, I_new


def idle_start_extra_s(eff: Efficiency, first_step_s) -> np.ndarray:
    """What starting an idle engine adds to its first step: that step's CPU work (`idle_step_s`) runs beside its GPU
    work, so the step lasts at least `idle_step_s` (sittings 22-24: graphed lone prompts flat near 16 ms up to 512
    tokens, then the GPU's time plus the front end; the profiler: a 128-token step's GPU busy 5 of ~20 ms, a 2,048-token
    one's 42 of 45-47 ms)."""
    return np.maximum(eff.idle_step_s - np.asarray(first_step_s, dtype=float), 0.0)


def wave(c: StepCosts, eff: Efficiency, budget: float, isl, osl, n, full_length, ideal: bool,
         extras: Extras = Extras(), mixed: bool = True) -> dict[str, np.ndarray]:
    """N equal requests arriving together (N within the engine's slots)."""
    I, O, I_new = _lengths(isl, osl, extras)
    N = np.maximum(np.asarray(n, dtype=float), 1.0)
    tau, _ = speculation(extras, c)
    keys = attended_tokens_prefill(c.arch, I_new, I * extras.prefix_hit_rate)
    k = np.maximum(np.ceil(N * I_new / budget), 1.0)
    chunk = N * I_new / k
    t_c = _decode_step(c, eff, N * (k - 1) / (2 * k) if mixed else 0.0, I, ideal, extras, chunk, keys)
    decode_steps = (O - 1) / tau
    # the KV cache holds `room` tokens; when N sequences outgrow it (after t1 outputs) the engine preempts the
    # latest, so the batch shrinks as room/(I+t) until the fitted ones finish; the evicted E = N − fit then
    # recompute their prompt and the t_e outputs they had (mean t̄_e) and decode the O − t_e left
    fit = np.minimum(np.maximum(np.asarray(full_length, dtype=float), 1.0), N)
    evicted = N - fit
    room = fit * (I + O)
    t1 = np.clip(room / N - I, 0.0, O)
    grow = np.log((I + O) / (I + t1))
    late = np.maximum(O - t1, 1e-9)
    shrinking = np.where(evicted > 0, room * grow / late, N)  # mean batch while the cache is full
    t_e = np.where(evicted > 0, room * (grow + I / (I + O) - I / (I + t1)) / np.maximum(evicted, 1e-9), O)
    steps_full = np.minimum(t1 / tau, decode_steps)
    main = (steps_full * _decode_step(c, eff, N, I + t1 / 2, ideal, extras)
            + (decode_steps - steps_full) * _decode_step(c, eff, shrinking, room / shrinking, ideal, extras))
    t_d = main / np.maximum(decode_steps, 1e-9)
    redo = evicted * (I + t_e)
    recompute = np.where(evicted > 0, step_time_s(c, eff, 0, I, np.minimum(redo, budget), keys, ideal)
                         * np.ceil(redo / budget), 0.0)
    if np.any(evicted > 0):  # the evicted requests' own decode tail (priced only where some were evicted)
        t_tail = _decode_step(c, eff, np.maximum(evicted * (O - t_e) / late, 1.0), I + (O + t_e) / 2, ideal, extras)
        tail = np.where(evicted > 0, recompute + (O - t1) / tau * t_tail, 0.0)
    else:
        t_tail, tail = 0.0, np.zeros_like(evicted * 1.0)
    idle = idle_start_extra_s(eff, t_c)  # the first step starts an idle engine
    duration = idle + k * t_c + main + tail
    # the front-end takes the N requests in one by one before it streams first tokens back
    # a request's prompt is done after (k+1)/2 chunk steps on average, after all k when one prompt spans them
    ttft = eff.front_end_s(I) + idle + N * eff.admission_s + np.maximum((k + 1) / 2, k * (N + 1) / (2 * N)) * t_c
    gaps = np.maximum(O - 1, 1.0)
    # chunk steps after a request's own prompt is done: (k−1)/2 on average, none when one prompt spans them
    after = np.where(O > 1, np.minimum((k - 1) / 2, k * (N - 1) / (2 * N)), 0.0)
    # mixed: those are chunk steps instead of decode steps; unmixed: they come on top, the sequence waits
    waited = np.minimum(after, decode_steps) * (t_c - t_d) if mixed else after * t_c
    # an evicted request waits out the others, its recompute, then decodes its O − t_e left
    evicted_extra = np.where(evicted > 0, recompute + (O - t_e) / tau * t_tail, 0.0)
    itl = (main + waited + evicted_extra * evicted / N) / gaps
    return {"ttft": ttft, "itl": itl, "duration": duration, "t_dec": t_d, "t_mix": t_c, "running": N, "O": O, "I": I}


def steady_state(c: StepCosts, eff: Efficiency, budget: float, isl, osl, running, ideal: bool,
                 extras: Extras = Extras(), mixed: bool = True) -> dict[str, np.ndarray]:
    """Continuous batching with `running` sequence slots kept full by staggered arrivals."""
    I, O, I_new = _lengths(isl, osl, extras)
    B = np.maximum(np.asarray(running, dtype=float), 1.0)
    keys = attended_tokens_prefill(c.arch, I_new, I * extras.prefix_hit_rate)
    tau, extra_q = speculation(extras, c)
    steps_per_request = 1 + (O - 1) / tau
    # the step's token budget holds the admitted prompts, and with mixing the decoding tokens too
    per_request = I_new + (O - 1) / tau * (1 + extra_q) if mixed else I_new
    lam = np.minimum(B / steps_per_request, budget / per_request)
    d = lam * (O - 1) / tau
    ctx = I + O / 2
    room = np.maximum(budget - d * (1 + extra_q), 1.0) if mixed else np.full_like(d, float(budget))
    q = np.minimum(np.maximum(I_new, lam * I_new), room)
    f = np.minimum(1.0, lam * I_new / q)
    t_dec = _decode_step(c, eff, d, ctx, ideal, extras)
    t_mix = (_decode_step(c, eff, d, ctx, ideal, extras, q, keys) if mixed
             else t_dec + step_time_s(c, eff, 0, ctx, q, keys, ideal))
    t_bar = f * t_mix + (1 - f) * t_dec
    others = (B - 1) / B
    itl = (others * f * t_mix + (1 - others * f) * t_dec) / tau
    chunks = np.ceil(I_new / room)
    own_prefill = chunks * np.where(chunks > 1, step_time_s(c, eff, d if mixed else 0, ctx, room, keys, ideal), t_mix)
    ttft = eff.front_end_s(I) + others * t_bar / 2 + own_prefill
    rps = lam / t_bar
    return {"ttft": ttft, "itl": itl, "rps": rps, "t_bar": t_bar, "t_dec": t_dec, "t_mix": t_mix, "keys": keys,
            "lam": lam, "running": lam * steps_per_request, "O": O, "I": I, "I_new": I_new}


def _result(s: dict[str, np.ndarray], ttft, rps, saturated) -> LoadResult:
    O, I = s["O"], s["I"]
    e2e = compiled("e2e_latency_s")(ttft, O, s["itl"])
    return LoadResult(ttft, s["itl"], e2e, rps, rps * O, rps * (I + O), s["running"], s["t_dec"], s["t_mix"],
                      np.asarray(saturated))


def _pick(mask, a: dict, b: dict) -> dict:
    return {k: np.where(mask, a[k], b[k]) for k in a if k in b}


def closed_loop(c, eff, budget, isl, osl, users, slots: Slots, ideal, extras=Extras(), mixed=True,
                num_requests=None) -> LoadResult:
    """`users` clients with fixed lengths, each resending when its request ends (sync is 1 user).
    Within the engine's slots they move in waves; beyond them the excess queues in the engine.
    A finite test of `num_requests` ends with its last wave's stragglers (sequences the KV cache
    evicted and recomputed), so its requests/s is completed ÷ (waves before the last × mean e2e + the
    last wave's whole duration); without it, the endless loop's B ÷ mean e2e."""
    U = np.asarray(users, dtype=float)
    B = np.minimum(U, slots.running)
    w = wave(c, eff, budget, isl, osl, B, slots.full_length, ideal, extras, mixed)
    e2e_w = w["ttft"] + (w["O"] - 1) * w["itl"]
    w["rps"] = B / e2e_w
    s = steady_state(c, eff, budget, isl, osl, B, ideal, extras, mixed)
    e2e_s = s["ttft"] + (s["O"] - 1) * s["itl"]
    s["rps"] = np.minimum(s["rps"], B / e2e_s)
    in_waves = U <= slots.running
    m = _pick(in_waves, w, s)
    queue = np.maximum(U / m["rps"] - (m["ttft"] + (m["O"] - 1) * m["itl"]), 0.0)
    rps = m["rps"]
    if num_requests is not None:
        n = np.maximum(np.asarray(num_requests, dtype=float), B)
        cycle = B / rps  # one round of B requests
        last = np.where(in_waves, np.maximum(w["duration"] + eff.front_end_s(w["I"]), cycle), cycle)
        rps = n / ((n / B - 1) * cycle + last)
    return _result(m, m["ttft"] + queue, rps, ~in_waves)


def burst(c, eff, budget, isl, osl, num_requests, slots: Slots, ideal, extras=Extras(), mixed=True) -> LoadResult:
    """N requests submitted at once; throughput = N ÷ time until the last one ends."""
    N = np.asarray(num_requests, dtype=float)
    B = np.minimum(N, slots.running)
    one_wave = N <= slots.admitted  # every prompt fits at once: all N run, preemption makes the room
    w = wave(c, eff, budget, isl, osl, np.where(one_wave, N, B), slots.full_length, ideal, extras, mixed)
    w["rps"] = N / (w["duration"] + eff.front_end_s(w["I"]))
    s = steady_state(c, eff, budget, isl, osl, B, ideal, extras, mixed)
    I_new = s["I_new"]
    budget_bound = budget / (I_new + (s["O"] - 1 if mixed else 0.0)) < B / s["O"]
    # N/λ steps of mixed prefill+decode admit every request, then O−1 drain steps of decode only while
    # the last admitted finish (mean batch d/2); a request spends a share φ of its gaps in the drain
    tau, _ = speculation(extras, c)
    d = s["lam"] * (s["O"] - 1) / tau
    t_drain = _decode_step(c, eff, np.maximum(d / 2, 1.0), s["I"] + s["O"] / 2, ideal, extras)
    admit_steps = N / s["lam"]
    phi = np.minimum(1.0, (s["O"] - 1) / (2 * admit_steps))
    rps_s = N / (admit_steps * s["t_bar"] + (s["O"] - 1) / tau * t_drain)
    s["itl"] = (1 - phi) * s["itl"] + phi * t_drain / tau
    # admission: with the token budget binding, requests enter at the steady pace λ per step, so the
    # mean request waits N/(2λ) steps; with the slots binding, the first B enter at the prefill pace
    # and the rest as slots free up. The first B's prompts fill whole budget-sized prefill steps (with the
    # sequences admitted before them decoding alongside, B/2 on average, when the engine mixes)
    first = np.maximum(B * I_new / budget, 1.0)
    t_first = _decode_step(c, eff, B / 2 if mixed else 0.0, s["I"], ideal, extras, np.minimum(B * I_new, budget),
                           s["keys"])
    slot_wait = (B * first / 2 * t_first + (N - B) * (first * t_first + (N - B) / (2 * s["lam"]) * s["t_bar"])) / N
    wait = np.where(budget_bound, N / (2 * s["lam"]) * s["t_bar"], slot_wait)
    s["ttft"] = s["ttft"] + wait + N * eff.admission_s
    s["rps"] = rps_s
    m = _pick(one_wave, w, s)
    return _result(m, m["ttft"], m["rps"], ~one_wave)


def open_loop(c, eff, budget, isl, osl, rate, slots: Slots, ideal, extras=Extras(),
              num_requests=None, iterations: int = 12, mixed: bool = True) -> LoadResult:
    """Requests arrive at `rate` per second. Below capacity, the running count solves B = R × e2e(B)
    (Little's law); queueing adds ρ/(1−ρ)·t̄/2. At or above capacity the queue grows for the whole test."""
    R = np.asarray(rate, dtype=float)
    cap = steady_state(c, eff, budget, isl, osl, slots.running, ideal, extras, mixed)
    rps_max = cap["rps"]
    B = np.ones_like(R * rps_max)
    s = steady_state(c, eff, budget, isl, osl, B, ideal, extras, mixed)
    for _ in range(iterations):
        e2e = s["ttft"] + (s["O"] - 1) * s["itl"]
        B_next = np.clip(R * e2e, 1.0, slots.running)
        if np.allclose(B_next, B, rtol=1e-6, atol=0.0):  # converged: s is the steady state at B (no step priced twice)
            break
        B = B_next
        full = np.array_equal(B, np.broadcast_to(np.asarray(slots.running, dtype=float), B.shape))
        s = cap if full else steady_state(c, eff, budget, isl, osl, B, ideal, extras, mixed)  # full: priced above
    rho = np.minimum(R / rps_max, 0.999)
    wait = compiled("queue_wait_s")(rho, s["t_bar"])
    n = R * 120.0 if num_requests is None else np.asarray(num_requests, dtype=float)
    over = R >= rps_max
    backlog = np.where(over, n / 2 * (1 / rps_max - 1 / np.maximum(R, 1e-12)), 0.0)
    served = np.where(over, rps_max, R)
    s_used = {k: np.where(over, cap[k], v) if k in ("itl", "t_dec", "t_mix", "running") else v for k, v in s.items()}
    # an arrival finds the engine idle with the chance that nothing is in flight (B in flight on average, Poisson
    # in number): then its first step lasts at least the CPU work a busy engine overlaps (idle_start_extra_s)
    alone = step_time_s(c, eff, 0, 0.0, np.minimum(s["I_new"], budget), s["keys"], ideal)  # its prompt's step on an idle engine
    idle = np.exp(-B) * idle_start_extra_s(eff, alone)
    ttft = np.where(over, cap["ttft"], s["ttft"] + wait + idle) + backlog
    if num_requests is not None:  # a finite test: completed ÷ (last end − first start) includes the drain
        e2e = ttft + (s_used["O"] - 1) * s_used["itl"]
        served = n / (n / served + e2e)
    return _result(s_used, ttft, served, over)
