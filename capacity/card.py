"""The accuracy card on every answer: which domain the answer lies in, the slice it belongs to, the held-out error
measured for that slice and a 90 % interval per metric (capacity/calibrations/card.json, written by
scripts/build_card.py from committed data only; this module reads nothing else at run time).

Domains, strongest claim first:
- measured-here: engine, GPU, weight format, KV precision, model class and size, TP, lengths, load regime and every
  knob set are inside what the committed H200 measurements of that engine covered (card.json `measured_coverage`);
- calibrated-on-public-data: the calibration used was fitted on the public corpus for this GPU and weight format
  (data/public/calibration-plan.toml);
- extrapolated: outside that box but inside what the public corpus scored (another GPU, an engine with no
  measurement here, a larger model, TP beyond the measured, MLA, FP4 on Blackwell, ...);
- unsupported-feature: a feature no committed measurement checked, here or in the public corpus (speculative
  decoding beyond the measured acceptance and draft counts, prefix hits above the highest measured rate, FP4 where
  no corpus row ran it, context longer than any measured, ...).

A slice is engine × GPU class × model class × load regime. Its error comes from the held-out H200 measurements for
measured-here answers and from the public corpus for the others; a slice with fewer than `min_points` points per
metric is widened to its parent (same engine and GPU class, any model class; then any regime; then any engine on
the GPU class; then everything), and the card says so.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import math
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:  # pragma: no cover
    from capacity.estimate import Estimate, Scenario

CARD_FILE = "card.json"
Domain = Literal["measured-here", "calibrated-on-public-data", "extrapolated", "unsupported-feature"]
DOMAINS: tuple[str, ...] = ("measured-here", "calibrated-on-public-data", "extrapolated", "unsupported-feature")
METRICS = ("ttft_s", "itl_s", "throughput")
METRIC_LABELS = {"ttft_s": "TTFT", "itl_s": "ITL", "throughput": "requests/s or tokens/s"}
REGIMES = ("sync", "closed loop", "burst", "open arrivals")
FP4_FORMATS = ("nvfp4", "mxfp4", "int4")
KNOBS = ("gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens", "max_model_len", "max_cudagraph_tokens",
         "recv_interval_steps", "api_server_count")

GPU_CLASSES = {
    "h200-sxm": "H200", "h200-nvl": "H200",
    "h100-sxm": "H100", "h100-pcie": "H100", "h100-nvl": "H100",
    "b200": "Blackwell", "b300": "Blackwell", "gb200": "Blackwell", "gb300": "Blackwell",
    "rtx-pro-6000": "RTX Pro 6000",
    "a100-80gb-sxm": "Ampere/Ada", "a10g": "Ampere/Ada", "l4": "Ampere/Ada", "l40s": "Ampere/Ada",
    "mi300x": "AMD Instinct", "mi325x": "AMD Instinct", "mi355x": "AMD Instinct",
}


def gpu_class(gpu_id: str) -> str:
    return GPU_CLASSES.get(gpu_id, "other GPU")


def model_class(model) -> str:
    """dense, MoE or MLA (DeepSeek-style latent attention, with MoE) of a capacity.model.architecture.ModelArch."""
    if getattr(model, "mla", None) is not None:
        return "MLA"
    return "MoE" if getattr(model, "moe", None) is not None else "dense"


def regime(load_kind: str, value: float = 1.0) -> str:
    """The load regime of a parsed load, as its shape names it: sync (one at a time), closed loop, burst, open
    arrivals."""
    from capacity.loads import shape

    return shape(load_kind).regime_at(value)


def slice_key(engine: str, gclass: str, mclass: str, reg: str) -> str:
    return " × ".join((engine, gclass, mclass, reg))


def slice_chain(engine: str, gclass: str, mclass: str, reg: str) -> list[str]:
    """The slice and its parents, narrowest first ('*' = any)."""
    return [slice_key(engine, gclass, mclass, reg), slice_key(engine, gclass, "*", reg),
            slice_key(engine, gclass, "*", "*"), slice_key("*", gclass, "*", "*"), slice_key("*", "*", "*", "*")]


def lookup(slices: dict, chain: list[str], metric: str, min_points: int) -> tuple[str | None, dict | None, int]:
    """The first slice of `chain` with at least min_points points for `metric` (else the widest that has any), and the
    number of points the narrowest slice had."""
    narrow_n = int(slices.get(chain[0], {}).get(metric, {}).get("n", 0))
    best = None
    for key in chain:
        st = slices.get(key, {}).get(metric)
        if st and st["n"] >= min_points:
            return key, st, narrow_n
        if st and st["n"] > 0:
            best = (key, st)
    return (best[0], best[1], narrow_n) if best else (None, None, narrow_n)


class MetricAccuracy(BaseModel):
    model_config = ConfigDict(frozen=True)

    metric: str
    slice: str = Field(description="the slice whose held-out points these are (may be wider than the answer's own)")
    points: int
    few_points: bool = Field(description="the answer's own slice had fewer than min_points points: widened")
    own_slice_points: int = Field(description="points in the answer's own (narrowest) slice")
    median_abs_error: float = Field(description="median |predicted ÷ measured − 1| over the slice's held-out points")
    p90_abs_error: float
    median_ratio: float = Field(description="median of predicted ÷ measured (> 1: the model is high; kept positive "
                                            "so every number of an estimate is non-negative)")
    sources: dict[str, int] = Field(default_factory=dict, description="where the points come from, with counts")


class AccuracyCard(BaseModel):
    """How far to trust one estimate (capacity/card.py; numbers from capacity/calibrations/card.json)."""

    model_config = ConfigDict(frozen=True)

    domain: Domain
    reasons: list[str] = Field(default_factory=list, description="why the answer is not measured-here")
    slice: str = Field(description="engine × GPU class × model class × load regime of this answer")
    evidence: Literal["measured-here held-out", "public corpus"] = Field(
        description="which held-out points the errors come from")
    scored_on: str
    errors: dict[str, MetricAccuracy] = Field(default_factory=dict, description="per metric: ttft_s, itl_s, throughput")
    intervals: dict[str, tuple[float, float]] = Field(
        default_factory=dict, description="90 % interval of each estimated quantity from the slice's held-out errors "
                                          "(5th and 95th percentiles of measured ÷ predicted for a group the slice "
                                          "has not seen: scripts/build_card.py)")
    interval_coverage: dict[str, float] = Field(
        default_factory=dict, description="share of held-out points inside their 90 % interval when the interval was "
                                          "built without their source (card.json coverage_check)")
    notes: list[str] = Field(default_factory=list)

    def summary(self) -> str:
        """One line: the domain and the throughput/ITL error of the slice."""
        parts = []
        for m in ("throughput", "itl_s", "ttft_s"):
            a = self.errors.get(m)
            if a:
                parts.append(f"{METRIC_LABELS[m]} ±{a.median_abs_error * 100:.0f} % median "
                             f"(p90 {a.p90_abs_error * 100:.0f} %, n={a.points})")
        return f"{self.domain}: " + ("; ".join(parts) if parts else "no held-out error for this slice")


def measured_spread(key: str) -> dict | None:
    """One of card.json's measured spreads: `eager_moe_prompt` (vLLM's op-by-op MoE lone prompt across servers),
    `host_bound_decode` (vLLM's host-bound decode across servers), `api_server_decode` (vLLM's 256-client decode
    with one API server and with more); None without a card."""
    card = card_data()
    return card.get(key) if card else None


def eager_moe_prompt() -> dict | None:
    return measured_spread("eager_moe_prompt")


def host_bound_decode() -> dict | None:
    return measured_spread("host_bound_decode")


def sittings_text(sittings: list[str]) -> str:
    """'sittings 4, 25, 28' (or 'sitting 28') from card.json's sitting names."""
    return f"sitting{'s' if len(sittings) > 1 else ''} " + ", ".join(x.split("-")[1] for x in sittings)


