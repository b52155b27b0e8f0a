"""Check the shipped disaggregated model (capacity/disagg.py) against published disaggregated measurements
(data/public/disagg_rows.jsonl, built by `python -m validate.public.disagg`). Nothing is fitted: every prediction
is the shipped model's, with the shipped calibrations.

For every row: map it to an xPyD layout the model can express (x prefill instances of TP_p, y decode instances of
TP_d, expert parallel inside an instance where EP = TP) and predict it, or refuse it with the reason (never
dropped). Writes the generated sections of docs/disagg.md (`<!-- disagg-check: ... -->`) and docs/accuracy.md
(`<!-- disagg-public: ... -->`, appended at the end when absent); `--check` compares instead of writing;
`--rows` prints every row's outcome.

    .venv/bin/python scripts/score_disagg.py [--check] [--rows]

The layout evaluation is `capacity.disagg`'s own: for x = y = 1 it is `one_p_one_d` (a test holds them equal);
for other counts the same terms with each prefill instance at R/x and each decode instance at R/y (round-robin
prompts, decode by load, as `search` prices a layout), and a closed loop of C clients solved for C = R·e2e(R) by
the same bisection. The link is `search`'s rule: the GPU's scale-up link while the whole layout fits one scale-up
domain, else InfiniBand NDR; the KV transfer is streamed layer by layer (the model's default).

Mapping choices (each flagged on its row; the engine and KV rules are validate/public/scenario.py's, the one
mapping of the aggregated corpus):
- TensorRT-LLM rows use the TensorRT-LLM profile and its shipped calibration; the Dynamo recipes' own engine limits
  were not read, so InferenceX's single-node TensorRT-LLM launch settings for the same GPU (CUDA graphs, KV
  fraction, token budget: validate.public.scenario.INFERENCEX_TRTLLM) stand in where that GPU has them;
- an unstated KV precision is FP8 for FP8/FP4 checkpoints, else BF16;
- lengths drawn from [0.8 L, L] are priced at their mean 0.9 L;
- a median is compared with the model's mean.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from capacity.disagg import (DisaggPoint, Link, _capacity_rps, _pool, decode_curve, resolve_link,  # noqa: E402
                             xpyd_point)
from capacity.errors import CapacityError  # noqa: E402
from capacity.estimate import Scenario  # noqa: E402
from capacity.hardware import load_gpu  # noqa: E402
from validate.public.disagg import ROWS, THROUGHPUTS, DisaggRow, load_rows  # noqa: E402
from validate.public.scenario import (INFERENCEX_TRTLLM, MODELLED_ENGINES, inferencex_trtllm_limits,  # noqa: E402
                                      unstated_kv)

DISAGG_DOC = REPO / "docs" / "disagg.md"
ACCURACY_DOC = REPO / "docs" / "accuracy.md"
CHECK_START, CHECK_END = "<!-- disagg-check: written by scripts/score_disagg.py -->\n", "<!-- /disagg-check -->"
PUBLIC_START, PUBLIC_END = "<!-- disagg-public: written by scripts/score_disagg.py -->\n", "<!-- /disagg-public -->"
TARGET = 0.20  # issue 21: output tokens/s per GPU within 20 % (median over the published points)
METRIC_LABEL = {"output_tokens_per_s_per_gpu": "output tok/s per GPU", "ttft_s": "TTFT", "tpot_s": "TPOT",
                "itl_s": "ITL", "prefill_input_tokens_per_s_per_gpu": "prefill tok/s per GPU (alone)",
                "decode_output_tokens_per_s_per_gpu": "decode tok/s per GPU (alone)"}


# --- the layout evaluation ---------------------------------------------------------------------------------------


def layout_link(gpu_id: str, num_gpus: int) -> Link:
    """search's rule: the GPU's own scale-up link while the layout fits one scale-up domain, else the network."""
    gpu = load_gpu(gpu_id)
    node, net = resolve_link("auto", gpu)
    return node if num_gpus <= gpu.scale_up_domain_size else net


# --- mapping a row ---------------------------------------------------------------------------------------------


def refusal(r: DisaggRow, measured_e2e_s: float | None = None) -> str | None:
    """Why the model cannot express this row's layout or load (None: it can). The first reason that applies.
    `measured_e2e_s`: the run's own TTFT + (OSL − 1)·ITL, where its rows give them."""
    if r.speculative == "mtp":
        return ("speculative decoding (MTP): its acceptance rate is not published, and capacity/disagg.py's pools "
                "take none")
    if r.speculative == "simulated-mtp":
        return "simulated MTP (batch doubled, attention padded with dummy kernels): not a run of a real layout"
    pools = [p for p in (r.prefill, r.decode) if p is not None]
    if any(p.instances == 0 for p in pools):
        return ("legacy InferenceX object: no worker counts (TP = the pool's GPUs) and per-GPU throughputs that fail "
                "the multinode divisor identity")
    if any(p.dp_attention for p in pools):
        return ("attention data parallel: the model's pools are TP (+EP) instances only; under TP, MLA's single "
                "latent KV head is replicated on every GPU, so the KV room and per-GPU attention work would be wrong")
    gpu = load_gpu(r.gpu)
    for name, p in (("prefill", r.prefill), ("decode", r.decode)):
        if p is None:
            continue
        if p.gpus_per_instance != p.tp:
            return (f"{name} instance of {p.gpus_per_instance:g} GPUs with TP {p.tp} and no attention DP: the "
                    "published topology does not say how the other GPUs are used")
        if p.tp > gpu.scale_up_domain_size:
            return (f"{name} instance of TP {p.tp} spans more than one {gpu.scale_up_domain_size}-GPU scale-up domain "
                    "(wide EP / TP across nodes): the model prices collectives on the scale-up link only")
        if p.ep not in (1, p.tp):
            return f"{name} expert parallel {p.ep} ≠ TP {p.tp}: the model has EP = TP inside an instance or none"
    if r.load == "rate" and r.num_requests and measured_e2e_s and r.num_requests / r.rate < measured_e2e_s:
        return (f"a transient, not a steady state: {r.num_requests} requests at {r.rate:g}/s arrive within "
                f"{r.num_requests / r.rate:.0f} s, less than one request's measured end-to-end time "
                f"({measured_e2e_s:.0f} s from the run's TTFT and ITL); capacity/disagg.py prices a steady state")
    return None


