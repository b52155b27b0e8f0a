"""Fit the capacity model's efficiency factors to measured points and report held-out error.

The fit minimizes squared log errors of mean TTFT, mean ITL and requests/s over the training points
(scipy least_squares with bounds), each weighted by the spread expected for its kind of load. Points are split by shape (input/output lengths): whole shapes are
held out, so the reported error is for workloads the fit never saw. The calibration file carries the
5th/95th percentiles of log(measured/predicted) on the training points, from which every calibrated
prediction gets an interval; the held-out coverage of that interval is reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date

import numpy as np

from capacity import Scenario
from capacity.model.architecture import load_model
from capacity.calibration import Calibration, Efficiency, ResidualStats
from capacity.errors import CapacityError
from capacity.loads import SHAPES
from capacity.estimate import closed_form_gaps, plan_for, predict, predicted_metrics
from capacity.plan import Plan
from capacity.model.steptime import StepCosts, step_time_s
from validate.compare import MeasuredRun, load_run, point_scenario
from validate.errors import ValidateError
from validate.steplog import decode_windows, server_log_text

FIT_METRICS = {"mean_ttft_s": "ttft_s", "mean_itl_s": "itl_s", "requests_per_s": "requests_per_s"}
# Expected spread of log(measured/predicted) by load kind (weighted least squares, weight 1/σ): one
# request at a time repeats within ~1 % and is modelled directly; bursts add admission, preemption
# and drain dynamics the closed form only approximates; TTFT under load is mostly queueing.
SIGMA_TTFT_FACTOR = 2.0
SIGMA_STEP = 0.10  # a decode step read from a 10-second stats window of the engine's log
STEP_MIN_RUNNING = 32
# parameter: (low, high); fitted only where the data can identify it. The efficiencies stop where the best
# published kernels stop (a copy kernel reaches ~90 % of HBM peak, cuBLAS ~75-80 % of dense bf16 peak,
# FlashAttention 3 ~75 % in prefill): beyond that the fit would trade one term for another instead of measuring it.
BOUNDS = {
    "weight_bandwidth": (0.3, 0.92),
    "kv_bandwidth": (0.15, 0.92),
    "matmul": (0.2, 0.8),
    "attention_matmul": (0.05, 0.75),
    "moe_matmul": (0.05, 0.8),
    "step_overhead_s": (0.0, 0.02),
    "layer_overhead_s": (0.0, 3e-4),
    "moe_layer_overhead_s": (0.0, 3e-4),
    "sequence_overhead_s": (0.0, 2e-4),
    "quant_linear_s": (0.0, 2e-5),  # one small kernel per quantized linear: a few µs in a graph
    "fp4_moe_layer_s": (0.0, 1e-4),  # a weight-only FP4 MoE layer's extra kernels: ~5 small ones at a few µs each
    "host_token_s": (0.0, 3e-4),
    # a dense layer launched op by op through vLLM's compiled graph: ~0.75 ms of CPU per layer measured (sitting 21:
    # Qwen3-8B FP8's 1,024-token prompt 5-16 ms slower at default graphs than graphed, hidden at 2,048), not the few
    # µs per kernel of a bare launch; a floor, so it binds only on short eager steps
    "eager_layer_overhead_s": (0.0, 1.5e-3),
    # measured: Qwen3-30B-A3B at 640 sequences stepped 44 ms with CUDA graphs to 1,024 and 70 ms with vLLM's
    # default graphs to 512 (sitting 6): ~1.5 ms of launch per MoE layer, far above a few µs per kernel
    "eager_moe_layer_overhead_s": (0.0, 3e-3),
    # an MLA layer's extra launch op by op (set by scripts/mla_eager.py; freed only where an MLA model trains)
    "eager_mla_layer_overhead_s": (0.0, 5e-3),
    "request_overhead_s": (0.0, 0.1),
    "admission_s": (0.0, 0.01),
    # a step's CPU work in series with the GPU: scheduling, input preparation, sampling, output (a few ms)
    "idle_step_s": (0.0, 0.02),
}


@dataclass(frozen=True)
class Sample:
    label: str
    shape: str
    scenario: Scenario
    measured: dict[str, float]
    plan: Plan | None = field(default=None, compare=False, repr=False)  # plan_for(scenario), None: it does not plan

    @classmethod
    def planned(cls, label: str, shape: str, scenario: Scenario, measured: dict[str, float]) -> "Sample":
        """A sample with its plan built once: the plan does not depend on the calibration a fit tries."""
        try:
            plan = plan_for(scenario)
        except CapacityError:
            plan = None
        return cls(label, shape, scenario, measured, plan)


def samples(runs: list[MeasuredRun]) -> list[Sample]:
    """The points a fit can use. The fit prices every point with the closed forms (hundreds of evaluations per
    point), so a point whose load they cannot express (spread lengths, Poisson arrivals: the estimate simulates
    those) is left to be scored, not fitted."""
    out = []
    for run in runs:
        for p in run.points:
            if p.completed == 0:
                continue
            s = point_scenario(run, p, method="closed-form")  # the fit prices with the closed forms (fast)
            if closed_form_gaps(s, p.load.split(":")[0]):
                continue
            meas = {pk: float(getattr(p, mk)) for mk, pk in FIT_METRICS.items() if getattr(p, mk)}
            out.append(Sample.planned(f"{s.model} {s.precision} {s.isl}x{s.osl} {p.load}", f"{s.isl}x{s.osl}", s, meas))
    return out


@dataclass(frozen=True)
class StepSample:
    """One pure-decode window of an engine log: `running` sequences at mean `context` took `step_s` per step."""
    scenario: Scenario
    costs: StepCosts  # of the scenario's plan: what the model's step time needs
    running: int
    context: float
    step_s: float


def step_samples(runs: list[MeasuredRun], shapes: set[str] | None = None,
                 min_running: int = STEP_MIN_RUNNING) -> list[StepSample]:
    """Decode windows from the server logs beside the runs, one log per server. With `shapes`, only servers
    that ran nothing else (a log has no shape labels). Skipped: models with sliding-window layers (their KV
    usage does not translate into a context length) and scenarios the model cannot plan."""
    out, seen = [], set()
    for run in runs:
        server = run.path.parent
        tokens = run.facts.get("kv_cache_tokens")
        if server in seen or not tokens or not run.points:
            continue
        seen.add(server)
        if shapes is not None and {q.parent.name for q in server.glob("*/points.jsonl")} - shapes:
            continue
        text = server_log_text(server)
        if not text:
            continue
        s = point_scenario(run, run.points[0])
        try:
            plan = plan_for(s)
        except CapacityError:
            continue
        if plan.model.sliding_window:
            continue
        for w in decode_windows(text, min_running):
            out.append(StepSample(s, plan.costs, w.running, w.kv_usage * tokens / w.running, w.step_s))
    return out


def step_errors(steps: list[StepSample], eff: Efficiency) -> np.ndarray:
    model = [float(step_time_s(st.costs, eff, st.running, st.context)) for st in steps]
    return np.asarray([math.log(m / st.step_s) / SIGMA_STEP for m, st in zip(model, steps)])


def split(data: list[Sample], holdout_shapes: list[str] | None) -> tuple[list[Sample], list[Sample]]:
    shapes = sorted({d.shape for d in data}, key=lambda x: tuple(int(v) for v in x.split("x")))
    held = set(holdout_shapes) if holdout_shapes is not None else set(shapes[1::3])
    train = [d for d in data if d.shape not in held]
    test = [d for d in data if d.shape in held]
    if not train:
        raise ValidateError("every point is held out: nothing to fit on")
    return train, test


def sigma(d: Sample, metric: str) -> float:
    kind = d.scenario.load.split(":")[0]
    noise = SHAPES[kind].fit_sigma if kind in SHAPES else 0.1  # each load shape's measurement noise
    return noise * (SIGMA_TTFT_FACTOR if metric == "ttft_s" else 1.0)


def log_errors(data: list[Sample], eff: Efficiency, weighted: bool = False) -> np.ndarray:
    cal = Calibration(engine="fit", efficiency=eff)
    errs = []
    for d in data:
        try:
            if d.plan is None:
                raise CapacityError("does not plan")
            e = predicted_metrics(d.plan, cal, d.scenario)
        except CapacityError:
            errs += [math.log(10)] * len(d.measured)
            continue
        errs += [math.log(e[pk] / v) / (sigma(d, pk) if weighted else 1.0) for pk, v in d.measured.items()]
    return np.asarray(errs)


# Fitted only where a plan asks for it: the idle engine's step cost stands in for a fixed front end on lone
# requests, so it is identified only once the front end is set from the engine's counters (front_end = "counters")
OPT_IN = ("idle_step_s",)


def free_parameters(data: list[Sample]) -> list[str]:
    moe_only = ("moe_matmul", "moe_layer_overhead_s", "eager_moe_layer_overhead_s")
    names = [n for n in BOUNDS if n not in moe_only and n not in OPT_IN]
    if any(load_model(m).moe is not None for m in {d.scenario.model for d in data}):  # MoE terms need an MoE
        names += list(moe_only)
    if not any(d.plan is not None and d.plan.costs.quantized_linears for d in data):  # needs quantized compute
        names.remove("quant_linear_s")
    if not any(d.plan is not None and d.plan.costs.weight_only_fp4_moe_layers for d in data):  # needs FP4 experts
        names.remove("fp4_moe_layer_s")
    if not any(d.plan is not None and d.plan.costs.mla_layers for d in data):  # needs an MLA model
        names.remove("eager_mla_layer_overhead_s")
    return names


# What a second weight precision of the same engine and GPU refits: the kernels that touch the weights.
# Attention reads a bf16 KV cache either way, and overheads are host and launch costs of the engine, so
# those come from the first fit.
KERNEL_PARAMETERS = ("weight_bandwidth", "matmul", "moe_matmul")

# What a second engine on the same GPU and host refits from the first engine's fit: its HTTP front-end (fixed
# time per request, serial admission). The kernels (FlashAttention 3, cuBLAS GEMMs) and the per-token host
# floor are kept: on one host, SGLang 0.5.17's large-batch decode step per sequence matched vLLM's.
FRONT_END_PARAMETERS = ("request_overhead_s", "admission_s")


# The fit has several local optima (host time and GPU time can stand in for each other; a floor such as the
# eager launch has no gradient until it binds): it starts from the given factors and from these host-side
# guesses too, and keeps the lowest weighted error.
# (idle_step_s is a floor under a step: at 0 its gradient is 0, so a start above the short steps' GPU time is needed)
EXTRA_STARTS = ({"host_token_s": 5e-5, "admission_s": 1e-3, "eager_moe_layer_overhead_s": 1.5e-3, "idle_step_s": 0.012},
                {"host_token_s": 1e-5, "admission_s": 3e-3, "eager_moe_layer_overhead_s": 1e-3, "idle_step_s": 0.016})


def fit(train: list[Sample], start: Efficiency | None = None, only: tuple[str, ...] | None = None,
        steps: list[StepSample] = (), extra_starts: bool = True, hold: tuple[str, ...] = (),
        also: tuple[str, ...] = ()) -> Efficiency:
    """`hold`: parameters kept at `start`'s values (set from another measurement), whatever `only` says; `also`:
    opt-in parameters (OPT_IN) fitted besides the others."""
    from scipy.optimize import least_squares

    start = start or Efficiency()
    names = [n for n in free_parameters(train) + [a for a in also if a in OPT_IN]
             if (only is None or n in only or n in also) and n not in hold]
    if not names:
        return start
    lo = np.array([BOUNDS[n][0] for n in names])
    hi = np.array([BOUNDS[n][1] for n in names])
    scale = hi - lo

    def residuals(z: np.ndarray) -> np.ndarray:
        x = lo + scale * z
        eff = start.model_copy(update=dict(zip(names, x.tolist())))
        return np.concatenate([log_errors(train, eff, weighted=True), step_errors(list(steps), eff)])

    guesses = [{}] + ([g for g in ({k: v for k, v in e.items() if k in names} for e in EXTRA_STARTS) if g]
                      if extra_starts else [])
    best = None
    for guess in guesses:
        first = start.model_copy(update=guess)
        x0 = np.clip(np.array([getattr(first, n) for n in names]), lo + 1e-9, hi - 1e-9)
        res = least_squares(residuals, (x0 - lo) / scale, bounds=(0.0, 1.0), diff_step=1e-3, x_scale=1.0, max_nfev=400)
        if best is None or res.cost < best.cost:
            best = res
    return start.model_copy(update=dict(zip(names, (lo + scale * best.x).tolist())))


def _plan(d: Sample) -> Plan:
    return d.plan if d.plan is not None else plan_for(d.scenario)  # raises the reason it does not plan


def residual_stats(data: list[Sample], eff: Efficiency) -> dict[str, ResidualStats]:
    cal = Calibration(engine="fit", efficiency=eff)
    by_metric: dict[str, list[float]] = {pk: [] for pk in FIT_METRICS.values()}
    for d in data:
        for pk in d.measured:
            by_metric.setdefault(pk, [])
    for d in data:
        e = predicted_metrics(_plan(d), cal, d.scenario)
        for pk, v in d.measured.items():
            by_metric[pk].append(math.log(v / e[pk]))
    out = {}
    for pk, r in by_metric.items():
        if len(r) >= 2:
            a = np.asarray(r)
            out[pk] = ResidualStats(count=len(a), log_ratio_q05=float(np.quantile(a, 0.05)),
                                    log_ratio_q95=float(np.quantile(a, 0.95)),
                                    mean_abs_pct_error=float(np.mean(np.abs(np.exp(a) - 1))))
    return out


MIN_INTERVAL_POINTS = 20  # fewer training residuals than this give quantiles too narrow to trust


def widen(stats: dict[str, ResidualStats], base: dict[str, ResidualStats]) -> dict[str, ResidualStats]:
    """Intervals from few points take at least the spread of a larger fit (same engine and GPU)."""
    out = dict(stats)
    for k, own in stats.items():
        b = base.get(k)
        if b is not None and own.count < MIN_INTERVAL_POINTS:
            out[k] = own.model_copy(update={"log_ratio_q05": min(own.log_ratio_q05, b.log_ratio_q05),
                                            "log_ratio_q95": max(own.log_ratio_q95, b.log_ratio_q95)})
    return out


def calibrate(paths: list[str], engine: str, gpu: str, precision: str, holdout_shapes: list[str] | None = None,
              source: str = "", start: Efficiency | None = None, only: tuple[str, ...] | None = None,
              base_residuals: dict[str, ResidualStats] | None = None, loads: tuple[str, ...] | None = None,
              hold: tuple[str, ...] = (), also: tuple[str, ...] = ()) -> tuple[Calibration, dict[str, dict[str, float]]]:
    """Fit on the training shapes; return the calibration (fitted on them) and held-out error per metric.
    `start` and `only` fit a subset of the factors, the rest kept from `start` (e.g. another precision's fit);
    `loads`: the load kinds fitted and scored (None: all). The engine's decode-step log spans every load of a
    server, so a fit restricted by load kind does not read it."""
    runs = [load_run(p) for p in paths]
    data = samples(runs)
    data = [d for d in data if d.scenario.gpu == gpu and (precision == "any" or d.scenario.precision == precision)
            and (loads is None or d.scenario.load.split(":")[0] in loads)]
    if not data:
        raise ValidateError(f"no measured points for gpu={gpu} precision={precision}")
    train, test = split(data, holdout_shapes)
    # the engine's own decode-step log of the training runs' servers (it separates host from GPU time)
    steps = [] if loads is not None else [
        st for st in step_samples(runs, {d.shape for d in train})
        if st.scenario.gpu == gpu and (precision == "any" or st.scenario.precision == precision)]
    eff = fit(train, start, only, steps, hold=hold, also=also)
    stats = residual_stats(train, eff)
    if base_residuals:
        stats = widen(stats, base_residuals)
    cal = Calibration(engine=engine, gpu=gpu, precision=precision, efficiency=eff, residuals=stats,
                      fitted_on=sorted({d.label for d in train}), held_out=sorted({d.label for d in test}),
                      source=source or f"validate calibrate: {len(train)} points fitted, {len(test)} held out",
                      created=str(date.today()))
    report = {"train": _errors(train, cal), "held_out": _errors(test, cal) if test else {}}
    return cal, report


def _errors(data: list[Sample], cal: Calibration) -> dict[str, float]:
    """Mean absolute % error per metric, and how often the measured value falls inside the interval."""
    out: dict[str, float] = {}
    per: dict[str, list[float]] = {}
    inside: dict[str, list[bool]] = {}
    for d in data:
        e = predict(_plan(d), cal, d.scenario)
        for pk, v in d.measured.items():
            per.setdefault(pk, []).append(abs(getattr(e, pk) / v - 1))
            if pk in e.intervals:
                lo, hi = e.intervals[pk]
                inside.setdefault(pk, []).append(lo <= v <= hi)
    for pk, errs in per.items():
        out[f"mape_{pk}"] = float(np.mean(errs))
        if inside.get(pk):
            out[f"coverage_{pk}"] = float(np.mean(inside[pk]))
    return out