def api_server_text() -> str:
    """What card.json's `api_server_decode` measured, in words ('' without it): the estimate's note and the app's
    help both quote this."""
    seen = measured_spread("api_server_decode")
    if not (seen and seen.get("itl_s_one_api_server") and seen.get("itl_s_more_api_servers")):
        return ""
    (a, b), (c, d) = seen["itl_s_one_api_server"], seen["itl_s_more_api_servers"]
    return (f"at {seen['clients']} clients {a * 1e3:.1f}-{b * 1e3:.1f} ms per token with one, {c * 1e3:.1f}-"
            f"{d * 1e3:.1f} with two or four on an H200, {sittings_text(seen['sittings'])} (card.json api_server_decode)")


@functools.cache
def card_data() -> dict | None:
    """The shipped card.json (None when it is absent, e.g. while scripts/build_card.py writes the first one)."""
    entry = importlib.resources.files("capacity.calibrations").joinpath(CARD_FILE)
    try:
        return json.loads(entry.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def _params_ok(cov: dict, mclass: str, total: int, active: int) -> list[str]:
    out = []
    mt, ma = cov.get("max_total_params", {}).get(mclass), cov.get("max_active_params", {}).get(mclass)
    if mt is not None and total > mt:
        out.append(f"{total / 1e9:,.0f} B parameters: the largest {mclass} model measured here has {mt / 1e9:,.1f} B")
    if ma is not None and active > ma:
        out.append(f"{active / 1e9:,.1f} B active parameters per token: the largest measured here is {ma / 1e9:,.1f} B")
    return out


def knobs_set(s: "Scenario", engine: str, gpu: str) -> dict:
    """The engine knobs the scenario sets to something other than the engine's own default on this GPU and TP."""
    set_ = {k: getattr(s, k) for k in KNOBS if getattr(s, k) is not None}
    if not set_:
        return set_
    try:
        from capacity.engines import engine_profile
        from capacity.hardware import load_gpu

        default = engine_profile(engine, load_gpu(gpu).usable_memory_bytes, s.tp)
    except Exception:  # noqa: BLE001  a custom GPU or engine: every knob set counts
        return set_
    return {k: v for k, v in set_.items() if getattr(default, k, None) != v}


def spec_method(s: "Scenario") -> str:
    """How a scenario drafts: a draft model (priced from its architecture) or drafts that cost no model step
    (n-gram prompt lookup, or the user's draft-cost ratio)."""
    return "draft model" if s.spec_draft_model else "n-gram"


def engine_unpriced(s: "Scenario", engine: str) -> list[str]:
    """The parts of the scenario's engine configuration the engine object says the model does not price."""
    from capacity.engines import get as engine_object
    from capacity.errors import CapacityError
    from capacity.hardware import load_gpu
    from capacity.model.architecture import load_model

    try:
        return engine_object(engine).unpriced(s, load_gpu(s.gpu), load_model(s.model))
    except CapacityError:  # an engine, GPU or model the catalog does not resolve: nothing known to be unpriced
        return []


def unpriced_name(feature: str) -> str:
    """An unpriced feature's name: its text before the parenthesis that says why (the key card.json's
    public_scoring.unpriced counts its public rows under)."""
    return feature.split(" (")[0]


def classify(s: "Scenario", e: "Estimate", mclass: str, reg: str, data: dict) -> tuple[str, list[str], list[str]]:
    """(domain, why it lies outside what was measured here, features no committed measurement checked)."""
    gclass, engine = gpu_class(e.gpu), answer_engine(s, e)
    knobs = knobs_set(s, engine, e.gpu)
    pub = data["public_coverage"]
    unsupported: list[str] = []
    measured = list(data["measured_coverage"].values())
    if s.spec_draft_tokens > 0 or s.spec_acceptance > 0:
        method = spec_method(s)
        ran = [(m, k, a) for c in measured for m, k, a in c.get("speculative", [])
               if m == method and k == s.spec_draft_tokens and abs(a - s.spec_acceptance) <= 0.05]
        if not ran:
            seen = "; ".join(f"{c['engine_version']}: {m}, {k} drafts at acceptance {a:.2f}"
                             for c in measured for m, k, a in c.get("speculative", []))
            unsupported.append(f"speculative decoding ({method}) at this acceptance and draft count: no committed "
                               "measurement ran it" + (f" (measured: {seen})" if seen else ""))
    top_hit = max([c.get("max_prefix_hit_rate", 0.0) for c in measured] + [0.0])
    if s.prefix_hit_rate > top_hit + 0.01:
        unsupported.append(f"prefix caching at a {s.prefix_hit_rate:.0%} hit rate: the highest measured is {top_hit:.0%}")
    if s.think_time_s > 0:
        unsupported.append("think time between requests: never measured")
    if s.arrivals not in pub["arrivals"] and all(s.arrivals not in c["arrivals"] for c in measured):
        unsupported.append(f"{s.arrivals} arrivals: never measured")
    fmt = e.weight_format
    if fmt in FP4_FORMATS and f"{gclass}/{fmt}" not in pub["gpu_class_formats"] and not any(
            fmt in c["weight_formats"] and gclass in {gpu_class(g) for g in c["gpus"]} for c in measured):
        unsupported.append(f"{fmt} weights on {gclass}: no committed measurement ran them")
    if mclass not in pub["model_classes"] and all(mclass not in c["model_classes"] for c in measured):
        unsupported.append(f"{mclass} models: never measured")
    ctx = s.isl + s.osl
    longest = max([pub["max_context"]] + [c["max_context"] for c in measured])
    if ctx > longest:
        unsupported.append(f"context of {ctx:,} tokens: the longest measured (here or public) is {longest:,}")
    for knob in knobs:
        if knob not in pub["knobs"] and all(knob not in c["knobs"] for c in measured):
            unsupported.append(f"{knob} set: no committed measurement varied it")
    unsupported += engine_unpriced(s, engine)

    reasons: list[str] = []
    cov = data["measured_coverage"].get(engine)
    if cov is None:
        reasons.append(f"engine {engine}: no committed measurement here scores it (scored: "
                       f"{', '.join(sorted(data['measured_coverage']))})")
    else:
        ver = cov["engine_version"]
        if e.gpu not in cov["gpus"]:
            reasons.append(f"GPU {e.gpu}: {engine} {ver} measured on {', '.join(cov['gpus'])} only")
        if fmt not in cov["weight_formats"]:
            reasons.append(f"{fmt} weights: {engine} measured in {', '.join(cov['weight_formats'])}")
        if e.kv_precision not in cov["kv_precisions"]:
            reasons.append(f"{e.kv_precision} KV cache: measured with {', '.join(cov['kv_precisions'])}")
        if mclass not in cov["model_classes"]:
            reasons.append(f"{mclass} model: {engine} measured on {', '.join(cov['model_classes'])} models")
        else:
            reasons += _params_ok(cov, mclass, e.total_params, e.active_params_per_token)
        if e.tp > max(cov["tp"]):
            reasons.append(f"TP {e.tp}: measured up to TP {max(cov['tp'])}")
        if e.ep > 1 and True not in cov["expert_parallel"]:
            reasons.append("expert parallel: never measured on this engine")
        if e.num_gpus > cov["max_num_gpus"]:
            reasons.append(f"{e.num_gpus} GPUs: measured up to {cov['max_num_gpus']}")
        if s.isl > cov["max_isl"] or s.osl > cov["max_osl"] or ctx > cov["max_context"]:
            reasons.append(f"{s.isl:,} in / {s.osl:,} out: measured up to {cov['max_isl']:,} in, {cov['max_osl']:,} out, "
                           f"{cov['max_context']:,} in all")
        if reg not in cov["regimes"]:
            reasons.append(f"{reg} load: not measured on this engine")
        if s.arrivals != "constant" and s.arrivals not in cov["arrivals"] and not any("arrivals" in u for u in unsupported):
            reasons.append(f"{s.arrivals} arrivals: not measured on this engine")
        if s.length_dist != "fixed" and s.length_ratio > 0 and s.length_dist not in cov["length_dists"]:
            reasons.append(f"{s.length_dist} length spread: not measured on this engine")
        for knob, v in knobs.items():
            if v not in cov["knobs"].get(knob, []) and not any(u.startswith(f"{knob} ") for u in unsupported):
                reasons.append(f"{knob}={v}: not a value measured here")
    if e.attention_dp:
        reasons.append("attention data parallel: never measured here and no calibration trained on it")
    if e.pp > 1:  # public PP rows are scored (the card's slices), never fitted
        reasons.append(f"pipeline parallel {e.pp}: never measured here and no calibration trained on it")
    if unsupported:
        return "unsupported-feature", reasons, unsupported
    if e.pp == 1 and not e.attention_dp and "data/public" in (e.calibration_source or "") and e.calibration.split("/")[1:] == [e.gpu, e.weight_format]:
        return "calibrated-on-public-data", reasons, unsupported  # fitted on public rows of this GPU and format
    return ("extrapolated" if reasons else "measured-here"), reasons, unsupported


def answer_engine(s: "Scenario", e: "Estimate") -> str:
    """The engine the answer is about (an --ideal bound is about the scenario's engine's hardware)."""
    return s.engine if e.ideal else e.engine


def _finite(x: float) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def accuracy_card(s: "Scenario", e: "Estimate") -> AccuracyCard | None:
    """The card of one estimate (None only when the shipped card.json is absent)."""
    data = card_data()
    if data is None:
        return None
    from capacity.model.architecture import load_model
    from capacity.load import parse_load

    load = parse_load(s.load)
    mclass, reg, gclass = model_class(load_model(s.model)), regime(load.kind, load.value), gpu_class(e.gpu)
    domain, outside, unsupported = classify(s, e, mclass, reg, data)
    reasons = outside + unsupported
    use_measured = not outside and domain != "calibrated-on-public-data"
    pool = data["pools"]["measured" if use_measured else "public"]
    engine = answer_engine(s, e)
    chain = slice_chain(engine, gclass, mclass, reg)
    notes: list[str] = []
    errors: dict[str, MetricAccuracy] = {}
    intervals: dict[str, tuple[float, float]] = {}
    min_points = int(data["min_points"])
    values = {"ttft_s": [("ttft_s", e.ttft_s)], "itl_s": [("itl_s", e.itl_s)],
              "throughput": [("requests_per_s", e.requests_per_s), ("output_tokens_per_s", e.output_tokens_per_s),
                             ("total_tokens_per_s", e.total_tokens_per_s)]}
    for m in METRICS:
        key, st, narrow_n = lookup(pool["slices"], chain, m, min_points)
        if st is None:
            continue
        errors[m] = MetricAccuracy(metric=m, slice=key, points=st["n"], few_points=key != chain[0],
                                   own_slice_points=narrow_n, median_abs_error=st["median_abs_error"],
                                   p90_abs_error=st["p90_abs_error"], median_ratio=st["median_ratio"],
                                   sources=st["sources"])
        if not s.ideal:
            for name, v in values[m]:
                lo, hi = v * math.exp(st["log_ratio_q05"]), v * math.exp(st["log_ratio_q95"])
                if _finite(lo) and _finite(hi):
                    intervals[name] = (lo, hi)
    widened = [a for a in errors.values() if a.few_points]
    if widened:
        notes.append(f"few points (< {min_points}) in the slice {chain[0]}: "
                     + "; ".join(f"{METRIC_LABELS[a.metric]} has {a.own_slice_points}, widened to {a.slice} "
                                 f"({a.points} points)" for a in widened))
    if domain == "unsupported-feature":
        seen = data.get("public_scoring", {}).get("unpriced", {})
        checked = [(unpriced_name(u), seen[unpriced_name(u)]) for u in unsupported if unpriced_name(u) in seen]
        notes.append("the errors shown are the slice's without the unsupported feature" + (
            "; public rows that ran with it: " + "; ".join(
                f"{name}: {st['points']} points, median error {st['median_error'] * 100:+.0f} % (scored apart)"
                for name, st in checked) if checked else ": its effect was never checked"))
    if not use_measured and engine not in data["public_engines_scored_as_is"]:
        mapped = [k for k in data["public_scoring"]["mapping"] if k.startswith(f"engine {engine} ")]
        notes.append((f"public {engine} rows were scored as scripts/score_public.py maps them ({mapped[0]}), while this "
                      f"answer uses the {engine} profile with calibration {e.calibration}: the slice's error is the "
                      "mapped model's, not this answer's own") if mapped else
                     f"no public row of engine {engine}: the errors are other engines' on the nearest slice")
    if domain == "extrapolated":
        notes.append(data["public_calibrations_note"][:1].upper() + data["public_calibrations_note"][1:])
    if s.ideal:
        notes.append("--ideal is a bound, not a prediction: the held-out errors are the calibrated model's, and no "
                     "interval applies")
    if s.calibration:
        notes.append("a calibration file was given: the held-out errors are those of the shipped calibrations")
        from capacity.calibration import parse_calibration_file

        cal = parse_calibration_file(s.calibration)
        if (cal.engine, cal.gpu) != (s.engine, s.gpu) and cal.engine != "default":
            notes.append(f"the calibration file was fitted for {cal.engine} on {cal.gpu}; this answer applies its "
                         f"factors as they are to {s.engine} on {s.gpu}")
    cov = data["coverage_check"]["measured" if use_measured else "public"]["per_metric"]
    return AccuracyCard(
        domain=domain, reasons=reasons, slice=chain[0],
        evidence="measured-here held-out" if use_measured else "public corpus",
        scored_on=data["pools"]["measured" if use_measured else "public"]["scored_on"],
        errors=errors, intervals=intervals,
        interval_coverage={m: c["share"] for m, c in cov.items() if c["n"]}, notes=notes)


UNITS = {"ttft_s": (1e3, " ms"), "itl_s": (1e3, " ms"), "requests_per_s": (1, ""), "output_tokens_per_s": (1, ""),
         "total_tokens_per_s": (1, "")}


def card_rows(card: AccuracyCard | None) -> list[tuple[str, str]]:
    """(label, value) rows of a card for a two-column table (the CLI's estimate table, the app)."""
    if card is None:
        return [("accuracy card", "none (capacity/calibrations/card.json missing)")]
    rows = [("accuracy domain", card.domain + (f" ({'; '.join(card.reasons)})" if card.reasons else "")),
            ("accuracy slice", f"{card.slice} — errors from {card.evidence}")]
    for m, a in card.errors.items():
        rows.append((f"held-out |error| {METRIC_LABELS[m]}",
                     f"median {a.median_abs_error * 100:.0f} %, p90 {a.p90_abs_error * 100:.0f} % "
                     f"({a.points} points{'' if not a.few_points else ', few points in own slice: ' + a.slice})"))
    for k, (lo, hi) in card.intervals.items():
        scale, unit = UNITS.get(k, (1, ""))
        rows.append((f"{k} 90 % interval (card)", f"{lo * scale:,.4g} – {hi * scale:,.4g}{unit}"))
    if card.interval_coverage:
        rows.append(("card intervals' held-out coverage",
                     ", ".join(f"{METRIC_LABELS[m]} {v * 100:.0f} %" for m, v in card.interval_coverage.items())))
    return rows
