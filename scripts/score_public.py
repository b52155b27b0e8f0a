"""Score the current capacity model against the public measured corpus (data/public/rows.jsonl).

For every row: build the `capacity.estimate.Scenario` the row describes, estimate it, and record predicted vs
measured (error = predicted ÷ measured − 1). Refusals (a configuration that does not fit, an unknown id) are caught
and listed, never dropped silently. Writes docs/public-corpus.md and data/public/scores.csv; every number in the
doc comes from this script and the committed rows (tests/test_public_corpus.py regenerates both and fails on drift).

    .venv/bin/python scripts/score_public.py [--doc PATH] [--scores PATH]

The row → Scenario mapping and its choices are validate/public/scenario.py's (each choice counted and flagged in the
doc). Rows a public calibration was fitted on (data/public/calibration-plan.toml) are marked and left out of every
table: the doc scores held-out rows only.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from capacity.card import engine_unpriced, unpriced_name  # noqa: E402
from capacity.model.architecture import load_model  # noqa: E402
from capacity.errors import CapacityError  # noqa: E402
from capacity.estimate import Estimate, Scenario, estimate  # noqa: E402
from validate.public.build import load_rows  # noqa: E402
from validate.public.common import ROWS_PATH  # noqa: E402
from validate.public.fit import fitted_row_ids, load_plan  # noqa: E402
from validate.public.scenario import MODELLED_ENGINES, predicted_value, scenario_for  # noqa: E402
from validate.public.schema import THROUGHPUT_METRICS, Row  # noqa: E402

DOC_PATH = REPO / "docs" / "public-corpus.md"
SCORES_PATH = REPO / "data" / "public" / "scores.csv"
AMD = ("mi300x", "mi325x", "mi355x")
BLACKWELL = ("b200", "b300", "gb200", "gb300", "rtx-pro-6000")


def model_class(model_id: str) -> str:
    m = load_model(model_id)
    if m.mla is not None:
        return "MLA (MoE)"
    return "MoE" if m.moe is not None else "dense"


def regime(r: Row) -> str:
    if r.load == "offline":
        return "offline max-throughput"
    if r.load == "batch":
        return "batch latency (B at once)"
    if r.load == "concurrency":
        return "single stream (C=1)" if r.concurrency == 1 else "closed loop C>1"
    return r.load


@dataclass
class Scored:
    row: Row
    scenario: dict
    flags: list[str]
    predicted: float | None = None
    error: float | None = None
    refused: str | None = None
    est: Estimate | None = field(default=None, repr=False)
    fitted: bool = False  # a public calibration trained on this row (data/public/calibration-plan.toml)
    unpriced: list[str] = field(default_factory=list)  # what the engine object says the model does not price

    @property
    def domain_note(self) -> str:
        """'' for a row the model prices; else ' (unpriced: …)' naming the feature (the text before its detail)."""
        return f" (unpriced: {'; '.join(unpriced_name(u) for u in self.unpriced)})" if self.unpriced else ""

    @property
    def speed_bias(self) -> float | None:
        """> 0: the model predicts a faster server than measured (more throughput or less latency)."""
        if self.predicted is None:
            return None
        ratio = self.predicted / self.row.value
        return ratio - 1 if self.row.metric in THROUGHPUT_METRICS else 1 / ratio - 1


def score(rows: list[Row], engines: tuple[str, ...] = MODELLED_ENGINES) -> list[Scored]:
    """Every row estimated (`engines`: those scored with their own profile, see validate.public.scenario), each
    marked when a public calibration was fitted on it."""
    fitted = fitted_row_ids(rows=rows)
    cache: dict[tuple, Estimate | str] = {}
    out = []
    for r in rows:
        s, flags = scenario_for(r, engines)
        key = tuple(sorted(s.items()))
        if key not in cache:
            try:
                scenario = Scenario(**s)
                cache[key] = (estimate(scenario), engine_unpriced(scenario, s["engine"]))
            except CapacityError as exc:
                cache[key] = f"{type(exc).__name__}: {exc}"
        res = cache[key]
        sc = Scored(r, s, flags, fitted=r.row_id in fitted)
        if not isinstance(res, str):
            res, sc.unpriced = res
        if isinstance(res, str):
            sc.refused = res
        else:
            sc.est = res
            sc.predicted = predicted_value(r, res)
            sc.error = sc.predicted / r.value - 1
        out.append(sc)
    return out


def likely_causes(sc: Scored) -> str:
    """Heuristic causes from the scenario's traits and the estimate's own flags, most specific first (not a diagnosis)."""
    r, e = sc.row, sc.est
    causes = []
    bias = sc.speed_bias or 0.0
    foreign = r.engine not in MODELLED_ENGINES
    launch_bound = e is not None and any("CUDA graph" in n for n in e.notes)
    causes += [f"unpriced: {u}" for u in sc.unpriced]
    if r.pp > 1:
        causes.append("pipeline parallel: the model's pipeline (pp batches in flight, host work per batch) is not measured here")
    if e is not None and foreign and launch_bound and bias < 0:
        causes.append("launch floor: vLLM's eager MoE steps above its 512-token CUDA graphs (TensorRT-LLM captures graphs to 8,192)")
    if e is not None and foreign and e.decode_host_bound and bias < 0:
        causes.append("host floor: vLLM's per-sequence host cost applied to an engine with a lighter scheduler")
    if r.metric == "ttft_s" and r.load == "concurrency" and (r.concurrency or 1) > 1 and (sc.error or 0) > 0:
        causes.append("closed loop priced as synchronized waves (all C prompts prefilled together); real clients drift "
                      "apart, so a request's TTFT sees about one prefill")
    if e is not None and e.saturated and e.max_concurrent_requests < 256 and r.load in ("offline", "concurrency") and bias < 0:
        causes.append(f"memory rule: only {e.max_concurrent_requests:,} sequences fit by the vLLM KV rule")
    if model_class(r.model).startswith("MLA"):
        causes.append("MLA attention and 256-expert MoE (DeepSeek) priced by dense-GEMM rooflines")
    if r.gpu in AMD:
        causes.append(f"ROCm efficiency: the H200 {sc.scenario['engine']} calibration extrapolated to {r.gpu}")
    if r.dp > 1:
        causes.append("attention DP: modelled (whole attention per GPU, each GPU its own sequences' KV), not measured here; "
                      "expert-parallel all-to-all priced as TP all-reduces")
    elif r.ep > 1 and foreign:
        causes.append("expert-parallel all-to-all priced as TP all-reduces")
    if r.weight_precision in ("nvfp4", "mxfp4") and r.gpu in BLACKWELL:
        causes.append("FP4 kernels on Blackwell carried with FP8 efficiency factors")
    if r.weight_precision in ("nvfp4", "mxfp4") and r.gpu not in BLACKWELL and r.gpu not in AMD:
        causes.append("FP4 weights on a GPU without FP4 tensor cores (weight-only)")
    if r.isl >= 8192:
        causes.append("long-prompt prefill")
    if r.gpu in ("l40s", "a100-80gb-sxm", "rtx-pro-6000"):
        causes.append("GPU never measured here (calibration extrapolated)")
    if "unit" in r.note and "not" in r.note:
        causes.append("unit or setup of the published figure not stated")
    if not causes:
        causes.append("engine-specific scheduling/kernels (no single trait)")
    return "; ".join(causes[:3])


# ---------------------------------------------------------------- report
def pct(x: float) -> str:
    return f"{x * 100:+.0f} %"


def apct(x: float) -> str:
    return f"{abs(x) * 100:.0f} %"


def summarize(items: list[Scored]) -> tuple[int, float, float, float]:
    errs = [s.error for s in items]
    worst = max(errs, key=abs)
    return len(items), statistics.median(abs(x) for x in errs), worst, statistics.median(s.speed_bias for s in items)


def slice_table(scored: list[Scored], key, title: str) -> list[str]:
    groups: dict[str, list[Scored]] = {}
    for s in scored:
        groups.setdefault(key(s), []).append(s)
    lines = [f"### By {title}", "",
             "| " + title + " | points | median abs error | worst error | median speed bias | direction |",
             "|---|---|---|---|---|---|"]
    for name in sorted(groups, key=lambda g: (-len(groups[g]), g)):
        n, med, worst, bias = summarize(groups[name])
        direction = "model optimistic (predicts faster)" if bias > 0 else "model pessimistic (predicts slower)"
        lines.append(f"| {name} | {n} | {apct(med)} | {pct(worst)} | {pct(bias)} | {direction} |")
    return lines + [""]


def count_table(rows: list[Row], key, title: str) -> list[str]:
    counts: dict[str, int] = {}
    for r in rows:
        counts[key(r)] = counts.get(key(r), 0) + 1
    lines = [f"| {title} | rows |", "|---|---|"]
    lines += [f"| {k} | {counts[k]} |" for k in sorted(counts, key=lambda k: (-counts[k], k))]
    return lines + [""]


def before_after(scored: list[Scored], before: list[Scored]) -> list[str]:
    """Held-out TensorRT-LLM rows: the vLLM-profile mapping of before against the TensorRT-LLM profile with the
    public calibrations, per GPU and per held-out kind (an unseen model, or a fitted model from an unseen source)."""
    plan = load_plan()
    fitted_models = {m for spec in plan for m in spec.train_models}
    prior = {b.row.row_id: b for b in before}
    pairs = [(s, prior[s.row.row_id]) for s in scored if s.row.engine == "trtllm" and not s.fitted
             and s.error is not None and prior.get(s.row.row_id) and prior[s.row.row_id].error is not None]
    L = ["## TensorRT-LLM: before and after its own profile and public calibrations", "",
         "The calibrations `trtllm--GPU--FORMAT` are fitted by `validate calibrate --public-plan "
         "data/public/calibration-plan.toml` on the rows that plan declares (TensorRT-LLM's v0.20 and v1.0 "
         f"perf-overview tables of {', '.join(sorted(m.split('/')[1] for m in fitted_models))}, one pipeline stage; "
         f"{sum(s.fitted for s in scored)} rows). Every table on this page leaves those rows out. **Before**: the same "
         "held-out rows scored with the vLLM profile and vLLM's H200 calibration, as this page did until the "
         "TensorRT-LLM profile had a calibration. **After**: the TensorRT-LLM profile (trtllm-bench's own limits for "
         "its rows) with the public calibration of the row's GPU, or the nearest one (an extrapolation).", "",
         "| held-out TensorRT-LLM rows | points | median abs error before | after | median speed bias before | after |",
         "|---|---|---|---|---|---|"]

    def row(name: str, group: list) -> str:
        a = [p[0] for p in group]
        b = [p[1] for p in group]
        return (f"| {name} | {len(group)} | {apct(summarize(b)[1])} | {apct(summarize(a)[1])} | "
                f"{pct(summarize(b)[3])} | {pct(summarize(a)[3])} |")

    groups: dict[str, list] = {}
    for p in pairs:
        kind = "fitted model, unseen source" if p[0].row.model in fitted_models else "unseen model"
        for key in ("all", kind, f"GPU {p[0].row.gpu}", f"source {p[0].row.source_id}",
                    f"model class {model_class(p[0].row.model)}"):
            groups.setdefault(key, []).append(p)
    for key in sorted(groups, key=lambda k: (k != "all", not k.startswith(("fitted", "unseen")), k)):
        L.append(row(key, groups[key]))
    return L + [""]


def render_doc(rows: list[Row], scored: list[Scored], before: list[Scored] | None = None) -> str:
    ok = [s for s in scored if s.error is not None and not s.fitted]
    n_fitted = sum(s.fitted for s in scored)
    refused = [s for s in scored if s.refused is not None]
    n_src = len({r.source_id for r in rows})
    L: list[str] = [
        "# The capacity model against published measurements (public corpus)", "",
        "Generated by `python scripts/score_public.py` from `data/public/rows.jsonl` (how the rows were taken and "
        "what is ambiguous in each source: [data/public/README.md](../data/public/README.md)); every number below "
        "comes from that script and the committed rows, and `tests/test_public_corpus.py` fails when this page is "
        "stale. Per-row predictions are in `data/public/scores.csv`.", "",
        "Error = predicted ÷ measured − 1 on the row's own metric. **Speed bias** puts throughput and latency on one "
        "axis: for a throughput it is the error itself, for a latency measured ÷ predicted − 1, so **+ means the "
        "model predicts a faster server than was measured** (optimistic) and − a slower one (pessimistic). Medians "
        "are over points; a configuration published with several metrics counts once per metric.", "",
        "**This is the shipped model scored as is.** vLLM and SGLang are calibrated on one H200 here, so on every "
        "other GPU their rows are an extrapolation: the H200 factors, with the GEMM shares scaled by the two GPUs' "
        "measured maximum-achievable matmul where both are published (`achievable_matmul_flops_per_s` in "
        "hardware_specs; MI300X x0.66 at fp8). TensorRT-LLM rows use the TensorRT-LLM profile and the public "
        "calibrations fitted on the rows data/public/calibration-plan.toml declares; those training rows are left "
        "out of every table below, which therefore scores held-out rows only. NIM rows (backend not stated) use the "
        "vLLM profile, flagged below. Closed-loop rows that do not state their request count (NIM's) are scored as "
        "an endless loop's steady state, whose clients the simulator starts spread over a cycle (a service's users); "
        "a benchmark's clients that start together stay in step on vLLM 0.26 (sitting 33), so this reading is a "
        "choice the source does not settle (its engine and length spread are not stated).", "",
        "## Corpus", "",
        f"{len(rows)} rows from {n_src} sources; {len(ok)} held-out rows scored, {n_fitted} rows trained a public "
        f"calibration (not scored here), {len(refused)} refused by the model.", "",
    ]
    L += ["| source | kind | rows | published | pinned to |", "|---|---|---|---|---|"]
    by_src: dict[str, list[Row]] = {}
    for r in rows:
        by_src.setdefault(r.source_id, []).append(r)
    for sid in sorted(by_src, key=lambda k: (-len(by_src[k]), k)):
        r0 = by_src[sid][0]
        pin = f"commit `{r0.source_commit[:12]}`" if r0.source_commit else f"web page read {r0.read_on}"
        pubs = list(dict.fromkeys(r.published for r in by_src[sid]))
        dates = sorted({d for p in pubs for d in re.findall(r"\d{4}-\d{2}-\d{2}", p)})
        if len(pubs) == 1:
            published = pubs[0]
        elif dates:
            published = f"{len(pubs)} editions/runs, {dates[0]} … {dates[-1]}"
        else:
            published = f"{len(pubs)} editions ({pubs[0]} … {pubs[-1]})"
        L.append(f"| {sid} | {r0.source_kind} | {len(by_src[sid])} | {published} | {pin} |")
    L.append("")
    L += ["Rows per GPU, engine, model class, load regime and metric:", ""]
    L += count_table(rows, lambda r: r.gpu, "GPU")
    L += count_table(rows, lambda r: f"{r.engine} {r.engine_version}" if r.engine != "trtllm" else "trtllm", "engine")
    L += count_table(rows, lambda r: model_class(r.model), "model class")
    L += count_table(rows, lambda r: f"{r.model}", "model")
    L += count_table(rows, regime, "regime")
    L += count_table(rows, lambda r: r.metric, "metric")
    L += count_table(rows, lambda r: f"TP{r.tp}" + (f" EP{r.ep}" if r.ep > 1 else "") + (f" PP{r.pp}" if r.pp > 1 else ""), "parallelism")
    flags: dict[str, int] = {}
    for s in scored:
        for f in s.flags:
            k = f.split(":")[0] if f.startswith("request count") else f
            flags[k] = flags.get(k, 0) + 1
    L += ["Mapping choices applied (rows):", "", "| choice | rows |", "|---|---|"]
    L += [f"| {k} | {flags[k]} |" for k in sorted(flags, key=lambda k: (-flags[k], k))]
    L.append("")

    if before is not None:
        L += before_after(scored, before)
    L += ["## Headline", ""]
    n, med, worst, bias = summarize(ok)
    within = lambda t: sum(abs(s.error) <= t for s in ok) / len(ok)  # noqa: E731
    L += [f"Over all {n} held-out points: median |error| **{apct(med)}**, median speed bias {pct(bias)}, "
          f"worst {pct(worst)}; {within(0.1) * 100:.0f} % of points within ±10 %, {within(0.25) * 100:.0f} % within ±25 %, "
          f"{within(0.5) * 100:.0f} % within ±50 %.", ""]
    L += ["## Error per slice", ""]
    L += slice_table(ok, lambda s: s.row.source_id, "source")
    L += slice_table(ok, lambda s: s.row.engine, "engine")
    L += slice_table(ok, lambda s: s.row.gpu, "GPU")
    L += slice_table(ok, lambda s: model_class(s.row.model), "model class")
    L += slice_table(ok, lambda s: regime(s.row), "regime")
    L += slice_table(ok, lambda s: s.row.metric, "metric")
    L += slice_table(ok, lambda s: s.row.weight_precision, "weight precision")
    L += slice_table(ok, lambda s: f"{s.row.engine} × {s.row.gpu} × {regime(s.row)}{s.domain_note}", "engine × GPU × regime")
    L += ["A slice marked *unpriced* holds the rows whose configuration the engine object says the model does not "
          "price (capacity/engines, `unpriced`); the accuracy card calls such an answer an unsupported feature and "
          "keeps these rows out of the slices that give other answers their error.", ""]

    L += ["## The 15 largest misses", "",
          "Likely causes are read off the scenario's traits and the estimate's own flags (host-bound decode, launch "
          "floor, KV-limited batch); they point at the model physics to examine, they are not a diagnosis.", "",
          "| row | model | GPU | parallel | ISL/OSL | load | metric | measured | predicted | error | likely cause |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in sorted(ok, key=lambda s: (-abs(math.log(1 + s.error)), s.row.row_id))[:15]:
        r = s.row
        par = f"TP{r.tp}" + (f" EP{r.ep}" if r.ep > 1 else "") + (f" DP{r.dp}" if r.dp > 1 else "") + (f" PP{r.pp}" if r.pp > 1 else "")
        L.append(f"| {r.row_id} | {r.model} {r.weight_precision} | {r.num_gpus}× {r.gpu} | {par} | {r.isl}/{r.osl} | "
                 f"{s.scenario['load']} | {r.metric} | {r.value:,.4g} | {s.predicted:,.4g} | {pct(s.error)} | {likely_causes(s)} |")
    L.append("")
    L += ["Ranked by |log(predicted ÷ measured)|, so a 3× under-prediction ranks with a 3× over-prediction.", ""]
    L += ["Largest miss of each source (the list above is dominated by one configuration family):", "",
          "| source | row | model | GPU | ISL/OSL | load | metric | measured | predicted | error | likely cause |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    worst_of: dict[str, Scored] = {}
    for s_ in sorted(ok, key=lambda s: (-abs(math.log(1 + s.error)), s.row.row_id)):
        worst_of.setdefault(s_.row.source_id, s_)
    for sid in sorted(worst_of):
        s_ = worst_of[sid]
        r = s_.row
        L.append(f"| {sid} | {r.row_id} | {r.model} {r.weight_precision} | {r.num_gpus}× {r.gpu} | {r.isl}/{r.osl} | "
                 f"{s_.scenario['load']} | {r.metric} | {r.value:,.4g} | {s_.predicted:,.4g} | {pct(s_.error)} | {likely_causes(s_)} |")
    L.append("")

    L += ["## Refused rows", ""]
    if not refused:
        L += ["None: every published configuration in the corpus was estimated.", ""]
    else:
        L += [f"{len(refused)} rows the model refused (a configuration that ran in public but that the model says "
              "cannot run is itself a miss):", "",
              "| row | model | GPU | parallel | ISL/OSL | reason |", "|---|---|---|---|---|---|"]
        for s in refused:
            r = s.row
            L.append(f"| {r.row_id} | {r.model} {r.weight_precision} | {r.num_gpus}× {r.gpu} | TP{r.tp} PP{r.pp} | "
                     f"{r.isl}/{r.osl} | {s.refused.replace('|', '/')} |")
        L.append("")
    return "\n".join(L)


def render_scores(scored: list[Scored]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["row_id", "source_id", "engine", "gpu", "model", "metric", "measured", "predicted", "error",
                "speed_bias", "scenario_load", "flags", "refused", "fitted"])
    for s in scored:
        r = s.row
        w.writerow([r.row_id, r.source_id, r.engine, r.gpu, r.model, r.metric, f"{r.value:.6g}",
                    "" if s.predicted is None else f"{s.predicted:.6g}", "" if s.error is None else f"{s.error:.4f}",
                    "" if s.speed_bias is None else f"{s.speed_bias:.4f}", s.scenario["load"], "; ".join(s.flags),
                    s.refused or "", "yes" if s.fitted else ""])
    return buf.getvalue()


README_START = "<!-- public-table: written by scripts/score_public.py -->"
README_END = "<!-- /public-table -->"
ENGINE_NAMES = {"trtllm": "TensorRT-LLM", "sglang": "SGLang", "vllm": "vLLM", "nim": "NIM"}


def readme_table(scored: list[Scored], before: list[Scored]) -> str:
    """The README's held-out public summary: per engine, and TensorRT-LLM before and after its calibrations."""
    plan = load_plan()
    fitted_models = {m for spec in plan for m in spec.train_models}
    held = [s for s in scored if s.error is not None and not s.fitted]
    ids = {s.row.row_id for s in held}
    groups = [("TensorRT-LLM, before: vLLM profile, vLLM's H200 calibration",
               [b for b in before if b.error is not None and b.row.row_id in ids]),
              ("TensorRT-LLM, its profile and public calibrations", [s for s in held if s.row.engine == "trtllm"]),
              ("… of models no fit saw", [s for s in held if s.row.engine == "trtllm" and s.row.model not in fitted_models]),
              ("… of fitted models, from sources no fit saw",
               [s for s in held if s.row.engine == "trtllm" and s.row.model in fitted_models])]
    for eng in ("sglang", "vllm", "nim"):
        public = {(spec.gpu, spec.precision) for spec in plan if spec.engine == eng}  # its public calibrations
        if public:
            names = ", ".join(f"{g} {pr.upper()}" for g, pr in sorted(public))
            groups.append((f"{ENGINE_NAMES[eng]} on {names}, its public calibration",
                           [s for s in held if s.row.engine == eng and (s.row.gpu, s.row.weight_precision) in public]))
        groups.append((f"{ENGINE_NAMES[eng]} (calibrated on H200 here; other GPUs extrapolated)" if eng != "nim" else
                       "NIM (backend not stated: vLLM profile)",
                       [s for s in held if s.row.engine == eng and (s.row.gpu, s.row.weight_precision) not in public]))
    groups.append(("every held-out row", held))
    lines = ["| held-out public rows | points | median abs error | within ±25 % | median speed bias |",
             "|---|---|---|---|---|"]
    for name, g in groups:
        if g:
            n, med, _, bias = summarize(g)
            within = sum(abs(x.error) <= 0.25 for x in g) / n
            lines.append(f"| {name} | {n} | {apct(med)} | {within * 100:.0f} % | {pct(bias)} |")
    return "\n".join(lines)


