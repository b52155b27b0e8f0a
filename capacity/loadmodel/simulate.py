"""An exact step simulator of a continuous-batching engine: the reference the closed forms are held to.

The engine is a loop of steps. Each step the scheduler (vLLM 0.26's v1 scheduler; SGLang's when the
engine does not mix prefill into decode steps) decides which tokens run, the step model prices them
(`Stepper`, the same operator rooflines as `step_parts`), and time moves on by that step:

* **running first**: every decoding sequence gets one token; a sequence whose next token needs a KV
  block that is not free preempts the most recently admitted running request (recompute: it goes
  back to the head of the queue and later prefills its prompt and the tokens it had made again);
* **then partial prefills**, then **waiting requests in arrival order** while the token budget per
  step, the sequence limit and the KV blocks allow. A request is admitted when the blocks of its
  whole prompt are free (vLLM 0.26) and its prompt is chunked across steps by the budget;
* **without mixing** (SGLang) a step is either a prefill batch (new chunks only) or a decode batch;
* **reserving output** (SGLang) a request is admitted only when its whole final length (prompt and every output
  token) fits beside the whole final lengths of the requests already running, so the decodes never run out of
  blocks (SGLang's admission by estimated need, at its starting ratio of reserved output; its later decay of that
  ratio and the retractions it causes are not modelled). Admitting a prompt into the blocks the decodes need next
  would preempt them step after step (a burst larger than the cache priced 0.5 req/s where SGLang measured 21).

* **speculative decoding** (drafts that cost no forward, as n-gram prompt lookup, a fixed share of a decode step, or
  a draft model's k forwards after every step, a prompt chunk's included, as the closed forms price them): every decode
  step verifies k drafts per sequence (`SpecStepper`; k more tokens of the step's budget each) and a
  sequence keeps 1 + the drafts before the first rejection. The steps a sequence needs are drawn when it starts to
  decode, so sequences of one length finish apart and a closed loop drifts out of lockstep (sitting 15's 16 clients at
  acceptance 0.13: 139 ms TTFT measured, the lockstep closed form 320 ms). Its context is priced as growing evenly over
  those steps to its exact end. With a draft model (sitting 16b, 64 clients, acceptance 0.64): TTFT 789 ms measured,
  the lockstep closed form 1.12 s, the simulator 671 ms.

A request's first token comes at the end of the step that finishes its prompt; one more per decode
step after that (1 + accepted drafts with speculative decoding). The front end takes requests in one at a time (`admission_s` each) and cannot
stream tokens back while it does; `request_overhead_s` (HTTP, input processing) delays each
request on its way in. Clients are what benchmarks run: one at a time (sync), C clients in a closed
loop that all start at once, N at once (burst), open arrivals (constant, Poisson or gamma gaps), or
a replayed trace of arrival times and lengths. Lengths are fixed or spread (uniform / normal, as
`validate --length-dist` draws them). Deterministic under a seed: lengths and gaps come from the streams
validate's senders draw from (capacity/loads/draws.py), so a simulated run with seed S sends what
`validate --seed S` sends.

Speed (10,000 requests in a fraction of a second; `make bench`): decode-only stretches with nothing
to admit are taken in one jump up to the next event (a finish, an arrival, a full KV cache), priced
step by step in plain floats or, when long, in one vectorized call (the same sums either way). The
decoding sequences advance together, so they are kept as offsets from one step clock with their
context sum, finish heap and a bound on their KV blocks as running totals (`_Decoders`); the exact
block count is summed only when a cache is near full. `tests/test_simulate.py` holds the results
equal to a plain scheduler that takes one step at a time and recomputes everything.
"""

from __future__ import annotations

import bisect
import heapq
from collections import deque
from dataclasses import dataclass
from collections.abc import Callable
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from capacity.calibration import Efficiency
from capacity.errors import WorkloadError
from capacity.loadmodel.workload import spec_tokens_per_step
from capacity.loads import SHAPES, shape
from capacity.loads.draws import DRAFTS_STREAM, arrivals_rng, lengths_rng, spread_lengths, stream_rng
from capacity.model.memory import blocks_per_sequence
from capacity.plan import Plan
from capacity.model.stepper import SpecStepper, Stepper
from capacity.model.steptime import draft_cpu_s, draft_efficiency, draft_key_ratio

MAX_SIM_REQUESTS = 1_000_000
# Steps in a row that preempt and sample no token before the run is called stuck. Without mixed prefill a prompt can
# be admitted into the blocks the decodes need next, preempted by them, and admitted again at once, step after step,
# with no decode ever running: the run would never end (seen on small caches with chunked prompts).
MAX_STALLED_STEPS = 10_000