def measured_e2e(rows: list[DisaggRow]) -> dict[tuple, float]:
    """setup key → TTFT + (OSL − 1)·(TPOT or ITL) as the run's own rows publish them."""
    by: dict[tuple, dict[str, DisaggRow]] = {}
    for r in rows:
        by.setdefault(setup_key(r), {})[r.metric] = r
    out = {}
    for key, ms in by.items():
        step = ms.get("tpot_s") or ms.get("itl_s")
        if "ttft_s" in ms and step is not None:
            out[key] = ms["ttft_s"].value + (step.osl - 1) * step.value
    return out


def scenario_for(r: DisaggRow, kv_unstated: dict[str, str] | None = None) -> tuple[dict, list[str]]:
    flags: list[str] = []
    engine = r.engine if r.engine in MODELLED_ENGINES else "vllm"
    if engine != r.engine:
        flags.append(f"{r.engine} priced with the vLLM profile")
    kv = r.kv_precision
    if kv == "unstated":
        kv = (kv_unstated or {}).get(r.engine) or unstated_kv(r.weight_precision)
        flags.append(f"KV {kv} (unstated)")
    isl, osl = r.isl, r.osl
    if r.lengths == "distributed" and r.length_range_ratio:
        f = (1 + r.length_range_ratio) / 2
        isl, osl = round(r.isl * f), round(r.osl * f)
        flags.append("lengths at their mean")
    pool = r.decode or r.prefill
    s = dict(model=r.model, gpu=r.gpu, num_gpus=pool.tp, tp=pool.tp,
             expert_parallel=any(p is not None and p.ep > 1 for p in (r.prefill, r.decode)),
             precision=r.weight_precision, kv_precision=kv, engine=engine, isl=isl, osl=osl)
    if engine == "trtllm":
        if r.source_kind == "inferencex" and r.gpu in INFERENCEX_TRTLLM:
            s.update(inferencex_trtllm_limits(r.gpu, r.concurrency, isl))
            flags.append("InferenceX's single-node TensorRT-LLM launch settings stand in for the Dynamo recipe's")
        else:
            flags.append("TensorRT-LLM profile defaults (recipe limits not read)")
    if r.statistic == "median":
        flags.append("median vs the model's mean")
    return s, flags


