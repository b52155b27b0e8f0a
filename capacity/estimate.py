"""The public entry point: a Scenario in, an Estimate out (what the CLI prints and the app shows)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator, model_validator

from capacity.argtypes import LENGTH_MAX_TOKENS
from capacity.model.architecture import load_model
from capacity.calibration import IDEAL, Calibration, find_calibration, parse_calibration_file
from capacity.card import AccuracyCard, accuracy_card, api_server_text, eager_moe_prompt, host_bound_decode, sittings_text
from capacity.engine import engine_profile
from capacity.engines import get as engine_object
from capacity.model.formulas import compiled
from capacity.hardware import load_gpu
from capacity.load import Load, parse_load
from capacity.plan import Plan, make_plan
from capacity.model.power import mean_power_w, request_busy_s, shipped_power
from capacity.model.steptime import host_token_s, step_parts
from capacity.loads import shape
from capacity.loads.draws import GAMMA_SHAPE_MAX, GAMMA_SHAPE_MIN, SEED_MAX, span_rel_sd
from capacity.loadmodel.workload import (Extras, LoadContext, LoadResult, Slots, spec_tokens_per_step, speculation,
                                        waits_for_read)
from capacity.cost import energy_fields, usd_per_million_tokens
from capacity.model.bounds import bound_of_step, decode_compute_bound_batch, ideal_bounds
from capacity.errors import WorkloadError
from capacity.model.kv import attended_tokens_prefill
from capacity.loadmodel.simulate import MAX_SIM_REQUESTS, EngineContext, SimResult, Traffic, simulate, simulate_service


class Scenario(BaseModel):
    """One question: this model, on these GPUs, at this precision, under this workload."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = "meta-llama/Llama-3.1-8B"
    gpu: str = "h200-sxm"
    num_gpus: int = Field(1, ge=1, le=4096)
    tp: int = Field(1, ge=1, le=1024)
    pp: int = Field(1, ge=1, le=256, description="pipeline stages of tp GPUs each (a replica is tp × pp GPUs)")
    expert_parallel: bool = False
    attention_dp: bool = Field(False, description="attention data parallel over the tp GPUs (TensorRT-LLM DEP, "
                               "SGLang --enable-dp-attention): each GPU the whole attention and its own sequences' KV")
    precision: str = "bf16"
    kv_precision: str = "bf16"
    engine: str = "vllm"
    ideal: bool = False
    isl: int = Field(1024, description="input tokens per request")
    osl: int = Field(128, description="output tokens per request")
    load: str = "sync"
    price_usd_per_gpu_hour: float | None = Field(None, gt=0, le=1e4)
    price_usd_per_kwh: float | None = Field(None, ge=0, le=100, description="electricity, for the energy term")
    calibration: str | None = Field(None, description="path to a calibration file; default: the shipped one")
    gpu_memory_utilization: float | None = Field(None, gt=0, le=1)
    max_num_seqs: int | None = Field(None, ge=1, le=1_000_000)
    max_num_batched_tokens: int | None = Field(None, ge=1, le=100_000_000)
    max_model_len: int | None = Field(None, ge=1, le=100_000_000)
    max_cudagraph_tokens: int | None = Field(None, ge=0, le=10_000_000, description="largest CUDA graph (vLLM --max-cudagraph-capture-size,"
                                             " SGLang --cuda-graph-max-bs; 0 = eager); default: the engine's")
    recv_interval_steps: int | None = Field(None, ge=1, le=100_000, description="SGLang --scheduler-recv-interval: "
                                            "decode steps between reads of new requests; default: the engine's (1)")
    api_server_count: int | None = Field(None, ge=1, le=64, description="vLLM --api-server-count: front-end processes "
                                         "streaming tokens; default: the engine's (1)")
    attention_backend: str | None = Field(None, max_length=32, pattern=r"^[a-z0-9_]+$",
                                          description="SGLang --attention-backend (aiter, triton, fa3, flashinfer, "
                                          "...): the attention kernels; default: the engine's own choice")
    prefix_hit_rate: float = Field(0.0, ge=0, lt=1)
    spec_acceptance: float = Field(0.0, ge=0, lt=1)
    spec_draft_tokens: int = Field(0, ge=0, le=64)
    spec_draft_cost: float = Field(0.0, ge=0, le=10)
    spec_draft_model: str | None = Field(None, max_length=4096)  # a draft_model method's draft: catalog id or config.json
    num_requests: int | None = Field(None, ge=1, le=1_000_000, description="requests in a rate test (default: 120 s of arrivals) or a concurrency test (default: endless)")
    method: Literal["auto", "closed-form", "simulate"] = Field("auto", description="closed forms (instant, over grids), "
                                                               "the step simulator (exact scheduler, any arrivals and "
                                                               "length spreads), or auto: the closed forms unless the "
                                                               "load has what they cannot express")
    arrivals: Literal["constant", "poisson", "gamma"] = Field("constant", description="rate loads: gaps between arrivals")
    gamma_shape: float = Field(1.0, ge=GAMMA_SHAPE_MIN, le=GAMMA_SHAPE_MAX, description="gamma arrivals: shape (1 = Poisson, < 1 burstier)")
    length_dist: Literal["fixed", "uniform", "normal"] = Field("fixed", description="spread of input and output lengths "
                                                                "around isl/osl (as validate --length-dist)")
    length_ratio: float = Field(0.0, ge=0, lt=10, description="uniform: ±ratio × mean; normal: σ = ratio × mean")
    think_time_s: float = Field(0.0, ge=0, le=86_400, description="closed loops: pause between a reply and the next request")
    seed: int = Field(0, ge=0, le=SEED_MAX, description="simulator: arrivals and lengths")

    @field_validator("engine")
    @classmethod
    def _engine_lower(cls, v: str) -> str:
        return v.lower()

    @model_validator(mode="before")
    @classmethod
    def _one_replica_by_default(cls, data: Any) -> Any:
        """No GPU count given: one replica of tp × pp GPUs (`--tp 2` alone means two GPUs, not an error)."""
        if isinstance(data, dict) and data.get("num_gpus") is None:
            tp, pp = data.get("tp", 1), data.get("pp", 1)
            if type(tp) is int and type(pp) is int and tp >= 1 and pp >= 1:  # anything else: the fields refuse it
                data = {**data, "num_gpus": tp * pp}
        return data

    @model_validator(mode="after")
    def _drafts_need_draft_tokens(self) -> "Scenario":
        """A drafter, its cost or its acceptance without draft tokens would be silently ignored: refused instead."""
        if self.spec_draft_tokens == 0:
            for name, set_ in (("spec_draft_model", self.spec_draft_model is not None),
                               ("spec_draft_cost", self.spec_draft_cost > 0), ("spec_acceptance", self.spec_acceptance > 0)):
                if set_:
                    raise ValueError(f"{name}: speculative decoding needs draft tokens per step (spec_draft_tokens, "
                                     "--spec-draft-tokens) above 0; "
                                     "with 0 it is off and this would be ignored")
        return self