class Traffic(BaseModel):
    """Who sends what, when: the arrival process and the request lengths of one simulated run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str  # a load shape's kind (capacity/loads/), or "trace": recorded send times replayed
    value: float = Field(1.0, gt=0, description="clients (concurrency), requests (burst) or requests/s (rate)")
    num_requests: int = Field(100, ge=1, le=MAX_SIM_REQUESTS)
    arrivals: Literal["constant", "poisson", "gamma"] = "constant"
    gamma_shape: float = Field(1.0, gt=0, description="gamma arrivals: shape k (1 = Poisson, < 1 burstier)")
    think_time_s: float = Field(0.0, ge=0, description="closed loop: pause between a reply and the next request")
    start_spread_s: float = Field(0.0, ge=0, le=1e9, description="closed loop: the clients' first requests spread "
                                  "evenly over this many seconds (0: all at once, as a benchmark starts)")
    length_dist: Literal["fixed", "uniform", "normal"] = "fixed"
    length_ratio: float = Field(0.0, ge=0, lt=10)
    seed: int = 0
    # trace replay: send times (s) and lengths, one entry per request; lengths alone replay a closed loop or burst
    trace_send_s: tuple[float, ...] = ()
    trace_isl: tuple[int, ...] = ()
    trace_osl: tuple[int, ...] = ()

    @field_validator("kind")
    @classmethod
    def _known(cls, kind: str) -> str:
        if kind != "trace" and kind not in SHAPES:
            raise ValueError(f"unknown load kind {kind!r}: one of {', '.join(SHAPES)} or trace")
        return kind


@dataclass(frozen=True)
class EngineContext:
    """One engine on one lane (a replica, or one of a pipeline's batches in flight): step prices, scheduler limits, KV blocks and front-end costs."""

    stepper: Stepper
    token_budget: int
    max_num_seqs: int
    num_blocks: int
    block_table: np.ndarray  # blocks one sequence of c tokens holds, for c = 0 … max context
    mixed: bool
    request_overhead_s: float
    admission_s: float
    prefix_hit_rate: float = 0.0
    block_size_tokens: int = 16
    reserve_output: bool = False  # admit by the whole final length (SGLang), not by the prompt's blocks (vLLM)
    spec_draft_tokens: int = 0  # speculative decoding: k drafts verified per decoding sequence and step
    spec_acceptance: float = 0.0  # the chance that each draft is accepted (the first rejection ends the run)
    recv_interval_steps: int = 1  # new arrivals are read every this many decode steps while a batch runs (SGLang)
    steps_ahead: int = 0  # EngineProfile.steps_scheduled_ahead (0 or 1): an arrival to a busy engine is seen a step late
    prompt_token_overhead_s: float = 0.0  # the front end's time per prompt token, on top of request_overhead_s
    idle_step_s: float = 0.0  # least time of the first step after the engine idled (its CPU work, hidden by async scheduling when busy)

    @classmethod
    def build(cls, plan: Plan, eff: Efficiency, ideal: bool, max_context: int, prefix_hit_rate: float = 0.0,
              spec_acceptance: float = 0.0, spec_draft_tokens: int = 0, spec_draft_cost: float = 0.0) -> EngineContext:
        """The engine of a plan. With k > 0 drafts every decode step verifies k drafts per sequence (`SpecStepper`):
        drafts that cost no forward (n-gram) or `spec_draft_cost` of a decode step each, which speculate only at an
        acceptance above 0, or a draft model (the plan's `costs.draft`), whose k forwards run after every
        verification step at any acceptance (at 0 none is kept, but all are paid for)."""
        prof = plan.profile
        ctx = np.arange(max_context + 2, dtype=float)
        table = np.asarray(blocks_per_sequence(plan.kv_model, ctx, plan.lane_blocks, prof.block_size_tokens), dtype=np.int64)
        table[0] = 0
        c = plan.costs
        k = int(spec_draft_tokens) if spec_draft_tokens and (spec_acceptance > 0 or c.draft is not None) else 0
        stepper = Stepper.build(c, eff, ideal)
        if k and c.draft is not None:
            stepper = SpecStepper(stepper, k, 0.0, Stepper.build(c.draft, draft_efficiency(eff), ideal),
                                  spec_tokens_per_step(spec_acceptance, k),
                                  0.0 if ideal else draft_cpu_s(c.draft, eff), draft_key_ratio(c))
        elif k:
            stepper = SpecStepper(stepper, k, spec_draft_cost)
        budget = prof.max_num_batched_tokens * prof.rank_multiple(plan.dp_ranks)  # drafts come out of it in the step
        return cls(stepper, int(min(budget, 10**9)),
                   int(min(plan.max_num_seqs, 10**9)), int(plan.lane_blocks.num_blocks), table, prof.mixed_prefill,
                   0.0 if ideal else eff.request_overhead_s, 0.0 if ideal else eff.admission_s, prefix_hit_rate,
                   prof.block_size_tokens, prof.reserve_output_at_admission and not ideal, k,
                   float(spec_acceptance) if k else 0.0, 1 if ideal else prof.recv_interval_steps,
                   0 if ideal else prof.steps_scheduled_ahead, 0.0 if ideal else eff.prompt_token_overhead_s,
                   0.0 if ideal else eff.idle_step_s)


@dataclass(frozen=True)
class SimResult:
    """Per-request times of one simulated run (client-side, seconds from the first send) and engine facts."""

    isl: np.ndarray
    osl: np.ndarray
    send_s: np.ndarray
    first_token_s: np.ndarray
    end_s: np.ndarray
    preemptions: int
    steps: int
    busy_s: float
    mean_running: float  # time-weighted sequences in the batch while the engine runs
    max_running: int
    kv_full_share: float  # share of engine time with fewer free blocks than one more block per sequence

    def summary(self, window: Literal["all", "steady"] = "all") -> dict[str, float]:
        """Means as a benchmark reports them: TTFT and e2e over requests, ITL pooled over every gap,
        throughput = completed ÷ (last end − first send). `steady` keeps the requests sent in the middle
        60 % of the sending period (a service long after start-up) and rates them by their own span."""
        keep = np.ones(len(self.isl), dtype=bool)
        if window == "steady" and len(self.isl) >= 10:
            lo, hi = np.quantile(self.send_s, [0.2, 0.8])
            keep = (self.send_s >= lo) & (self.send_s <= hi)
            if keep.sum() < 5:
                keep[:] = True
        ttft = self.first_token_s[keep] - self.send_s[keep]
        e2e = self.end_s[keep] - self.send_s[keep]
        gaps = np.maximum(self.osl[keep] - 1, 0)
        decode_time = (self.end_s[keep] - self.first_token_s[keep]).sum()
        itl = float(decode_time / gaps.sum()) if gaps.sum() else 0.0
        if window == "steady":  # completions per second between the 20th and 80th percentile of end times
            t_a, t_b = np.quantile(self.end_s, [0.2, 0.8])
            span = float(t_b - t_a)
            n = float(((self.end_s >= t_a) & (self.end_s <= t_b)).sum())
        else:
            span = float(self.end_s.max() - self.send_s.min())
            n = float(len(self.end_s))
        rps = n / span if span > 0 else 0.0
        mean_i, mean_o = float(self.isl[keep].mean()), float(self.osl[keep].mean())
        return {"ttft_s": float(ttft.mean()), "itl_s": itl, "e2e_latency_s": float(e2e.mean()),
                "requests_per_s": rps, "output_tokens_per_s": rps * mean_o, "total_tokens_per_s": rps * (mean_i + mean_o),
                "p90_ttft_s": float(np.quantile(ttft, 0.9)), "p99_ttft_s": float(np.quantile(ttft, 0.99)),
                "running": self.mean_running}


class _FrontEnd:
    """The API server's intake: one request at a time, `admission_s` each. Requests taken in during one busy
    period reach the engine together when it ends (what vLLM 0.26 showed: a group submitted together waits for
    the whole group before tokens flow, so TTFT grows by N × admission_s); tokens the engine makes meanwhile
    reach their clients when the period ends."""

    def __init__(self, admission_s: float, overhead_s: float, per_token_s: float, prompt_tokens: list[int]) -> None:
        self.admission_s = admission_s
        self.way_in = [overhead_s + per_token_s * n for n in prompt_tokens]  # fixed + per prompt token (tokenizing)
        self.period_end = -np.inf
        self.pending: list[int] = []
        self.soonest_way_in = np.inf  # the shortest way in among the pending requests
        self.starts: list[float] = []
        self.ends: list[float] = []

    def intake(self, send_s: float, request: int, heap: list[tuple[float, int]]) -> None:
        if send_s > self.period_end:
            self.flush(heap)
            if self.admission_s > 0:
                self.starts.append(send_s)
                self.ends.append(send_s)
            self.period_end = send_s
        self.period_end += self.admission_s
        if self.admission_s > 0:
            self.ends[-1] = self.period_end
        self.pending.append(request)
        self.soonest_way_in = min(self.soonest_way_in, self.way_in[request])

    def flush(self, heap: list[tuple[float, int]]) -> None:
        for i in self.pending:
            heapq.heappush(heap, (self.period_end + self.way_in[i], i))
        self.pending.clear()
        self.soonest_way_in = np.inf

    def next_handover_s(self) -> float:
        return self.period_end + self.soonest_way_in if self.pending else np.inf

    def deliver(self, t: float) -> float:
        """When a token the engine produced at `t` reaches the client (after any intake in progress)."""
        i = bisect.bisect_right(self.starts, t) - 1
        return self.ends[i] if i >= 0 and t < self.ends[i] else t


def _requests(traffic: Traffic, isl: int, osl: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(input lengths, output lengths, send times or None for closed loops)."""
    if traffic.kind == "trace":
        n = len(traffic.trace_send_s)
        if not n or len(traffic.trace_isl) != n or len(traffic.trace_osl) != n:
            raise WorkloadError("trace: send times, input and output lengths must be given, one per request")
        send = np.asarray(traffic.trace_send_s, dtype=float)
        return (np.maximum(np.asarray(traffic.trace_isl, dtype=int), 1), np.maximum(np.asarray(traffic.trace_osl, dtype=int), 1),
                send - send.min())
    load = shape(traffic.kind)
    n = load.simulated_requests(traffic.value, traffic.num_requests)
    arrivals = arrivals_rng(traffic.seed)  # the streams validate's senders draw from (capacity/loads/draws.py)
    if traffic.trace_isl:  # recorded lengths, in send order (a closed loop or burst replayed with its own lengths)
        if len(traffic.trace_osl) != len(traffic.trace_isl):
            raise WorkloadError("trace: input and output lengths must be given, one pair per request")
        I = np.maximum(np.asarray(traffic.trace_isl, dtype=int), 1)
        O = np.maximum(np.asarray(traffic.trace_osl, dtype=int), 1)
        return I, O, load.send_times(traffic.value, len(I), arrivals, traffic.arrivals, traffic.gamma_shape)
    if traffic.length_dist != "fixed":
        # one draw per length, input then output, request after request: the stream of 2n single draws, drawn at once
        lengths = spread_lengths(lengths_rng(traffic.seed), np.tile([isl, osl], n), traffic.length_dist,
                                 traffic.length_ratio, 2 * n)
        I, O = lengths[0::2].astype(int), lengths[1::2].astype(int)
    else:
        I, O = np.full(n, isl, dtype=int), np.full(n, osl, dtype=int)
    return I, O, load.send_times(traffic.value, n, arrivals, traffic.arrivals, traffic.gamma_shape)


class _Decoders:
    """The decoding sequences. A decode step gives each of them one token, so they advance together and are kept
    as offsets from one shared step clock (context = base + clock). What they hold in KV blocks is bounded by the
    blocks each holds at its last token (a running sum, kept as they come and go); the exact count, one numpy sum
    over their contexts (kept packed in `slot_base`), is taken only where that bound could exceed the room (a
    cache near full). Finishes are a heap of (clock of the last token, admission number, request): a step's
    finishers come out in admission order."""

    def __init__(self, table: np.ndarray, out_len: list[int], most_at_once: int,
                 steps_for: Callable[[int], int] | None = None) -> None:
        n = len(out_len)
        self.table = table
        # speculative decoding: the decode steps a sequence needs for its tokens left (drawn), else one per token
        self.steps_for = steps_for
        self.most = np.maximum.accumulate(table).tolist()  # blocks a sequence holds up to a context, at most
        self.out_len = out_len
        self.clock = 0
        self.slot_base = np.zeros(max(most_at_once, 1), dtype=np.float64)  # context − rate × clock, per slot
        self.slot_rate = np.ones(max(most_at_once, 1), dtype=np.float64)  # tokens per step (1 without drafts)
        self.slot_request: list[int] = []
        self.slot_of = [-1] * n  # request -> its slot (−1: not decoding)
        self.made_base = [0] * n  # request -> tokens sampled − clock
        self.admission = [0] * n  # request -> its admission number (tells stale heap entries apart)
        self.last_blocks = [0] * n  # request -> blocks at its last token, at most
        self.context_sum = 0.0
        self.rate_sum = 0.0  # tokens all of them gain per step
        self.blocks_bound = 0
        self.finishes: list[tuple[int, int, int]] = []
        self._exact: dict[int, int] = {}  # k -> blocks after k steps, while nothing changes

    def __len__(self) -> int:
        return len(self.slot_request)

    def __contains__(self, i: int) -> bool:
        return self.slot_of[i] >= 0

    def add(self, i: int, context: int, made: int, admission: int) -> None:
        left = self.out_len[i] - made
        steps = self.steps_for(left) if self.steps_for is not None and left > 1 else left
        # with drafts a sequence's context is priced as growing evenly, left / steps tokens a step, to its exact end
        rate = left / steps  # exactly 1.0 without drafts
        slot = self.slot_of[i] = len(self.slot_request)
        self.slot_request.append(i)
        self.slot_base[slot] = context - rate * self.clock
        self.slot_rate[slot] = rate
        self.made_base[i] = made - rate * self.clock
        self.admission[i] = admission
        self.last_blocks[i] = last = self.most[context + left]
        self.context_sum += context
        self.rate_sum += rate
        self.blocks_bound += last
        self._exact.clear()
        heapq.heappush(self.finishes, (self.clock + steps, admission, i))

    def remove(self, i: int) -> int:
        """Take a sequence out (the last slot moves into its place); the tokens it had sampled."""
        slot, self.slot_of[i] = self.slot_of[i], -1
        rate = float(self.slot_rate[slot])
        self.context_sum -= float(self.slot_base[slot]) + rate * self.clock
        self.rate_sum -= rate
        moved = self.slot_request.pop()
        if moved != i:
            self.slot_request[slot] = moved
            self.slot_of[moved] = slot
            self.slot_base[slot] = self.slot_base[len(self.slot_request)]
            self.slot_rate[slot] = self.slot_rate[len(self.slot_request)]
        self.blocks_bound -= self.last_blocks[i]
        self.admission[i] = 0
        self._exact.clear()
        if not self.slot_request:  # no float residue left behind by fractional rates
            self.rate_sum = self.context_sum = 0.0
        return int(round(self.made_base[i] + rate * self.clock))

    def advance(self, k: int) -> None:
        self.clock += k
        self.context_sum += k * self.rate_sum
        self._exact.clear()

    def fit(self, k: int, room: int) -> bool:
        """Whether what they hold after k more decode steps each (k = 0: now) is at most `room` blocks."""
        if self.blocks_bound <= room:
            return True
        return self.blocks_after(k) <= room

    def blocks_after(self, k: int) -> int:
        hit = self._exact.get(k)
        if hit is None:
            m = len(self.slot_request)
            contexts = self.slot_base[:m] + self.slot_rate[:m] * (self.clock + k)
            hit = self._exact[k] = int(self.table[(contexts + 1e-9).astype(np.int64)].sum())
        return hit

    def steps_to_next_finish(self) -> int:
        while True:
            clock, admission, i = self.finishes[0]
            if self.admission[i] == admission:
                return clock - self.clock
            heapq.heappop(self.finishes)

    def finished(self) -> list[int]:
        """The sequences that have all their tokens now, in admission order."""
        out = []
        while self.finishes and self.finishes[0][0] <= self.clock:
            _, admission, i = heapq.heappop(self.finishes)
            if self.admission[i] == admission:
                out.append(i)
        return out


class _DecodeRun:
    """Consecutive decode-only steps of d sequences from mean context `mean_ctx` (one more token each per step),
    priced as far as they are asked for: a few steps one at a time in plain floats, more in one vectorized call
    (`Stepper.decode_run_s`, the same values; the cumulative sums in the same order either way)."""

    FEW = 96  # steps priced one at a time; more go to numpy (its fixed cost is that of some 50–100 plain steps)

    def __init__(self, stepper: Stepper | SpecStepper, d: int, mean_ctx: float, longest: int, growth: float = 1.0) -> None:
        self.stepper, self.d, self.mean_ctx, self.longest = stepper, d, mean_ctx, longest
        self.growth = growth  # mean tokens a sequence gains per step (more than 1 with accepted drafts)
        self.price = stepper.decode_pricer(d)
        self.cum: list[float] = []  # cum[j]: seconds of the first j + 1 steps

    def seconds(self, k: int) -> float:
        """Seconds of the first k steps."""
        if len(self.cum) < k:
            self._extend(k)
        return self.cum[k - 1]

    def _extend(self, k: int) -> np.ndarray | None:
        """Price steps up to k; the new cumulative sums as an array when they were vectorized."""
        cum = self.cum
        acc = cum[-1] if cum else 0.0
        if k - len(cum) <= self.FEW:
            g = self.growth
            for j in range(len(cum), k):
                acc += self.price(self.mean_ctx + j * g)
                cum.append(acc)
            return None
        times = self.stepper.decode_run_s(self.d, self.mean_ctx + self.growth * np.arange(len(cum), k, dtype=float))
        new = np.cumsum(np.concatenate([[acc], times]))[1:]  # summed on from acc, in order
        cum.extend(new.tolist())
        return new

    def steps_reaching(self, t: float, t_event: float) -> int:
        """Steps (at most `longest`) from t through the one whose end reaches t_event (asked first, on a fresh run).
        Steps only get longer as contexts grow, so the event comes within (t_event − t) ÷ (the first step) steps:
        that many are priced, one at a time when they are few, else in one vectorized call."""
        first = self.seconds(1)
        if t + first >= t_event:
            return 1
        within = min(self.longest, int((t_event - t) / first) + 2)
        if within - 1 <= self.FEW:
            cum, price, acc, g = self.cum, self.price, first, self.growth
            for j in range(1, self.longest):
                acc += price(self.mean_ctx + j * g)
                cum.append(acc)
                if t + acc >= t_event:
                    return j + 1
            return self.longest
        new = self._extend(within)  # new[i]: the end of step i + 2
        i = int(np.searchsorted(t + new, t_event))
        if i < len(new):
            return i + 2
        if within < self.longest:  # not reached after all (rounding): price the whole run
            self._extend(self.longest)
            return min(int(np.searchsorted(t + np.asarray(self.cum), t_event)) + 1, self.longest)
        return self.longest


def _draft_steps(engine: EngineContext, seed: int) -> Callable[[int], int] | None:
    """With speculative decoding, a function drawing how many decode steps a sequence needs for `left` tokens: each
    step verifies k drafts and keeps 1 + the drafts before the first rejection (each accepted with the engine's
    acceptance a, so a step gains g ≤ k + 1 tokens with P(g > j) = a^j; mean (1 − a^(k+1)) / (1 − a)). Random per
    sequence, so sequences of one length finish apart; seeded by the traffic's seed."""
    k, a = engine.spec_draft_tokens, engine.spec_acceptance
    if not k:
        return None
    if a <= 0:  # a draft model whose drafts are never kept: one token per step
        return lambda left: left
    rng = stream_rng(seed, DRAFTS_STREAM)
    log_a = np.log(min(a, 0.999))

    def steps_for(left: int) -> int:
        gains = 1 + np.minimum(np.floor(np.log(1.0 - rng.random(left)) / log_a), k)
        return int(np.searchsorted(np.cumsum(gains), left)) + 1

    return steps_for


_STUCK = ("simulate: the scheduler is stuck: each step a prompt is admitted into the blocks the decodes need, "
          "preempted by them and admitted again, and no decode runs (unmixed prefill with a small KV cache)")


def next_read_step(count: int, interval: int, reached: int) -> int:
    """Decode steps from now to the scheduler's first read of its socket at or after step `reached` (the step whose
    end an arrival falls in): reads come when the counter, now `count` < `interval`, reaches `interval`, and every
    `interval` steps after that (nothing read at the ones before: the arrival had not come)."""
    first = interval - count
    return first if reached <= first else first + interval * -(-(reached - first) // interval)


def count_after(count: int, interval: int, k: int) -> int:
    """The read counter after k decode steps with nothing to read; `interval` means: read at the next iteration."""
    first = interval - count
    if k < first:
        return count + k
    since = (k - first) % interval
    return interval if since == 0 else since


def simulate_service(engine: EngineContext, traffic: Traffic, isl: int, osl: int, cycle_s: float | None = None,
                     passes: int = 3) -> SimResult:
    """An endless closed loop as a service sees it: its clients out of step. Clients that start together stay in
    step in the simulator when their lengths are equal (every step is priced exactly), while real ones drift apart
    (step times, network and client jitter) until their phases spread over one request's cycle. So the run starts
    them spread evenly over a cycle (`cycle_s`, a guess such as the closed forms' latency; without one, a first run
    from a common start reads it), and again over the cycle a run reads (mean send-to-end time plus think time)
    while that moves by more than a fifth."""
    if cycle_s is None:
        r = simulate(engine, traffic, isl, osl)
        cycle_s = float(np.mean(r.end_s - r.send_s)) + traffic.think_time_s
        passes -= 1
    for _ in range(max(passes, 1)):
        traffic = traffic.model_copy(update={"start_spread_s": cycle_s})
        r = simulate(engine, traffic, isl, osl)
        cycle = float(np.mean(r.end_s - r.send_s)) + traffic.think_time_s
        if abs(cycle - cycle_s) <= 0.2 * cycle:
            break
        cycle_s = cycle
    return r


def simulate(engine: EngineContext, traffic: Traffic, isl: int, osl: int) -> SimResult:
    """Run the requests of `traffic` through the engine step by step; client-side times per request."""
    I, O, sends = _requests(traffic, isl, osl)
    n = len(I)
    if n > MAX_SIM_REQUESTS:
        raise WorkloadError(f"simulate: {n:,} requests is more than the simulator runs ({MAX_SIM_REQUESTS:,})")
    max_ctx = len(engine.block_table) - 2
    if int((I + O).max()) > max_ctx:
        raise WorkloadError(f"simulate: a request of {int((I + O).max()):,} tokens is longer than the engine context "
                            f"({max_ctx:,})")
    if int(engine.block_table[I].max()) > engine.num_blocks:
        raise WorkloadError("simulate: one prompt needs more KV blocks than the engine has")
    table = engine.block_table.tolist()  # blocks one sequence of c tokens holds
    num_blocks = engine.num_blocks
    st = engine.stepper
    front = _FrontEnd(engine.admission_s, engine.request_overhead_s, engine.prompt_token_overhead_s, I.tolist())
    closed = sends is None
    clients = 1 if traffic.kind == "trace" else (shape(traffic.kind).clients(traffic.value) or 1)
    send = [np.nan] * n
    arrive_heap: list[tuple[float, int]] = []  # (engine arrival time, request)
    next_new = 0

    def submit(t_send: float) -> None:
        nonlocal next_new
        if next_new >= n:
            return
        i = next_new
        next_new += 1
        send[i] = t_send
        front.intake(t_send, i, arrive_heap)

    if closed:
        starting = min(clients, n)
        for k in range(starting):
            submit(k * traffic.start_spread_s / starting)
    else:
        for i, s in enumerate(sends.tolist()):  # open loop: every send time is known
            send[i] = s
            front.intake(s, i, arrive_heap)
        next_new = n
        if front.admission_s == 0:
            front.flush(arrive_heap)

    hit = engine.prefix_hit_rate
    cached0 = ((np.floor(I * hit / engine.block_size_tokens) * engine.block_size_tokens).astype(int) if hit
               else np.zeros(n, int)).tolist()
    isl_of, osl_of = I.tolist(), O.tolist()
    # per request while it waits or prefills (a decoding one is kept by `decoders`)
    done_tok = [0] * n  # tokens in the KV cache (computed)
    target = list(isl_of)  # tokens to compute before the next token is sampled
    gen = [0] * n  # tokens sampled so far
    alloc = [0] * n  # blocks held
    first = [np.nan] * n
    end = [np.nan] * n
    admit_seq = [0] * n
    waiting: deque[int] = deque()  # arrived at the engine, not running; preempted go to the front
    running: dict[int, None] = {}  # admission order (a dict as an ordered set)
    prefilling: list[int] = []
    decoders = _Decoders(engine.block_table, osl_of, min(n, engine.max_num_seqs), _draft_steps(engine, traffic.seed))
    prefill_blocks = 0  # blocks held by running requests that are not decoding
    running_final = 0  # blocks the running requests will hold at their last token, summed (reserve_output)
    # blocks held at most up to the last token (as _Decoders bounds a decoding one)
    final_of = np.maximum.accumulate(engine.block_table)[I + O].tolist() if engine.reserve_output else [0] * n
    t = 0.0
    steps = 0
    preemptions = 0
    busy = 0.0
    run_time = 0.0
    kv_full_time = 0.0
    max_running = 0
    seq_counter = 0
    finished = 0
    stalled = 0  # steps in a row that preempted and sampled no token
    every = engine.recv_interval_steps
    reads = every  # the read counter (SGLang's recv skipper): arrivals are taken in when it reaches `every`
    # async scheduling: a busy engine scheduled the step that starts now when the step before it started, so an
    # arrival is seen by the scheduler only if it came before that (one step later than a synchronous scheduler)
    ahead = engine.steps_ahead > 0
    last_start = last_end = -np.inf

    def finish(i: int, t_emit: float) -> None:
        nonlocal prefill_blocks, running_final, finished
        end[i] = front.deliver(t_emit)
        running_final -= final_of[i]
        if i in decoders:
            decoders.remove(i)
        else:
            prefill_blocks -= alloc[i]
        alloc[i] = 0
        del running[i]
        finished += 1
        if closed:
            submit(end[i] + traffic.think_time_s)

    def preempt_last() -> None:
        nonlocal prefill_blocks, running_final, preemptions
        victim, _ = running.popitem()
        running_final -= final_of[victim]
        if victim in decoders:
            gen[victim] = decoders.remove(victim)
        else:
            prefilling.remove(victim)
            prefill_blocks -= alloc[victim]
        alloc[victim] = 0
        done_tok[victim] = 0
        target[victim] = isl_of[victim] + gen[victim]  # recompute the prompt and the tokens it had
        waiting.appendleft(victim)
        preemptions += 1

    def next_arrival_s() -> float:
        return min(arrive_heap[0][0] if arrive_heap else np.inf, front.next_handover_s())

    while finished < n:
        if front.pending and front.next_handover_s() <= t:
            front.flush(arrive_heap)
        if reads >= every or not running:  # an idle scheduler does no GPU work between its reads: taken as none
            reads = 0
            cutoff = last_start if ahead and running and t == last_end else t
            while arrive_heap and arrive_heap[0][0] <= cutoff:
                waiting.append(heapq.heappop(arrive_heap)[1])
        if not running and not waiting:
            nxt = next_arrival_s()
            if nxt == np.inf:
                break  # nothing left to send (closed loop done)
            t = max(t, nxt)
            continue
        # 1. decodes need room for one more token each; preempt from the back until they fit
        preempted_before = preemptions
        while decoders and not decoders.fit(1, num_blocks - prefill_blocks):
            preempt_last()
        d = len(decoders)
        budget = engine.token_budget - (d * (1 + engine.spec_draft_tokens) if engine.mixed else 0)
        chunks: list[tuple[int, int]] = []  # (request, tokens)
        # 2. partial prefills, then 3. waiting requests (SGLang: a prefill step carries no decodes)
        for i in list(prefilling):
            if budget <= 0:
                break
            k = min(target[i] - done_tok[i], budget)
            chunks.append((i, k))
            budget -= k
        while waiting and budget > 0 and len(running) < engine.max_num_seqs:
            i = waiting[0]
            start = cached0[i] if gen[i] == 0 else 0
            need = table[target[i]]
            if not decoders.fit(0, num_blocks - prefill_blocks - need):
                break
            # the decoders' own bound stops a token short (the last token is never written): the final lengths count
            if engine.reserve_output and running and running_final + final_of[i] > num_blocks:
                break  # its whole length does not fit beside the others' (alone, it is admitted by its prompt)
            waiting.popleft()
            prefill_blocks += need
            running_final += final_of[i]
            alloc[i] = need
            done_tok[i] = start
            seq_counter += 1
            admit_seq[i] = seq_counter
            running[i] = None
            prefilling.append(i)
            k = min(target[i] - done_tok[i], budget)
            chunks.append((i, k))
            budget -= k
        if not engine.mixed and chunks:
            d = 0
        if not chunks and not d:
            # nothing can run: wait for the next arrival (KV and slots are held by nobody here)
            nxt = next_arrival_s()
            if nxt < np.inf:
                t = max(t, nxt)
                reads = every
                continue
            raise WorkloadError("simulate: the engine cannot admit the next request (it needs more KV blocks than are free)")
        max_running = max(max_running, len(running))
        if d:
            mean_ctx = float(decoders.context_sum) / d
        if not chunks:
            # decode-only stretch: jump to the next finish, arrival or full cache in one go
            k = decoders.steps_to_next_finish()
            if k > 1:
                run = _DecodeRun(st, d, mean_ctx, k, decoders.rate_sum / d)
                nxt = next_arrival_s()
                if nxt < np.inf:  # what arrives is taken in at the first read after the step that reaches it
                    k = min(k, next_read_step(reads, every, run.steps_reaching(t, nxt)))
                # shrink the stretch until the blocks after k more tokens each fit
                while k > 1 and not decoders.fit(k, num_blocks - prefill_blocks):
                    k = max(1, k // 2)
                dt = run.seconds(k)
            else:
                k = 1
                dt = st.time_s(d, st.decode_keys(mean_ctx), 0.0, 0.0)
        else:
            k = 1
            p = key_sum = 0  # prefill tokens, and their keys summed (in chunk order)
            for i, kk in chunks:
                p += kk
                key_sum += kk * st.prefill_keys(kk, done_tok[i])
            dt = st.time_s(d, st.decode_keys(mean_ctx) if d else 0.0, float(p), key_sum / p)
            if t > last_end:  # the first step after the engine idled: its CPU work runs beside its own GPU work only
                dt = max(dt, engine.idle_step_s)
        # advance k steps
        if not decoders.fit(0, num_blocks - prefill_blocks - len(running)):  # fewer free blocks than sequences
            kv_full_time += dt
        run_time += dt * len(running)
        # the last step's start as the clock reads it (end - duration would round off, and an arrival sent exactly
        # at the previous step's end must compare equal to it); k > 1 only in a decode stretch, whose `run` this is
        last_start = t if k == 1 else t + run.seconds(k - 1)
        t += dt
        last_end = t
        busy += dt
        steps += k
        sampled = d > 0
        if d:
            decoders.advance(k)
            for i in decoders.finished():
                finish(i, t)
        for i, kk in chunks:
            done_tok[i] += kk
            if done_tok[i] >= target[i]:
                sampled = True
                prefilling.remove(i)
                gen[i] += 1
                if first[i] != first[i]:  # NaN: the first token
                    first[i] = front.deliver(t)
                if gen[i] >= osl_of[i]:
                    finish(i, t)
                else:
                    prefill_blocks -= alloc[i]
                    decoders.add(i, done_tok[i], gen[i], admit_seq[i])
        reads = every if chunks else count_after(reads, every, k)  # after a prompt chunk: read at once
        stalled = 0 if sampled or preemptions == preempted_before else stalled + 1
        if stalled > MAX_STALLED_STEPS:
            raise WorkloadError(_STUCK)
    if finished < n:
        raise WorkloadError(f"simulate: only {finished} of {n} requests finished")
    return SimResult(I, O, np.array(send), np.array(first), np.array(end), preemptions, steps, busy,
                     run_time / busy if busy else 0.0, max_running, kv_full_time / busy if busy else 0.0)