@dataclass
class Outcome:
    row: DisaggRow
    flags: list[str] = field(default_factory=list)
    predicted: float | None = None
    refused: str | None = None
    saturated: bool = False
    link: str = ""
    point: DisaggPoint | None = None
    decode_batch_limit: float | None = None

    @property
    def error(self) -> float | None:
        return None if self.predicted is None else self.predicted / self.row.value - 1


def _predict(r: DisaggRow, s: dict) -> tuple[dict[str, float], bool, str, DisaggPoint | None]:
    """The model's value of every metric this row's setup can publish, whether it saturates, the link and the
    layout's point (end-to-end rows)."""
    sc = Scenario(**s)
    if r.load in ("prefill-alone", "decode-alone"):
        p = r.prefill if r.load == "prefill-alone" else r.decode
        if r.load == "prefill-alone":
            pool = _pool(sc, p.tp, osl=1)
            per_gpu = _capacity_rps(pool, 1) * sc.isl / p.tp
            return {"prefill_input_tokens_per_s_per_gpu": per_gpu}, False, "", None
        pool = _pool(sc, p.tp)
        curve = decode_curve(pool.plan, pool.cal, pool.scenario)
        want = (r.batch_per_gpu or 1) * p.tp
        i = min(int(want), len(curve.batch)) - 1
        return ({"decode_output_tokens_per_s_per_gpu": float(curve.batch[i] / curve.step_s[i]) / p.tp},
                want > curve.batch[-1], "", None)
    link = layout_link(r.gpu, r.num_gpus)
    kind, value = ("concurrency", r.concurrency) if r.load == "concurrency" else ("rate", r.rate)
    pt = xpyd_point(sc, kind, value, link, r.prefill.instances, r.decode.instances, r.prefill.tp, r.decode.tp,
                    prefill_ep=r.prefill.ep > 1, decode_ep=r.decode.ep > 1)
    out = {"output_tokens_per_s_per_gpu": pt.requests_per_s * sc.osl / r.num_gpus, "ttft_s": pt.ttft_s,
           "tpot_s": pt.itl_s, "itl_s": pt.itl_s}
    dp = _pool(sc, r.decode.tp, expert_parallel=r.decode.ep > 1)
    out["decode_batch_limit"] = float(decode_curve(dp.plan, dp.cal, dp.scenario).batch[-1])
    return out, pt.saturated, link.id, pt


def setup_key(r: DisaggRow) -> tuple:
    """Rows that share this key are one published run (their metrics differ)."""
    return (r.source_id, r.published, r.engine_version, r.gpu, r.weight_precision, r.speculative, r.prefill, r.decode,
            r.isl, r.osl, r.load, r.concurrency, r.rate, r.batch_per_gpu)