ACCURACY_START = "<!-- public-slices: written by scripts/score_public.py -->"
ACCURACY_END = "<!-- /public-slices -->"


def accuracy_section(scored: list[Scored], before: list[Scored]) -> str:
    """docs/accuracy.md's public-corpus block: held-out rows per engine × GPU × regime, before (TensorRT-LLM rows
    scored with the vLLM profile and vLLM's H200 calibration) and now."""
    prior = {b.row.row_id: b for b in before if b.error is not None}
    held = [s for s in scored if s.error is not None and not s.fitted]
    groups: dict[str, list[Scored]] = {}
    for s in held:
        groups.setdefault(f"{s.row.engine} × {s.row.gpu} × {regime(s.row)}{s.domain_note}", []).append(s)
    L = [ACCURACY_START, "## Public corpus per engine × GPU × regime, before and after", "",
         f"Held-out rows of data/public/rows.jsonl ({len(held)}; [public-corpus.md](public-corpus.md) has every slice, "
         "the sources and the largest misses). **Before**: TensorRT-LLM rows scored with the vLLM profile and vLLM's H200 "
         "calibration (the mapping before TensorRT-LLM had its own profile and public calibrations); every other row "
         "as now. **Now**: the shipped model. An *unpriced* slice holds rows whose configuration the engine object "
         "says the model does not price (the card calls them an unsupported feature).", "",
         "| engine × GPU × regime | points | median abs error before | now | median speed bias now |",
         "|---|---|---|---|---|"]
    for name in sorted(groups, key=lambda g: (-len(groups[g]), g)):
        now = groups[name]
        was = [prior.get(s.row.row_id, s) for s in now]
        L.append(f"| {name} | {len(now)} | {apct(summarize(was)[1])} | {apct(summarize(now)[1])} | "
                 f"{pct(summarize(now)[3])} |")
    return "\n".join(L + ["", ACCURACY_END])