class Estimate(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str
    gpu: str
    engine: str
    ideal: bool
    precision: str
    weight_format: str
    compute_precision: str
    kv_precision: str
    num_gpus: int
    tp: int
    ep: int
    replicas: int
    pp: int = Field(1, description="pipeline stages per replica (a replica is tp × pp GPUs)")
    attention_dp: bool = Field(False, description="attention data parallel over the tp GPUs")
    isl: int
    osl: int
    load: str
    total_params: int
    active_params_per_token: int
    weight_bytes: float = Field(description="weights of one replica (all its GPUs), a draft model's included")
    weight_bytes_per_gpu: float
    kv_bytes_per_token: float = Field(description="KV bytes one token adds across all layers of one replica")
    kv_cache_bytes_per_gpu: float
    activation_bytes_per_gpu: float
    kv_capacity_tokens: int = Field(description="per replica, as the engine reports it")
    max_concurrent_requests: int = Field(description="sequences of isl+osl tokens that fit at once (all replicas), capped by max_num_seqs")
    ttft_s: float
    itl_s: float
    e2e_latency_s: float
    requests_per_s: float = Field(description="all replicas")
    output_tokens_per_s: float
    total_tokens_per_s: float
    running_requests: float
    prefill_bound: Literal["compute", "memory"]
    decode_bound: Literal["compute", "memory"]
    decode_host_bound: bool = Field(False, description="at this batch the engine's host work per sequence, not "
                                                       "the GPU, sets the decode step (calibrated host floor)")
    ridge_point_flops_per_byte: float
    decode_compute_bound_batch: float | None
    saturated: bool
    price_usd_per_gpu_hour: float | None
    usd_per_million_input_tokens: float | None
    usd_per_million_output_tokens: float | None
    usd_per_million_total_tokens: float | None
    power_w_at_tdp: float = Field(0.0, description="the GPUs' board power limit: what they draw at most")
    joules_per_output_token_at_most: float | None = Field(
        None, description="at the GPUs' TDP: an upper bound")
    power_w: float | None = Field(None, description="predicted mean power of all the GPUs (capacity/model/power.py; "
                                                    "fitted on one H200 with dummy weights: docs/power.md)")
    joules_per_output_token: float | None = Field(None, description="predicted: power_w ÷ output tokens/s")
    usd_per_million_output_tokens_energy: float | None = Field(
        None, description="electricity per million output tokens at the predicted power, with --price-usd-per-kwh")
    calibration: str = Field(description="engine/gpu/precision of the calibration used")
    calibration_source: str = ""
    intervals: dict[str, tuple[float, float]] = Field(default_factory=dict)
    method: str = "closed-form"
    regime: str = Field("", description="what the numbers describe: a benchmark as run (clients start together, a "
                                        "finite number of requests) or the steady state of an endless load")
    arrival_sample_rel_sd: float | None = Field(
        None, description="random arrivals, simulated: the seed-to-seed relative sd of the arrivals' span (and of "
                          "requests/s with it) for a run of this many requests (capacity/loads/draws.span_rel_sd)")
    start_refusal: str = Field("", description="why the engine would refuse to start at this max_model_len (the "
                               "scenario's, else the model's context): its KV cache cannot hold one request that long "
                               "(vLLM's start-up check; it names the longest it would take, and is also a note); '' "
                               "when it starts. The numbers assume a server that runs, with requests of isl + osl tokens")
    notes: list[str] = Field(default_factory=list)
    card: AccuracyCard | None = Field(None, description="how far to trust this answer: domain, slice, held-out error "
                                                        "and 90 % intervals (capacity/card.py)")

    @computed_field(description="False: the engine would refuse to start at this max_model_len (`start_refusal`)")
    @property
    def engine_starts(self) -> bool:
        return not self.start_refusal


def api_servers_note(profile) -> str:
    """What more front-end processes would do to a host-bound decode, for an engine whose profile splits its host
    floor with them (engine_core_host_share < 1: vLLM)."""
    if profile.engine_core_host_share >= 1:
        return ""
    if profile.api_server_count > 1:
        return (f", not more API servers: with {profile.api_server_count} the floor is taken as the engine core's "
                f"{profile.engine_core_host_share:.2f} of the one-API-server floor")
    seen = api_server_text()
    return (f", and so would more API servers (--api-server-count{': ' + seen if seen else ''}; the model takes "
            f"{profile.engine_core_host_share:.2f} of this floor)")


def arrival_sample_rel_sd(s: Scenario, kind: str, value: float) -> float:
    """How much a finite run of random arrivals differs from seed to seed (0 for other loads)."""
    if kind == "trace" or not shape(kind).endless or shape(kind).clients(value) is not None:
        return 0.0
    return span_rel_sd(shape(kind).simulated_requests(value, s.num_requests), s.arrivals, s.gamma_shape)


def _check_lengths(s: Scenario) -> None:
    for name, v in (("isl", s.isl), ("osl", s.osl)):
        if v < 1:
            raise WorkloadError(f"{name} must be at least 1 token (got {v})")
        if v > LENGTH_MAX_TOKENS:
            raise WorkloadError(f"{name} of {v:,} tokens is absurd (max {LENGTH_MAX_TOKENS:,})")


def _check_context(s: Scenario, model) -> None:
    """A request longer than the engine's max_model_len (--max-model-len, else the model's max_position_embeddings,
    vLLM's default) is refused by the engine: pricing it would answer for a server that cannot exist."""
    limit, what = ((s.max_model_len, "max_model_len") if s.max_model_len
                   else (model.max_position_embeddings, f"{s.model}'s context (max_position_embeddings)"))
    if limit and s.isl + s.osl > limit:
        raise WorkloadError(f"isl + osl = {s.isl + s.osl:,} tokens exceed {what} of {limit:,} tokens: the engine "
                            "refuses such requests")


def plan_for(s: Scenario) -> Plan:
    """The deployment plan of a scenario: weights, memory, engine limits and step costs, all independent of the
    calibration, so one plan serves every calibration a fit tries (raises DoesNotFitError and friends with the
    reason)."""
    _check_lengths(s)
    for knob, whose in (("recv_interval_steps", "SGLang's --scheduler-recv-interval"),
                        ("api_server_count", "vLLM's --api-server-count"),
                        ("attention_backend", "SGLang's --attention-backend")):  # a knob only one engine's flags set
        value = getattr(s, knob)
        if value not in (None, 1) and not engine_object(s.engine).flags.sets(knob, value):
            raise WorkloadError(f"{knob} is {whose}; engine {s.engine} has no such setting")
    gpu = load_gpu(s.gpu)
    profile = engine_profile("ideal" if s.ideal else s.engine, gpu.usable_memory_bytes, s.tp, gpu_memory_utilization=s.gpu_memory_utilization,
                             max_num_seqs=s.max_num_seqs, max_num_batched_tokens=s.max_num_batched_tokens,
                             max_cudagraph_tokens=s.max_cudagraph_tokens, recv_interval_steps=None if s.ideal else s.recv_interval_steps,
                             api_server_count=None if s.ideal else s.api_server_count,
                             spec_draft_tokens=s.spec_draft_tokens if speculating(s) else None,
                             spec_draft_model=s.spec_draft_model if speculating(s) else None)
    model = load_model(s.model)
    _check_context(s, model)
    draft = load_model(s.spec_draft_model) if s.spec_draft_model and s.spec_draft_tokens else None
    if draft is not None and draft.vocab_size != model.vocab_size:  # the target verifies the draft's token ids
        raise WorkloadError(f"spec_draft_model {s.spec_draft_model}: its vocabulary ({draft.vocab_size:,} tokens) is "
                            f"not the target's ({model.vocab_size:,}); a draft model must share the target's tokenizer")
    return make_plan(model, gpu, s.precision, s.kv_precision, profile, s.num_gpus, s.tp,
                     s.expert_parallel, s.isl + s.osl, s.max_model_len, draft, s.pp, s.attention_dp)


def speculating(s: Scenario) -> bool:
    """Drafts are made and verified: k > 0 with an acceptance above 0, or with a draft model at any acceptance
    (the draft model drafts k tokens every step; at acceptance 0 none is kept, but all are paid for)."""
    return bool(s.spec_draft_tokens) and (s.spec_acceptance > 0 or bool(s.spec_draft_model))


def calibration_for(s: Scenario, plan: Plan) -> Calibration:
    """--ideal, else the --calibration file, else the shipped one for (engine, GPU, weight format)."""
    if s.ideal:
        return IDEAL
    if s.calibration:
        return parse_calibration_file(s.calibration)
    return find_calibration(s.engine, plan.gpu.id, plan.weight_format)


def load_context(plan: Plan, cal: Calibration, s: Scenario, isl, osl) -> LoadContext:
    """The engine in context for the closed forms: this plan's step costs and limits, the calibration's
    efficiencies, the scenario's what-ifs, and the slots at these lengths."""
    full = np.asarray(plan.max_concurrent(np.asarray(isl) + np.asarray(osl)), dtype=float)
    # a wave admits what fits at prompt length and preemption makes the room, and the steady state runs what fits
    # at the mean context; an engine that never preempts reserves every request's whole length, so both are what
    # fits at full length (SGLang reserves an estimate of the output and retracts: the prompt-length rule is closer)
    reserve = not plan.profile.preempts and not s.ideal
    slots = Slots(np.maximum(full, 1.0) if reserve else plan.max_running(isl, osl), full,
                  full if reserve else np.asarray(plan.max_concurrent(np.asarray(isl)), dtype=float))
    budget = plan.profile.scheduled_tokens(plan.dp_ranks)
    return LoadContext(plan.costs, cal.efficiency, budget, slots, s.ideal,
                       extras_of(s), plan.profile.mixed_prefill, plan.profile.recv_interval_steps,
                       0 if s.ideal else plan.profile.steps_scheduled_ahead)


def run_load(plan: Plan, cal: Calibration, s: Scenario, isl, osl, load_kind: str, value) -> LoadResult:
    """The closed forms' answer: the load shape's own strategy over the engine in context."""
    return shape(load_kind).closed_form(load_context(plan, cal, s, isl, osl), isl, osl, value, s.num_requests)


def simulation_setup(plan: Plan, cal: Calibration, s: Scenario, load_kind: str, value: float, num_requests: int,
                     trace: dict | None = None) -> tuple[EngineContext, Traffic]:
    """The engine and the traffic the step simulator runs for a scenario (`trace`: Traffic's trace_* fields of a
    recorded run, replayed instead of drawn). The engine holds contexts up to the longest request the lengths can
    draw (validate's spread bounds: uniform L(1 + r), normal L(1 + 4r)), capped by max_model_len."""
    trace = trace or {}
    if num_requests > MAX_SIM_REQUESTS:
        raise WorkloadError(f"load {load_kind}:{value:,.10g}: the simulator would run {num_requests:,} requests, at most "
                            f"{MAX_SIM_REQUESTS:,}: set fewer requests (--num-requests) or a smaller load")
    spread = 1 + (s.length_ratio if s.length_dist == "uniform" else 4 * s.length_ratio if s.length_dist == "normal" else 0)
    recorded = max((i + o for i, o in zip(trace.get("trace_isl", ()), trace.get("trace_osl", ()))), default=0)
    longest = max(recorded, int((s.isl + s.osl) * spread)) + 2
    if s.max_model_len:
        longest = min(longest, s.max_model_len)
    engine = EngineContext.build(plan, cal.efficiency, s.ideal, longest, s.prefix_hit_rate,
                                 s.spec_acceptance if speculating(s) else 0.0, s.spec_draft_tokens, s.spec_draft_cost)
    traffic = Traffic(kind="trace" if trace.get("trace_send_s") else load_kind, value=float(value),
                      num_requests=num_requests, arrivals=s.arrivals, gamma_shape=s.gamma_shape,
                      think_time_s=s.think_time_s, length_dist=s.length_dist, length_ratio=s.length_ratio, seed=s.seed,
                      **trace)
    return engine, traffic


def service_run(plan: Plan, cal: Calibration, s: Scenario, engine: EngineContext, traffic: Traffic, load_kind: str,
                value: float) -> SimResult | None:
    """An endless closed loop of several clients as a service sees it, its clients out of step
    (capacity.loadmodel.simulate.simulate_service, the closed forms' latency as the first guess of a client's cycle);
    None when the scenario is not one (a finite test, one client, open arrivals or a replayed trace)."""
    if s.num_requests is not None or traffic.kind == "trace" or not (shape(load_kind).endless
                                                                    and shape(load_kind).drifts(value)):
        return None
    cycle = float(np.asarray(run_load(plan, cal, s, s.isl, s.osl, load_kind, value).e2e_latency_s)) + s.think_time_s
    return simulate_service(engine, traffic, s.isl, s.osl, cycle if np.isfinite(cycle) and cycle > 0 else None)


def simulated_load(plan: Plan, cal: Calibration, s: Scenario, load_kind: str, value: float) -> tuple[LoadResult, str]:
    """The step simulator's answer for one scenario, shaped like the closed forms' (and the regime it describes)."""
    endless = s.num_requests is None and shape(load_kind).endless
    n = shape(load_kind).simulated_requests(value, s.num_requests)
    engine, traffic = simulation_setup(plan, cal, s, load_kind, value, n)
    sim = service_run(plan, cal, s, engine, traffic, load_kind, value)
    service = sim is not None
    if sim is None:
        sim = simulate(engine, traffic, s.isl, s.osl)
    m = sim.summary("steady" if endless else "all")
    regime = (f"steady state of an endless load (simulated {n:,} requests, middle of the run"
              f"{', clients out of step' if service else ''})" if endless else
              f"a benchmark as run: {n:,} requests, clients starting together from an idle engine (simulated)")
    arr = {k: np.asarray(v) for k, v in m.items()}
    step = float(sim.busy_s / max(sim.steps, 1))
    return LoadResult(arr["ttft_s"], arr["itl_s"], arr["e2e_latency_s"], arr["requests_per_s"], arr["output_tokens_per_s"],
                      arr["total_tokens_per_s"], np.asarray(sim.mean_running), np.asarray(step), np.asarray(step),
                      np.asarray(sim.preemptions > 0 or sim.max_running >= plan.max_num_seqs)), regime


def closed_form_gaps(s: Scenario, load_kind: str) -> list[str]:
    """What this scenario asks for that the closed forms cannot express (they assume fixed lengths, evenly spaced
    arrivals and clients that resend at once)."""
    gaps = []
    if s.length_dist != "fixed" and s.length_ratio > 0:
        gaps.append(f"{s.length_dist} length spread")
    return gaps + shape(load_kind).closed_form_gaps(s.arrivals, s.think_time_s)


SIMULATED_REQUESTS_MAX = 20_000  # beyond this a closed loop is left to the closed forms: the answer must come at once


def simulation_reasons(s: Scenario, load_kind: str, value: float) -> list[str]:
    """Why `--method auto` steps the simulator: what the closed forms cannot express, and closed loops of several
    clients, which the closed forms price as lockstep waves while real clients drift apart as soon as a wave's
    prompts are admitted over more than one step (docs/load-model.md: the simulator is the better model of the
    measured closed loops). A closed loop is simulated when its test is at most SIMULATED_REQUESTS_MAX requests, also
    beyond the engine's slots (the simulator admits a waiting client when the KV cache frees room; on sitting 11's two
    KV-limited closed loops at 16k-32k prompts the closed forms' queue was -68 % and -45 % on TTFT, the simulator
    -9 % on both). Speculative decoding is simulated too, a draft model's forwards included: the random accepted runs
    desynchronize a closed loop (sitting 15, n-gram drafts; sitting 16b, a draft model)."""
    reasons = closed_form_gaps(s, load_kind)
    load = shape(load_kind)
    if load.drifts(value) and load.simulated_requests(value, s.num_requests) <= SIMULATED_REQUESTS_MAX:
        reasons.append("drift of a closed loop's clients out of lockstep")
    return reasons


def resolved_method(s: Scenario, load_kind: str, value: float = 1.0) -> str:
    if s.method != "auto":
        return s.method
    return "simulate" if simulation_reasons(s, load_kind, value) else "closed-form"


def estimate(s: Scenario) -> Estimate:
    return estimate_with_calibration(s, None)


def estimate_with_calibration(s: Scenario, calibration: Calibration | None) -> Estimate:
    """`estimate` with an explicit calibration (None: --ideal, --calibration or the shipped one)."""
    plan = plan_for(s)
    cal = calibration if calibration is not None and not s.ideal else calibration_for(s, plan)
    return predict(plan, cal, s)


METRICS = ("ttft_s", "itl_s", "e2e_latency_s", "requests_per_s", "output_tokens_per_s", "total_tokens_per_s", "running")


def predicted_load(plan: Plan, cal: Calibration, s: Scenario) -> tuple[LoadResult, str, str]:
    """The load model's answer for one replica (the bound with --ideal), the method used and the regime it
    describes: what `predict` builds its Estimate from, and all a calibration fit needs. A pipeline's replica is
    `pp` lanes (capacity/plan.py): the load is dealt out over them (`LoadShape.per_lane`), each kind of lane is
    priced, and the replica's rates are the lanes' sum (latencies their request-weighted mean)."""
    load = parse_load(s.load)
    if plan.pp == 1:
        return lane_load(plan, cal, s, load)
    shares = load.shape.per_lane(load.value, plan.pp)
    busy = sum(k for _, k in shares)
    parts = []
    for value, lanes in shares:
        n = None if s.num_requests is None else max(1, round(s.num_requests * value / load.value))
        r, method, regime = lane_load(plan, cal, s.model_copy(update={"num_requests": n}),
                                      Load(kind=load.kind, value=value))
        parts.append((pipeline_paced(plan, r, busy, s.ideal), lanes))
    rates = ("requests_per_s", "output_tokens_per_s", "total_tokens_per_s", "running")
    total = {k: sum(getattr(r, k) * lanes for r, lanes in parts) for k in rates}
    weight = [r.requests_per_s * lanes / np.maximum(total["requests_per_s"], 1e-300) for r, lanes in parts]
    mean = {k: sum(getattr(r, k) * w for (r, _), w in zip(parts, weight))
            for k in ("ttft_s", "itl_s", "e2e_latency_s", "decode_step_s", "prefill_step_s")}
    saturated = np.logical_or.reduce([np.asarray(r.saturated) for r, _ in parts])
    share = (" and ".join(f"{load.shape.label(v)} on {k}" for v, k in shares) if load.shape.takes_value
             else "one request at a time")
    return (replace(parts[0][0], **total, **mean, saturated=saturated), method,
            f"{regime}; {busy} of the pipeline's {plan.pp} batches in flight busy ({share})")


def pipeline_paced(plan: Plan, r: LoadResult, busy: int, ideal: bool) -> LoadResult:
    """One lane's answer with `busy` lanes of a pipeline in flight: a full pipeline advances at its slowest stage's
    pace (each batch waits for the stage ahead to finish the other batches), so a token takes at least busy × the
    slowest stage's share of the whole-model step (the stages' weights read per step, `Plan.stage_max_share`). A
    perfect pipeline (the bound) balances its stages and spreads a prompt's chunks over all of them at once."""
    if ideal:
        ttft = r.ttft_s / plan.pp
        e2e = r.e2e_latency_s - r.ttft_s + ttft
        more = np.asarray(r.e2e_latency_s) / np.maximum(e2e, 1e-300)  # the load's own limit rises as e2e falls
        return replace(r, ttft_s=ttft, e2e_latency_s=e2e, requests_per_s=r.requests_per_s * more,
                       output_tokens_per_s=r.output_tokens_per_s * more, total_tokens_per_s=r.total_tokens_per_s * more)
    f = plan.pipeline_pace(busy)
    if f == 1.0:
        return r
    decode = r.e2e_latency_s - r.ttft_s
    return replace(r, itl_s=r.itl_s * f, e2e_latency_s=r.ttft_s + decode * f, decode_step_s=r.decode_step_s * f,
                   requests_per_s=r.requests_per_s / f, output_tokens_per_s=r.output_tokens_per_s / f,
                   total_tokens_per_s=r.total_tokens_per_s / f)


def lane_load(plan: Plan, cal: Calibration, s: Scenario, load: Load) -> tuple[LoadResult, str, str]:
    """`predicted_load` for one lane under `load`."""
    method = resolved_method(s, load.kind, load.value)
    if s.ideal:
        tau = spec_tokens_per_step(s.spec_acceptance, s.spec_draft_tokens)
        b = ideal_bounds(plan, s.isl, s.osl, load.kind, load.value, s.prefix_hit_rate, tau,
                         s.spec_draft_tokens if tau > 1 else 0)
        r = LoadResult(*(np.asarray(b[k]) for k in ("ttft_s", "itl_s", "e2e_latency_s", "requests_per_s",
                                                      "output_tokens_per_s", "total_tokens_per_s", "running",
                                                      "decode_step_s", "prefill_step_s")), np.asarray(False))
        regime = ("a bound, not a prediction: the TTFT and ITL no engine undercuts and the throughput no engine "
                  "exceeds on this hardware (roofline, all memory after the weights as KV cache, no engine limits)")
        return r, "bound", regime
    if method == "simulate":
        r, regime = simulated_load(plan, cal, s, load.kind, load.value)
        return r, method, regime
    r = run_load(plan, cal, s, s.isl, s.osl, load.kind, load.value)
    regime = ("steady state of an endless load" if load.shape.endless and s.num_requests is None
              else "a benchmark as run: clients start together (closed forms)")
    return r, method, regime


def predicted_metrics(plan: Plan, cal: Calibration, s: Scenario) -> dict[str, float]:
    """The Estimate's load figures for the whole deployment (replicas included), without the rest of the
    Estimate (bounds, notes, card): the cheap path a calibration fit evaluates thousands of times."""
    r, _, _ = predicted_load(plan, cal, s)
    f = {k: float(np.asarray(getattr(r, k))) for k in METRICS}
    for k in ("requests_per_s", "output_tokens_per_s", "total_tokens_per_s", "running"):
        f[k] *= plan.replicas
    return f


def extras_of(s: Scenario) -> Extras:
    """The scenario's what-ifs (prefix hits, speculative decoding) as the load model takes them."""
    return Extras(s.prefix_hit_rate, s.spec_acceptance, s.spec_draft_tokens, s.spec_draft_cost)


def request_work_s(plan: Plan, s: Scenario, running: float) -> tuple[float, float]:
    """(HBM seconds, tensor-core seconds) one request of this scenario keeps each GPU of a replica busy at `running`
    sequences, speculative steps and draft forwards included (capacity/model/power.request_busy_s): the one path from a
    scenario to the power model's inputs, for estimates and for scripts/power_report.py's fit alike."""
    tau, drafts = speculation(extras_of(s), plan.costs)
    m, c = request_busy_s(plan, s.isl, s.osl, running, s.prefix_hit_rate, tau, drafts)
    return float(m), float(c)


def predicted_power_w(plan: Plan, s: Scenario, rps_per_replica: float, running: float) -> float | None:
    """Mean power of every GPU of the deployment at this load (capacity/model/power.py); None without a power model or
    for --ideal (a bound has no power). `running`: sequences in one lane's batch; a pipeline's stage does 1 / pp of
    each request's work."""
    k = shipped_power()
    if k is None or s.ideal or not rps_per_replica > 0:
        return None
    m, c = (x / plan.pp for x in request_work_s(plan, s, running))
    return float(mean_power_w(plan.gpu.tdp_watts, rps_per_replica, m, c, k)) * s.num_gpus


def predict(plan: Plan, cal: Calibration, s: Scenario) -> Estimate:
    """The Estimate of scenario `s` on its plan (`plan_for(s)`, calibration-independent: build it once) with
    calibration `cal`. `estimate` is plan_for + calibration_for + predict."""
    load = parse_load(s.load)
    model, gpu, profile = plan.model, plan.gpu, plan.profile
    r, method, regime = predicted_load(plan, cal, s)  # method: closed-form, simulate, or bound (--ideal)
    f = {k: float(np.asarray(getattr(r, k))) for k in METRICS}
    reps = plan.replicas
    rps, out_tps, tot_tps = f["requests_per_s"] * reps, f["output_tokens_per_s"] * reps, f["total_tokens_per_s"] * reps
    price = s.price_usd_per_gpu_hour or gpu.price_usd_per_gpu_hour
    fleet_price = price * s.num_gpus if price else None
    ctx = s.isl + s.osl / 2
    prefill_keys = float(attended_tokens_prefill(model, s.isl * (1 - s.prefix_hit_rate), s.isl * s.prefix_hit_rate))
    prefill_bound = bound_of_step(plan.costs, 0, s.isl, s.isl * (1 - s.prefix_hit_rate), prefill_keys)
    # one lane's batch (a pipeline keeps several, capacity/plan.py): what a step of it runs
    shares = load.shape.per_lane(load.value, plan.pp)  # ((value, lanes), ...); pp = 1: the load itself on one lane
    lane = f["running"] / sum(k for _, k in shares)
    decode_bound = bound_of_step(plan.costs, max(lane, 1.0), ctx, 0, 0)
    step = step_parts(plan.costs, cal.efficiency, max(lane, 1.0), ctx, 0.0, 0.0, s.ideal)
    gpu_s, host_s, launch_s = float(step.gpu_s + step.overhead_s), float(step.host_s), float(step.launch_s)
    host_bound = host_s > gpu_s
    launch_bound = launch_s > 0.25 * (max(gpu_s, host_s) + launch_s)  # op-by-op launches are a large share of the step
    notes = list(plan.notes)
    if profile.name == "sglang" and model.sliding_window:
        notes.append("SGLang keeps sliding-window layers in a pool of its own, which is not modelled: the KV "
                     "figures follow vLLM's hybrid-allocator rule")
    if profile.recv_interval_steps > 1 and waits_for_read(load.kind, load.value):
        notes.append(f"new requests are read every {profile.recv_interval_steps} decode steps: the mean wait of "
                     f"{(profile.recv_interval_steps - 1) / 2:g} steps more is SGLang's rule read from its code, not "
                     "measured here")
    if host_bound:
        seen = ""
        # measured on vLLM with one API server only
        spread = host_bound_decode() if profile.name == "vllm" and profile.api_server_count == 1 else None
        if spread and spread.get("itl_s"):
            lo, hi = spread["itl_s"]
            seen = (f"; on vLLM 0.26 / H200 (cloud VMs) {spread['clients']} clients of an 8B model decoded at "
                    f"{lo * 1e3:.1f} to {hi * 1e3:.1f} ms per token across {spread['points']} points of "
                    f"{sittings_text(spread['sittings'])}: from server to server a host-bound ITL "
                    f"moves by about ±{(hi - lo) / (hi + lo) * 100:.0f} % (card.json host_bound_decode)")
        notes.append(f"decode is host-bound at {lane:,.0f} running sequences: the engine's host work "
                     f"({host_token_s(plan.costs, cal.efficiency) * 1e6:.0f} µs per sequence per step"
                     f"{f', one process for all {plan.pp} batches in flight' if plan.pp > 1 else ''}"
                     f"{f', each of {plan.dp_ranks} ranks for its own' if plan.dp_ranks > 1 else ''}, from calibration "
                     f"{cal.label}) outlasts the GPU step, so a faster GPU would not raise throughput here; "
                     f"more replicas would{api_servers_note(profile)}{seen}")
    if launch_bound:
        notes.append(f"decode at {lane:,.0f} running sequences is larger than the engine's largest CUDA graph "
                     f"({profile.max_cudagraph_tokens:,} tokens{' per rank' if plan.dp_ranks > 1 else ''}): launched op by op, "
                     f"it pays {launch_s * 1e3:.0f} ms of launches on top of its work (calibration {cal.label}); larger "
                     "graphs (vLLM --max-cudagraph-capture-size, SGLang --cuda-graph-max-bs, TensorRT-LLM "
                     "cuda_graph_config.max_batch_size) remove that floor")
    chunk, graphed_chunk = min(s.isl, profile.max_num_batched_tokens), plan.costs.prefill_graph_limit
    # measured on vLLM only: other engines' op-by-op MoE step was never timed here
    if profile.name == "vllm" and not s.ideal and model.moe is not None and chunk > graphed_chunk:
        spread = eager_moe_prompt()
        seen = ""
        if spread and spread.get("eager_ttft_s") and spread.get("graphed_ttft_s"):
            lo, hi = spread["eager_ttft_s"]
            seen = (f"; on vLLM 0.26 / H200 the same {spread['prompt_tokens']:,}-token prompt of {spread['model']} "
                    f"measured {lo * 1e3:.0f} to {hi * 1e3:.0f} ms across {spread['eager_points']} points "
                    f"({spread['graphed_ttft_s'] * 1e3:.0f} ms graphed), so expect ±{(hi - lo) / (hi + lo) * 100:.0f} % "
                    f"on TTFT (card.json eager_moe_prompt: {sittings_text(spread['sittings'])})")
        notes.append(f"prompt chunks of {chunk:,} tokens run without CUDA graphs "
                     f"(largest graph {graphed_chunk:,.0f} tokens): the MoE step launched op by op is the least "
                     f"predictable part of TTFT here{seen}")
    if profile.name == "sglang" and model.moe is not None and cal.efficiency.eager_moe_layer_overhead_s > 0:
        notes.append("the MoE launch floor without CUDA graphs was measured on vLLM, not on SGLang")
    reasons = simulation_reasons(s, load.kind, shares[0][0])  # what the lane's load asks of the closed forms
    if method == "simulate" and s.method == "auto" and not s.ideal and reasons:
        notes.append(f"simulated step by step: the closed forms cannot express the {' and '.join(reasons)}")
    elif method == "closed-form" and closed_form_gaps(s, load.kind) and not s.ideal:
        notes.append(f"closed forms asked for explicitly: the {' and '.join(closed_form_gaps(s, load.kind))} is ignored")
    sample_sd = arrival_sample_rel_sd(s, load.kind, load.value) if method == "simulate" else 0.0
    if sample_sd:
        notes.append(f"{s.arrivals} arrivals are random: these numbers are seed {s.seed}'s sample of "
                     f"{load.shape.simulated_requests(load.value, s.num_requests):,} requests (what validate --seed "
                     f"{s.seed} sends); from seed to seed the arrivals' span, and requests/s with it, varies by "
                     f"±{sample_sd * 100:.1f} % (1 sd)")
    if cal.extrapolated:
        notes.append(cal.extrapolated)
    elif cal.engine == "default":
        notes.append("no measured calibration for this engine/GPU: literature default factors")
    if bool(np.asarray(r.saturated)):
        notes.append("load exceeds what one replica runs at once: requests queue and TTFT grows with the queue")
    intervals = {k: (f[k] * math.exp(v.log_ratio_q05), f[k] * math.exp(v.log_ratio_q95))
                 for k, v in cal.residuals.items() if k in f}
    est = Estimate(
        model=s.model, gpu=gpu.id, engine=profile.name, ideal=s.ideal, precision=s.precision,
        weight_format=plan.weight_format, compute_precision=plan.compute_precision, kv_precision=s.kv_precision,
        num_gpus=s.num_gpus, tp=s.tp, ep=plan.ep, replicas=reps, pp=plan.pp, attention_dp=s.attention_dp, isl=s.isl, osl=s.osl, load=str(load),
        total_params=plan.total_params, active_params_per_token=plan.active_params,
        weight_bytes=plan.replica_weight_bytes, weight_bytes_per_gpu=plan.memory.weight_bytes,
        kv_bytes_per_token=plan.kv_bytes_per_token, kv_cache_bytes_per_gpu=plan.memory.kv_cache_bytes,
        activation_bytes_per_gpu=plan.memory.activation_bytes, kv_capacity_tokens=plan.memory.kv_capacity_tokens,
        max_concurrent_requests=plan.max_concurrent(s.isl + s.osl) * plan.lanes,
        ttft_s=f["ttft_s"], itl_s=f["itl_s"], e2e_latency_s=f["e2e_latency_s"], requests_per_s=rps,
        output_tokens_per_s=out_tps, total_tokens_per_s=tot_tps, running_requests=f["running"] * reps,
        prefill_bound=prefill_bound, decode_bound=decode_bound, decode_host_bound=host_bound,
        ridge_point_flops_per_byte=float(compiled("ridge_point_flops_per_byte")(plan.costs.peak_flops_per_s,
                                                                                plan.costs.bandwidth_bytes_per_s)),
        decode_compute_bound_batch=decode_compute_bound_batch(plan.costs, ctx),
        saturated=bool(np.asarray(r.saturated)), price_usd_per_gpu_hour=price,
        usd_per_million_input_tokens=usd_per_million_tokens(fleet_price, rps * s.isl),
        usd_per_million_output_tokens=usd_per_million_tokens(fleet_price, out_tps),
        usd_per_million_total_tokens=usd_per_million_tokens(fleet_price, tot_tps),
        **energy_fields(gpu.tdp_watts * s.num_gpus, predicted_power_w(plan, s, f["requests_per_s"], lane),
                        out_tps, s.price_usd_per_kwh),
        calibration=cal.label, calibration_source=cal.source, intervals=intervals, method="bound" if s.ideal else method,
        regime=regime, arrival_sample_rel_sd=sample_sd or None, start_refusal=plan.start_refusal,
        notes=notes,
    )
    return est.model_copy(update={"card": accuracy_card(s, est)})