def score(rows: list[DisaggRow], kv_unstated: dict[str, str] | None = None) -> list[Outcome]:
    """Every row scored or refused. `kv_unstated`: engine → KV precision for rows that do not state it (default:
    scripts/score_public.py's rule), for the sensitivity line of the report."""
    cache: dict[tuple, tuple] = {}
    e2e = measured_e2e(rows)
    out = []
    for r in rows:
        why = refusal(r, e2e.get(setup_key(r)))
        if why:
            out.append(Outcome(r, refused=why))
            continue
        s, flags = scenario_for(r, kv_unstated)
        key = (setup_key(r), tuple(sorted(s.items())))
        if key not in cache:
            try:
                cache[key] = _predict(r, s)
            except CapacityError as exc:
                cache[key] = f"the model refuses the scenario: {type(exc).__name__}: {exc}"
        res = cache[key]
        if isinstance(res, str):
            out.append(Outcome(r, flags, refused=res))
            continue
        values, saturated, link, pt = res
        o = Outcome(r, flags + (["model saturated"] if saturated else []), predicted=values[r.metric],
                    saturated=saturated, link=link, point=pt, decode_batch_limit=values.get("decode_batch_limit"))
        out.append(o)
    return out


# --- report ----------------------------------------------------------------------------------------------------


def pct(x: float) -> str:
    return f"{x * 100:+.0f} %"


def apct(x: float) -> str:
    return f"{abs(x) * 100:.0f} %"


def fmt(metric: str, v: float) -> str:
    if metric in THROUGHPUTS:
        return f"{v:,.0f}" if v >= 100 else f"{v:,.1f}"
    return f"{v * 1e3:,.0f} ms" if v >= 0.1 else f"{v * 1e3:,.1f} ms"


def layout_name(r: DisaggRow) -> str:
    def one(tag: str, p) -> str:
        if p is None:
            return f"({tag} pool not tested)"
        par = f"TP{p.tp}" + (f"/EP{p.ep}" if p.ep > 1 else "") + (" DP-attn" if p.dp_attention else "")
        return f"{p.instances}{tag}({par})"
    return f"{one('P', r.prefill)} {one('D', r.decode)}"