def with_accuracy_section(doc: str, section: str) -> str:
    """docs/accuracy.md with its public-corpus block replaced (appended at the end when absent; accuracy_report.py
    puts the blocks it keeps in its own order)."""
    if ACCURACY_START in doc and ACCURACY_END in doc:
        return doc[:doc.index(ACCURACY_START)] + section + doc[doc.index(ACCURACY_END) + len(ACCURACY_END):]
    return doc.rstrip("\n") + "\n\n" + section + "\n"


def generate_all(rows_path: Path = ROWS_PATH) -> tuple[str, str, str, str]:
    """(docs/public-corpus.md, data/public/scores.csv, the README's public table, docs/accuracy.md's public block)."""
    rows = load_rows(rows_path)
    scored = score(rows)
    before = score([r for r in rows if r.engine == "trtllm"], engines=("vllm", "sglang"))
    return render_doc(rows, scored, before), render_scores(scored), readme_table(scored, before), accuracy_section(scored, before)


def generate(rows_path: Path = ROWS_PATH) -> tuple[str, str]:
    doc, scores, _, _ = generate_all(rows_path)
    return doc, scores


def with_readme_table(readme: str, table: str) -> str:
    start, end = readme.index(README_START) + len(README_START), readme.index(README_END)
    return readme[:start] + "\n" + table + "\n" + readme[end:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--doc", type=Path, default=DOC_PATH)
    ap.add_argument("--scores", type=Path, default=SCORES_PATH)
    args = ap.parse_args(argv)
    doc, scores, table, section = generate_all()
    args.doc.write_text(doc)
    args.scores.write_text(scores)
    readme = REPO / "README.md"
    readme.write_text(with_readme_table(readme.read_text(), table))
    accuracy = REPO / "docs" / "accuracy.md"
    accuracy.write_text(with_accuracy_section(accuracy.read_text(), section))
    print(f"wrote {args.doc}, {args.scores}, the public table in {readme} and the public block of {accuracy}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