def id_ranges(ids: list[str]) -> str:
    """inferencex-disagg:0003, :0004, :0005 → inferencex-disagg:0003–0005 (ids of one source, sorted)."""
    by_source: dict[str, list[int]] = {}
    for i in ids:
        src, _, n = i.rpartition(":")
        by_source.setdefault(src, []).append(int(n))
    parts = []
    for src, nums in by_source.items():
        nums.sort()
        spans, start, prev = [], nums[0], nums[0]
        for n in nums[1:] + [None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            spans.append(f"{start:04d}" if start == prev else f"{start:04d}–{prev:04d}")
            if n is not None:
                start = prev = n
        parts.append(f"{src}: {', '.join(spans)}")
    return "; ".join(parts)


def summary(outcomes: list[Outcome]) -> dict[str, tuple[int, float, float]]:
    """metric → (points, median |error|, median signed error) over the scored rows."""
    res = {}
    for metric in METRIC_LABEL:
        errs = [o.error for o in outcomes if o.error is not None and o.row.metric == metric]
        if errs:
            res[metric] = (len(errs), statistics.median(abs(e) for e in errs), statistics.median(errs))
    return res


def refusal_groups(outcomes: list[Outcome]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for o in outcomes:
        if o.refused:
            groups.setdefault(o.refused, []).append(o.row.row_id)
    return groups


def point_table(outcomes: list[Outcome]) -> list[str]:
    """One line per scored published run: its measured and predicted metrics and their errors."""
    runs: dict[tuple, dict[str, Outcome]] = {}
    for o in outcomes:
        if o.predicted is not None:
            runs.setdefault(setup_key(o.row), {})[o.row.metric] = o
    lines = ["| source | GPU, engine, version | layout (GPUs) | ISL/OSL | load | link | output tok/s per GPU: "
             "measured → model (error) | TTFT | TPOT or ITL | model's TTFT = prefill + transfer + first decode (ms) "
             "| model's decode batch of its limit | flags |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for key in sorted(runs, key=lambda k: (k[0], k[3], str(k[2]), k[8], k[9], layout_name(next(iter(runs[k].values())).row),
                                          k[11] or 0)):
        ms = runs[key]
        r = next(iter(ms.values())).row
        cells = []
        for metric in (("output_tokens_per_s_per_gpu",), ("ttft_s",), ("tpot_s", "itl_s")):
            o = next((ms[m] for m in metric if m in ms), None)
            cells.append("–" if o is None else f"{fmt(o.row.metric, o.row.value)} → {fmt(o.row.metric, o.predicted)} "
                         f"({pct(o.error)})")
        load = f"C={r.concurrency}" if r.load == "concurrency" else f"{r.rate:g} req/s"
        flags = sorted({f for o in ms.values() for f in o.flags})
        version = r.engine_version.split("/")[-1]
        pt = next(iter(ms.values())).point
        parts = (f"{pt.prefill_ttft_s * 1e3:,.0f} + {pt.kv_transfer_s * 1e3:.2f} + "
                 f"{(pt.ttft_s - pt.prefill_ttft_s - pt.kv_transfer_s) * 1e3:,.1f}") if pt else "–"
        lim = next(iter(ms.values())).decode_batch_limit
        batch = f"{pt.decode_batch:,.0f} of {lim:,.0f}" if pt and lim else "–"
        lines.append(f"| {r.source_id} | {r.gpu}, {r.framework_published}, `{version}` | {layout_name(r)} "
                     f"({r.num_gpus}) | {r.isl}/{r.osl} | {load} | {next(iter(ms.values())).link} | {cells[0]} | "
                     f"{cells[1]} | {cells[2]} | {parts} | {batch} | {'; '.join(flags)} |")
    return lines


def aggregated_inferencex() -> dict[str, tuple[int, float]]:
    """metric → (points, median signed error) of the public corpus's aggregated InferenceX DeepSeek-R1 rows,
    scored now by scripts/score_public.py's own rules: what the same model makes of the same engines and GPUs
    without disaggregation."""
    mod = sys.modules.get("score_public")
    if mod is None:
        spec = importlib.util.spec_from_file_location("score_public", REPO / "scripts" / "score_public.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["score_public"] = mod  # its dataclasses look their module up there
        spec.loader.exec_module(mod)
    from validate.public.build import load_rows as load_public
    rows = [r for r in load_public() if r.source_id == "inferencex-api-snapshot" and r.model == "deepseek-ai/DeepSeek-R1"]
    errs: dict[str, list[float]] = {}
    for s in mod.score(rows):
        if s.error is not None:
            errs.setdefault(s.row.metric, []).append(s.error)
    return {m: (len(v), statistics.median(v)) for m, v in errs.items()}


@dataclass
class Context:
    """What the report sets beside the scores: the aggregated rows of the same source, the KV-precision
    sensitivity of the SGLang rows, and the sizes of the model's TTFT parts."""
    aggregated: dict[str, tuple[int, float]]
    sglang_bf16: dict[str, tuple[int, float, float]]
    sglang_default: dict[str, tuple[int, float, float]]


def context(rows: list[DisaggRow], outcomes: list[Outcome]) -> Context:
    sg = [r for r in rows if r.engine == "sglang" and r.kv_precision == "unstated"]
    ids = {r.row_id for r in sg}
    return Context(aggregated_inferencex(), summary(score(sg, {"sglang": "bf16"})),
                   summary([o for o in outcomes if o.row.row_id in ids]))


def check_section(rows: list[DisaggRow], outcomes: list[Outcome], ctx: Context) -> str:
    scored = [o for o in outcomes if o.predicted is not None]
    refused = [o for o in outcomes if o.refused]
    summ = summary(outcomes)
    sources = sorted({r.source_id for r in rows})
    lines = [f"{len(rows):,} published rows from {len(sources)} sources (`data/public/disagg_rows.jsonl`, how they "
             "were read: `data/public/README.md`): "
             f"**{len(scored):,} scored, {len(refused):,} refused** with the reason below; none dropped. "
             "Error = model ÷ measured − 1; nothing was fitted to these points.", "",
             "| metric | scored points | median abs error | median signed error |", "|---|---|---|---|"]
    for metric, (n, med, signed) in summ.items():
        lines.append(f"| {METRIC_LABEL[metric]} | {n} | {apct(med)} | {pct(signed)} |")
    tput = summ.get("output_tokens_per_s_per_gpu")
    if tput:
        verdict = "met" if tput[1] <= TARGET else "**not met**"
        lines += ["", f"Issue 21's target (output tokens/s per GPU within {TARGET * 100:.0f} % median on published "
                  f"disaggregated points): {verdict} — median abs error {apct(tput[1])} over {tput[0]} points."]
    lines += ["", "By source:", "", "| source | rows | scored | refused | median abs error: output tok/s per GPU | "
              "TTFT | TPOT / ITL |", "|---|---|---|---|---|---|---|"]
    for src in sources:
        mine = [o for o in outcomes if o.row.source_id == src]
        s = summary(mine)

        def cell(*metrics):
            for m in metrics:
                if m in s:
                    return f"{apct(s[m][1])} ({s[m][0]})"
            return "–"
        lines.append(f"| {src} | {len(mine)} | {sum(o.predicted is not None for o in mine)} | "
                     f"{sum(bool(o.refused) for o in mine)} | {cell('output_tokens_per_s_per_gpu')} | {cell('ttft_s')} | "
                     f"{cell('tpot_s', 'itl_s')} |")
    agg = ctx.aggregated
    if agg:
        lines += ["", "The same model on the same source without disaggregation — the public corpus's aggregated "
                  "InferenceX DeepSeek-R1 rows, scored now by `scripts/score_public.py` (median signed error): "
                  + ", ".join(f"{METRIC_LABEL.get(m, m)} {pct(v[1])} ({v[0]})" for m, v in sorted(agg.items())
                              if m in METRIC_LABEL) + "."]
    b, d = ctx.sglang_bf16, ctx.sglang_default
    if b and d:
        lines += ["", "KV precision of the SGLang rows (unstated; the SGLang H200 recipe read sets no "
                  "`--kv-cache-dtype`, whose default takes the model's BF16): median signed error with the FP8 rule "
                  "→ with BF16 KV: " + ", ".join(f"{METRIC_LABEL[m]} {pct(d[m][2])} → {pct(b[m][2])}"
                                                  for m in METRIC_LABEL if m in b and m in d) + "."]
    pts = [o.point for o in outcomes if o.point is not None]
    low = [o for o in outcomes if o.point is not None and o.row.metric == "ttft_s" and (o.row.concurrency or 99) <= 4]
    if pts:
        share = max(o.point.decode_batch / o.decode_batch_limit for o in outcomes
                    if o.point is not None and o.decode_batch_limit)
        lines += ["", f"The model's exposed KV transfer is at most {max(p.kv_transfer_s for p in pts) * 1e3:.2f} ms on "
                  "any scored run (streamed layer by layer; the link's latency included); its decode batch reaches "
                  f"at most {share * 100:.0f} % of the decode instance's limit (KV room for ISL + OSL tokens, capped by the "
                  "engine's sequence limit)."
                  + (f" At C ≤ 4, where queues are short, measured TTFT exceeds the model's by "
                     f"{min(o.row.value - o.predicted for o in low) * 1e3:,.0f}–"
                     f"{max(o.row.value - o.predicted for o in low) * 1e3:,.0f} ms "
                     f"(median {statistics.median(o.row.value - o.predicted for o in low) * 1e3:,.0f} ms over "
                     f"{len(low)} runs)." if low else "")]
    lines += ["", "Every scored run (one line per published point; its three metrics):", ""]
    lines += point_table(outcomes)
    lines += ["", "Refused rows, by reason (every row id listed):", "", "| reason | rows | row ids |", "|---|---|---|"]
    for why, ids in sorted(refusal_groups(outcomes).items(), key=lambda kv: -len(kv[1])):
        lines.append(f"| {why} | {len(ids)} | {id_ranges(ids)} |")
    return "\n".join(lines) + "\n"


def public_section(rows: list[DisaggRow], outcomes: list[Outcome]) -> str:
    summ = summary(outcomes)
    lines = ["## Disaggregated serving against published measurements", "",
             "Generated by `python scripts/score_disagg.py` (the per-point table, the refusals and what the points "
             "check: [disagg.md](disagg.md)). The shipped model, nothing fitted; error = model ÷ measured − 1.", "",
             "| metric | scored points | median abs error | median signed error |", "|---|---|---|---|"]
    for metric, (n, med, signed) in summ.items():
        lines.append(f"| {METRIC_LABEL[metric]} | {n} | {apct(med)} | {pct(signed)} |")
    n_scored = sum(o.predicted is not None for o in outcomes)
    lines += ["", f"{len(rows):,} rows: {n_scored:,} scored, {len(rows) - n_scored:,} refused (speculative decoding, "
              "attention data parallel, instances spanning nodes, legacy objects, and the model's own refusals)."]
    return "\n".join(lines) + "\n"


def replace_block(text: str, start: str, end: str, body: str, append: bool = False) -> str:
    if start not in text:
        if not append:
            raise ValueError(f"marker {start.strip()} missing")
        return text.rstrip("\n") + "\n\n" + start + body + end + "\n"
    i, j = text.index(start) + len(start), text.index(end)
    return text[:i] + body + text[j:]


def render(disagg_text: str, accuracy_text: str, rows: list[DisaggRow], outcomes: list[Outcome],
           ctx: Context) -> tuple[str, str]:
    return (replace_block(disagg_text, CHECK_START, CHECK_END, check_section(rows, outcomes, ctx)),
            replace_block(accuracy_text, PUBLIC_START, PUBLIC_END, public_section(rows, outcomes), append=True))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if a generated section differs from the code's")
    ap.add_argument("--rows", action="store_true", help="print every row's outcome")
    args = ap.parse_args(argv)
    rows = load_rows(ROWS)
    outcomes = score(rows)
    if args.rows:
        for o in outcomes:
            r = o.row
            res = f"REFUSED {o.refused}" if o.refused else (f"{fmt(r.metric, r.value)} → {fmt(r.metric, o.predicted)} "
                                                             f"{pct(o.error)} [{'; '.join(o.flags)}]")
            print(f"{r.row_id} {r.gpu} {r.framework_published} {layout_name(r)} {r.isl}/{r.osl} "
                  f"C={r.concurrency} {r.metric}: {res}")
    d_old, a_old = DISAGG_DOC.read_text(), ACCURACY_DOC.read_text()
    d_new, a_new = render(d_old, a_old, rows, outcomes, context(rows, outcomes))
    if args.check:
        stale = [p.name for p, old, new in ((DISAGG_DOC, d_old, d_new), (ACCURACY_DOC, a_old, a_new)) if old != new]
        if stale:
            print(f"generated disaggregated-check sections differ in {', '.join(stale)}: run python scripts/score_disagg.py")
            return 1
        return 0
    DISAGG_DOC.write_text(d_new)
    ACCURACY_DOC.write_text(a_new)
    summ = summary(outcomes)
    print(f"{len(rows)} rows: {sum(o.predicted is not None for o in outcomes)} scored; "
          + ", ".join(f"{METRIC_LABEL[m]} median |err| {apct(v[1])} (n={v[0]})" for m, v in summ.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
