"""Build the accuracy card's data (capacity/calibrations/card.json) and its page (docs/card.md) from committed data only.

    .venv/bin/python scripts/build_card.py            # write both
    .venv/bin/python scripts/build_card.py --check    # exit 1 when either differs from what the data gives

What each pool of slices is scored on (declared again in card.json `pools.*.scored_on`):
- **measured**: the committed measurements, held-out points only, with the shipped calibrations (H200, and the H100
  sittings of data/measurements/h100/vllm-0.26.0, every point held out: no calibration is fitted on an H100). vLLM 0.26.0
  (data/measurements/h200/vllm-0.26.0): every point that scripts/accuracy_report.py does *not* fit on, i.e. the
  HOLDOUT shapes (512x512, 2048x256) of its FIT_SITTINGS / FIT_RUNS and every point of the other runs (later
  sittings, other models, TP > 1); the split is accuracy_report's own (`fitted_run`, HOLDOUT, single-GPU fitted
  models), recomputed here on the calibrated mode only. SGLang 0.5.17 (data/measurements/h200/sglang-0.5.17): the
  HOLDOUT shapes of the sittings its front-end was fitted on (sitting 5) and every point of the others (sitting 14:
  Qwen3-30B-A3B, a 16k-token shape). The points excluded in excluded.json stay out.
- **public**: every held-out row of data/public/rows.jsonl that the current model estimates, scored exactly as
  scripts/score_public.py scores it (its `score`, same Scenario mapping). Rows a public calibration was fitted on
  (data/public/calibration-plan.toml) are left out. The
  row's published engine names the slice (TensorRT-LLM and NIM rows are scored with the profile score_public maps
  them to; card.json `public_scoring` counts it). e2e-latency rows are not used (the card has no e2e metric).

Metrics: TTFT, ITL (TPOT rows count as ITL), throughput (requests/s, output or total tokens/s: one relative error).
Error = predicted ÷ measured − 1; the interval is [predicted × q05, predicted × q95] of measured ÷ predicted for a
point of a group the slice has not seen (`new_group_quantiles`: a random-effects prediction, the new group's offset
a Student t around the seen groups' mean with their spread × sqrt(1 + 1/G), plus one of the seen within-group
deviations; a slice of one group takes its pool's spread between groups, and a metric of under three groups in
its pool the spread of every metric's groups). A group is a public source or a measured
sitting: an answer about a new configuration carries an offset of its own, which quantiles pooled over the seen
points understate. This form replaced, on 2026-12-02, one that drew the offset from the seen groups' medians alone
(leave-one-group-out coverage 79 % measured, 67 % public); it was chosen among three forms by that same check, so
the coverage reported is not independent of the choice. A slice with fewer than MIN_POINTS points for
a metric is widened to its parent (capacity/card.py `slice_chain`).

card.json holds the current model's errors: rerun this script (and commit card.json and docs/card.md) after any
change to the model, a calibration, the measurements or the corpus; tests/test_card.py fails until then.

Coverage check (card.json `coverage_check`): the intervals are rebuilt without one group at a time — one public
source (leave-one-source-out), one measured sitting per engine (leave-one-sitting-out) — and the left-out points are
checked against the interval of their slice; the share inside is reported as it comes.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
from scipy.stats import t as student_t

REPO = Path(__file__).resolve().parents[1]
for p in (str(REPO), str(REPO / "scripts")):
    if p not in sys.path:
        sys.path.insert(0, p)

import accuracy_report as ar  # noqa: E402
import score_public as sp  # noqa: E402
from capacity.model.architecture import load_model  # noqa: E402
from capacity.calibration import shipped_calibrations  # noqa: E402
from capacity.card import (KNOBS, METRIC_LABELS, METRICS, gpu_class, lookup, model_class, regime, slice_chain,  # noqa: E402
                           spec_method, unpriced_name)
from capacity.estimate import estimate  # noqa: E402
from capacity.load import parse_load  # noqa: E402
from validate.compare import compare_dirs, load_run, point_scenario  # noqa: E402
from validate.public.build import load_rows  # noqa: E402
from validate.public.schema import THROUGHPUT_METRICS  # noqa: E402

import capacity.card as _card  # noqa: E402
CARD_PATH = REPO / "capacity" / "calibrations" / "card.json"
DOC_PATH = REPO / "docs" / "card.md"
MIN_POINTS = 10
MEASURED_METRICS = {"ttft_s": "ttft_s", "itl_s": "itl_s", "requests_per_s": "throughput"}
PUBLIC_METRICS = {**{m: "throughput" for m in THROUGHPUT_METRICS}, "ttft_s": "ttft_s", "itl_s": "itl_s", "tpot_s": "itl_s"}
SCORED_ON = {
    "measured": "held-out points of the committed H200 and H100 measurements (vLLM 0.26.0: shapes 512x512 and 2048x256 "
                "of the fitted sittings, every point of never-fitted runs: later sittings, Gemma 3, TP=2; every point of "
                "the H100 sittings (29, 31-33), predicted with the H200 calibration; SGLang 0.5.17: "
                "shapes 512x512 and 2048x256 of sitting 5, every point of sitting 14), predicted with the shipped calibrations; the training split of "
                "scripts/accuracy_report.py is never used. Not fitted is not unseen: the model's form changed after "
                "sittings 4 to 6 and the TP=2 points were seen (docs/accuracy.md)",
    "public": "rows of data/public/rows.jsonl scored with the current model as scripts/score_public.py scores them "
              "(no calibration was fitted on them)",
}


def r4(x: float) -> float:
    return float(f"{x:.4g}") if x else 0.0


# ---------------------------------------------------------------- points
def _point(pool, engine, gpu, mclass, reg, metric, measured, predicted, group) -> dict | None:
    if not (measured and predicted and math.isfinite(measured) and math.isfinite(predicted)) or measured <= 0 or predicted <= 0:
        return None
    return {"pool": pool, "engine": engine, "gpu_class": gpu_class(gpu), "model_class": mclass, "regime": reg,
            "metric": metric, "error": predicted / measured - 1, "log_ratio": math.log(measured / predicted),
            "group": group}


# vLLM 0.26.0 measured on GPUs no calibration was fitted on: every point is held out (the H100 sittings)
OTHER_GPU_VLLM = REPO / "data/measurements/h100/vllm-0.26.0"


def measured_group(d: str) -> str:
    """The measured group of a run folder: 'vllm-0.26.0 sitting-7' on the H200, 'vllm-0.26.0 h100 sitting-29' else."""
    parts = Path(d).resolve().relative_to(REPO / "data/measurements").parts
    return " ".join([parts[1], *([parts[0]] if parts[0] != "h200" else []), parts[2]])


def measured_points(runs: dict | None = None) -> tuple[list[dict], dict]:
    runs = {**(ar.vllm_runs() if runs is None else runs), **ar.vllm_runs(OTHER_GPU_VLLM)}
    df = compare_dirs(list(runs), {"calibrated": None})
    if "error" in df:
        df = df[df["error"].isna()]
    df = df.drop_duplicates(subset=["model", "precision", "tp", "isl", "osl", "load", "run"])
    df["shape"] = df["isl"].astype(int).astype(str) + "x" + df["osl"].astype(int).astype(str)
    df["fitted"] = ar.trained(df)  # what the calibration plan trains on (accuracy_report's split)
    df["engine"] = "vllm"
    df["group"] = [measured_group(r) for r in df["run"]]
    sg_dirs = ar.sglang_runs()
    sg = compare_dirs(sg_dirs, {"calibrated": None})
    sg["shape"] = sg["isl"].astype(int).astype(str) + "x" + sg["osl"].astype(int).astype(str)
    sg["fitted"] = ar.trained(sg, "sglang")
    sg["engine"] = "sglang"
    sg["group"] = ["sglang-0.5.17 " + Path(r).relative_to(ar.SGLANG_DATA).parts[0] for r in sg["run"]]
    points = []
    for d in (df, sg):
        for row in d[~d["fitted"]].to_dict("records"):
            load = parse_load(row["load"])
            mclass, reg = model_class(load_model(row["model"])), regime(load.kind, load.value)
            for mk, metric in MEASURED_METRICS.items():
                pt = _point("measured", row["engine"], row["gpu"], mclass, reg, metric, row[f"measured_{mk}"],
                            row[f"predicted_{mk}"], row["group"])
                if pt:
                    points.append({**pt, "run": row["run"], "shape": row["shape"]})  # run, shape: for the tests
    coverage = measured_coverage({**{d: r for d, r in runs.items()}, **{d: load_run(d) for d in sg_dirs}})
    return points, coverage


def measured_coverage(runs: dict) -> dict:
    """What the committed measurements covered, per engine (every point, fitted or not: this is the box, not the error)."""
    cov: dict[str, dict] = {}
    for d, run in sorted(runs.items()):
        pts = [p for p in run.points if p.completed]
        if not pts:
            continue
        e = estimate(point_scenario(run, pts[0]))
        version = Path(d).resolve().relative_to(REPO / "data/measurements").parts[1].split("-", 1)[1]
        c = cov.setdefault(e.engine, {"engine_version": version, "gpus": set(), "weight_formats": set(),
                                      "kv_precisions": set(), "model_classes": set(), "models": set(),
                                      "max_total_params": {}, "max_active_params": {}, "tp": set(),
                                      "expert_parallel": set(), "max_num_gpus": 0, "max_isl": 0, "max_osl": 0,
                                      "max_context": 0, "regimes": set(), "arrivals": set(), "length_dists": set(),
                                      "knobs": {}, "max_prefix_hit_rate": 0.0, "speculative": set()})
        mclass = model_class(load_model(e.model))
        c["gpus"].add(e.gpu)
        c["weight_formats"].add(e.weight_format)
        c["kv_precisions"].add(e.kv_precision)
        c["model_classes"].add(mclass)
        c["models"].add(e.model)
        c["max_total_params"][mclass] = max(c["max_total_params"].get(mclass, 0), e.total_params)
        c["max_active_params"][mclass] = max(c["max_active_params"].get(mclass, 0), e.active_params_per_token)
        c["tp"].add(e.tp)
        c["expert_parallel"].add(e.ep > 1)
        c["max_num_gpus"] = max(c["max_num_gpus"], e.num_gpus)
        c["arrivals"].add(run.scenario.get("arrivals", "constant"))
        c["length_dists"].add(run.scenario.get("length_dist", "fixed"))
        for k in KNOBS:
            if run.scenario.get(k) is not None:
                c["knobs"].setdefault(k, set()).add(run.scenario[k])
        for p in pts:
            isl, osl = int(round(p.isl or 0)), int(round(p.osl or 0))
            c["max_isl"], c["max_osl"] = max(c["max_isl"], isl), max(c["max_osl"], osl)
            c["max_context"] = max(c["max_context"], isl + osl)
            load = parse_load(p.load)
            c["regimes"].add(regime(load.kind, load.value))
            s = point_scenario(run, p)  # the hit rate and draft acceptance the engine's counters read
            c["max_prefix_hit_rate"] = round(max(c["max_prefix_hit_rate"], s.prefix_hit_rate), 3)
            if s.spec_draft_tokens:  # each measured (drafter, drafts, acceptance): a range would claim the middle
                c["speculative"].add((spec_method(s), s.spec_draft_tokens, round(s.spec_acceptance, 2)))
    return {eng: {k: (sorted(v) if isinstance(v, set) else {kk: sorted(vv) if isinstance(vv, set) else vv
                                                            for kk, vv in sorted(v.items())} if isinstance(v, dict) else v)
                  for k, v in c.items()} for eng, c in sorted(cov.items())}


def public_points() -> tuple[list[dict], dict, dict]:
    rows = load_rows()
    scored = sp.score(rows)
    points, fmts, classes, knobs, flags = [], set(), set(), set(), {}
    unpriced: dict[str, list[float]] = {}
    engines_as_is: set[str] = set()
    refused, longest = 0, 0
    for s in scored:
        r = s.row
        if s.error is None:
            refused += 1
            continue
        if s.fitted:  # a public calibration trained on it: never scored (data/public/calibration-plan.toml)
            continue
        mclass = model_class(load_model(r.model))
        load = parse_load(s.scenario["load"])
        fmts.add(f"{gpu_class(r.gpu)}/{s.est.weight_format}")
        classes.add(mclass)
        longest = max(longest, s.scenario["isl"] + s.scenario["osl"])
        knobs |= {k for k in KNOBS if s.scenario.get(k) is not None}
        if s.scenario["engine"] == r.engine:
            engines_as_is.add(r.engine)
        for f in s.flags:
            if f.startswith("engine "):
                flags[f] = flags.get(f, 0) + 1
        metric = PUBLIC_METRICS.get(r.metric)
        if metric is None:
            continue
        pt = _point("public", r.engine, r.gpu, mclass, regime(load.kind, load.value), metric, r.value, s.predicted,
                    r.source_id)
        if pt and s.unpriced:  # an unsupported feature: scored apart, never in the slices other answers take
            for u in s.unpriced:
                unpriced.setdefault(unpriced_name(u), []).append(pt["error"])
        elif pt:
            points.append(pt)
    coverage = {"arrivals": ["constant"], "gpu_class_formats": sorted(fmts), "model_classes": sorted(classes),
                "max_context": longest, "knobs": sorted(knobs)}
    meta = {"rows": len(rows), "scored": len(rows) - refused, "refused": refused,
            "engines_scored_as_is": sorted(engines_as_is), "scoring": dict(sorted(flags.items())),
            "unpriced": {k: {"points": len(v), "median_abs_error": r4(float(np.median(np.abs(v)))),
                             "median_error": r4(float(np.median(v)))} for k, v in sorted(unpriced.items())}}
    return points, coverage, meta


# ---------------------------------------------------------------- slices
QUANTILE_GRID = (np.arange(400) + 0.5) / 400  # the new group's offset, as 400 equally likely quantiles


def group_offsets(pts: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """(each group's median log(measured ÷ predicted), every point's deviation from its group's median)."""
    by: dict[str, list[float]] = {}
    for p in pts:
        by.setdefault(p["group"], []).append(p["log_ratio"])
    offsets = np.array([np.median(v) for v in by.values()])
    within = np.concatenate([np.asarray(v) - np.median(v) for v in by.values()])
    return offsets, within


def new_group_quantiles(pts: list[dict], pooled: tuple[float, int] | None = None,
                        qs: tuple[float, float] = (0.05, 0.95)) -> tuple[float, float]:
    """Quantiles of log(measured ÷ predicted) for a point of a group not among `pts`' groups (a new source, a new
    sitting): a random-effects prediction. The new group's offset is drawn around the seen groups' mean offset with
    their spread s, as a Student t with G − 1 degrees of freedom scaled by s·sqrt(1 + 1/G) (the textbook prediction
    interval for a new group's mean: few seen groups give wide tails); the point's deviation within its group is
    one of the seen within-group deviations. A slice of one group has no spread of its own between groups: it takes
    `pooled` (the spread and count of the group offsets of its whole pool for that metric); without it, the plain
    quantiles of its points."""
    offsets, within = group_offsets(pts)
    g = len(offsets)
    if g >= 2:
        sd, dof = float(offsets.std(ddof=1)), g - 1
    elif pooled is not None:
        sd, dof = pooled[0], pooled[1] - 1
    else:
        lr = np.array([p["log_ratio"] for p in pts])
        return float(np.quantile(lr, qs[0])), float(np.quantile(lr, qs[1]))
    new = offsets.mean() + sd * np.sqrt(1 + 1 / g) * student_t.ppf(QUANTILE_GRID, dof)
    draws = (new[:, None] + within[None, :]).ravel()
    return float(np.quantile(draws, qs[0])), float(np.quantile(draws, qs[1]))


def pooled_spread(points: list[dict]) -> dict[str, tuple[float, int] | None]:
    """Per metric: the spread (sd) and count of the group offsets over a whole pool. A metric that fewer than three
    groups report has no spread between groups of its own: it takes the spread of the offsets of every metric's
    groups together (sources disagree with the model on TTFT as they do on throughput, by configuration and harness;
    None only where the whole pool has under three). Added 2026-12-03 after the coverage check below showed TTFT and
    ITL intervals from one source's points alone (public TTFT 5 %, ITL 40 % inside)."""
    offsets = {m: group_offsets([p for p in points if p["metric"] == m])[0] for m in METRICS
               if any(p["metric"] == m for p in points)}
    every = np.concatenate(list(offsets.values())) if offsets else np.array([])
    fallback = (float(every.std(ddof=1)), len(every)) if len(every) >= 3 else None
    return {m: (float(offsets[m].std(ddof=1)), len(offsets[m])) if m in offsets and len(offsets[m]) >= 3
            else fallback for m in METRICS}


def stats(pts: list[dict], pooled: tuple[float, int] | None = None) -> dict:
    err = np.array([p["error"] for p in pts])
    q05, q95 = new_group_quantiles(pts, pooled)
    src: dict[str, int] = {}
    for p in pts:
        src[p["group"]] = src.get(p["group"], 0) + 1
    return {"n": len(pts), "median_abs_error": r4(float(np.median(np.abs(err)))),
            "p90_abs_error": r4(float(np.quantile(np.abs(err), 0.9))), "median_ratio": r4(float(np.median(err + 1))),
            "log_ratio_q05": r4(q05), "log_ratio_q95": r4(q95),
            "sources": dict(sorted(src.items()))}


def chain_of(p: dict) -> list[str]:
    return slice_chain(p["engine"], p["gpu_class"], p["model_class"], p["regime"])


def build_slices(points: list[dict]) -> dict:
    groups: dict[str, dict[str, list[dict]]] = {}
    for p in points:
        for key in chain_of(p):
            groups.setdefault(key, {}).setdefault(p["metric"], []).append(p)
    pooled = pooled_spread(points)
    return {k: {m: stats(groups[k][m], pooled[m]) for m in METRICS if m in groups[k]} for k in sorted(groups)}


def coverage_check(points: list[dict]) -> dict:
    """Leave one group out: intervals built without the group, checked on its points."""
    per_metric = {m: [0, 0] for m in METRICS}
    per_group: dict[str, list[int]] = {}
    no_interval = 0
    for g in sorted({p["group"] for p in points}):
        train = build_slices([p for p in points if p["group"] != g])
        for p in (p for p in points if p["group"] == g):
            _, st, _ = lookup(train, chain_of(p), p["metric"], MIN_POINTS)
            inside = bool(st) and st["log_ratio_q05"] <= p["log_ratio"] <= st["log_ratio_q95"]
            no_interval += st is None
            per_metric[p["metric"]][0] += 1
            per_metric[p["metric"]][1] += inside
            pg = per_group.setdefault(g, [0, 0])
            pg[0] += 1
            pg[1] += inside
    share = lambda n, k: round(k / n, 4) if n else 0.0  # noqa: E731
    n_all, k_all = sum(v[0] for v in per_metric.values()), sum(v[1] for v in per_metric.values())
    return {"n": n_all, "inside": k_all, "share": share(n_all, k_all), "points_without_interval": no_interval,
            "per_metric": {m: {"n": v[0], "inside": v[1], "share": share(*v)} for m, v in per_metric.items()},
            "per_group": {g: {"n": v[0], "inside": v[1], "share": share(*v)} for g, v in per_group.items()}}


def build() -> dict:
    return build_all()[0]


EAGER_MODEL, EAGER_ISL = "Qwen/Qwen3-30B-A3B", 1024  # the lone prompt measured on most servers


def bf16_one_gpu_runs(runs: dict, models):
    """(run folder, run) of every vLLM BF16 run on one GPU of one of `models` (`runs`: ar.vllm_runs()), in folder
    order: the runs the card's measured spreads read."""
    for d, run in sorted(runs.items()):
        sc = run.scenario
        if sc["model"] in models and sc["precision"] == "bf16" and sc.get("tp", 1) == 1:
            yield d, run


def eager_moe_prompt(runs: dict) -> dict:
    """The MoE lone prompt run op by op, across servers: every vLLM bf16 sync point of Qwen3-30B-A3B at 1,024
    prompt tokens (`runs`: ar.vllm_runs(), which leaves excluded.json's points out), split by whether the server's
    CUDA graphs reach the prompt. The estimate's eager-MoE note quotes these."""
    from capacity import engines as capacity_engines

    vllm = capacity_engines.get("vllm")
    eager, graphed, sittings = [], [], set()
    for d, run in bf16_one_gpu_runs(runs, (EAGER_MODEL,)):
        sc = run.scenario
        # the run's scenario holds what its argv set (validate reads it with the engine's flag table)
        limit = vllm.profile(**{k: sc[k] for k in ("max_cudagraph_tokens", "max_num_seqs") if k in sc}).max_cudagraph_tokens
        for p in run.points:
            if p.load != "sync" or p.isl != EAGER_ISL or not p.mean_ttft_s:
                continue
            (graphed if limit >= EAGER_ISL else eager).append(p.mean_ttft_s)
            if limit < EAGER_ISL:
                sittings.add(ar.sitting(d))
    return {"model": EAGER_MODEL, "prompt_tokens": EAGER_ISL, "engine": "vllm",
            "eager_ttft_s": [min(eager), max(eager)] if eager else None, "eager_points": len(eager),
            "graphed_ttft_s": float(np.median(graphed)) if graphed else None, "graphed_points": len(graphed),
            "sittings": sorted(sittings, key=ar.sitting_key)}


HOST_MODELS, HOST_CLIENTS = ("meta-llama/Llama-3.1-8B", "Qwen/Qwen3-8B"), 256  # host-bound decode, measured most


def host_decode_points(runs: dict):
    """(run folder, API servers, mean ITL) of every vLLM bf16 TP=1 point of an 8B dense model at 256 clients (`runs`:
    ar.vllm_runs(), excluded.json's points left out): the points host_bound_decode and api_server_decode read."""
    for d, run in bf16_one_gpu_runs(runs, HOST_MODELS):
        for p in run.points:
            if p.load == f"concurrency:{HOST_CLIENTS}" and p.mean_itl_s:
                yield d, run.scenario.get("api_server_count") or 1, p.mean_itl_s


def host_bound_decode(runs: dict) -> dict:
    """vLLM's host-bound decode across servers, with one API server (more lower the floor, sitting 28): the
    estimate's host-bound note quotes these."""
    points = [(d, itl) for d, api, itl in host_decode_points(runs) if api == 1]
    itl = [x for _, x in points]
    return {"engine": "vllm", "clients": HOST_CLIENTS, "models": sorted({runs[d].scenario["model"] for d, _ in points}),
            "itl_s": [min(itl), max(itl)] if itl else None, "points": len(itl),
            "sittings": sorted({ar.sitting(d) for d, _ in points}, key=ar.sitting_key)}


def api_server_decode(runs: dict) -> dict:
    """vLLM's 256-client decode with one API server and with more, on the sittings that ran both: what the estimate
    and the app quote for --api-server-count."""
    points = list(host_decode_points(runs))
    both = {ar.sitting(d) for d, api, _ in points if api > 1}
    by: dict[str, list[float]] = {"one": [], "more": []}
    for d, api, itl in points:
        if ar.sitting(d) in both:
            by["more" if api > 1 else "one"].append(itl)
    span = {k: [min(v), max(v)] if v else None for k, v in by.items()}
    return {"engine": "vllm", "clients": HOST_CLIENTS, "itl_s_one_api_server": span["one"],
            "itl_s_more_api_servers": span["more"], "points": sum(map(len, by.values())),
            "sittings": sorted(both & {ar.sitting(d) for d, _, _ in points}, key=ar.sitting_key)}


def build_all() -> tuple[dict, list[dict], list[dict]]:
    """(card.json's content, the measured held-out points, the public points). The estimates scored here carry no
    card: the build never reads the card.json it writes."""
    saved = _card.card_data
    _card.card_data = lambda: None
    try:
        runs = ar.vllm_runs()
        mpts, mcov = measured_points(runs)
        ppts, pcov, pmeta = public_points()
    finally:
        _card.card_data = saved
    public_cals = sorted(c.label for c in shipped_calibrations().values() if "data/public" in c.source)
    return ({
        "generated_by": "scripts/build_card.py (from committed data only; do not edit by hand)",
        "min_points": MIN_POINTS,
        "interval": ("90 %: 5th and 95th percentiles of measured ÷ predicted for a point of a group (public source, "
                     "measured sitting) the slice has not seen: a random-effects prediction (the new group's offset a "
                     "Student t around the seen groups' mean, their spread × sqrt(1 + 1/G); a slice of one group takes "
                     "its pool's spread) plus a seen within-group deviation"),
        "error": "predicted ÷ measured − 1",
        "metrics": {m: METRIC_LABELS[m] for m in METRICS},
        "public_calibrations": public_cals,
        "public_calibrations_note": "calibrations fitted on public data: " + (", ".join(public_cals) if public_cals
                                                                              else "none ships yet"),
        "measured_coverage": mcov,
        "eager_moe_prompt": eager_moe_prompt(runs),
        "host_bound_decode": host_bound_decode(runs),
        "api_server_decode": api_server_decode(runs),
        "public_coverage": pcov,
        "public_engines_scored_as_is": pmeta["engines_scored_as_is"],
        "public_scoring": {"rows": pmeta["rows"], "scored": pmeta["scored"], "refused": pmeta["refused"],
                           "mapping": pmeta["scoring"], "unpriced": pmeta["unpriced"]},
        "pools": {
            "measured": {"scored_on": SCORED_ON["measured"], "points": len(mpts), "slices": build_slices(mpts)},
            "public": {"scored_on": SCORED_ON["public"], "points": len(ppts), "slices": build_slices(ppts)},
        },
        "coverage_check": {
            "measured": {"method": "leave one sitting out (per engine): intervals from the other sittings' held-out "
                                   "points, checked on the left-out sitting's", **coverage_check(mpts)},
            "public": {"method": "leave one source out: intervals from the other sources' rows, checked on the "
                                 "left-out source's", **coverage_check(ppts)},
        },
    }, mpts, ppts)


def card_json(card: dict) -> str:
    return json.dumps(card, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


# ---------------------------------------------------------------- doc
def cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def versus_target(share: float) -> str:
    return "inside" if 0.85 <= share <= 0.95 else "below" if share < 0.85 else "above"


def pc(x: float) -> str:
    return f"{x * 100:.0f} %"


def slice_rows(slices: dict, min_points: int) -> list[str]:
    out = ["| slice | metric | points | median abs error | p90 abs error | median error | 90 % interval (× predicted) | sources |",
           "|---|---|---|---|---|---|---|---|"]
    for key, by in slices.items():
        for m, st in by.items():
            if st["n"] < min_points:
                continue
            src = ", ".join(f"{k} ({v})" for k, v in sorted(st["sources"].items(), key=lambda kv: (-kv[1], kv[0]))[:4])
            more = len(st["sources"]) - 4
            out.append(f"| {key} | {METRIC_LABELS[m]} | {st['n']} | {pc(st['median_abs_error'])} | "
                       f"{pc(st['p90_abs_error'])} | {(st['median_ratio'] - 1) * 100:+.0f} % | "
                       f"{math.exp(st['log_ratio_q05']):.2f} – {math.exp(st['log_ratio_q95']):.2f} | "
                       f"{src}{f' +{more} more' if more > 0 else ''} |")
    return out


def coverage_rows(cc: dict) -> list[str]:
    out = ["| metric | held-out points | inside their 90 % interval | share |", "|---|---|---|---|"]
    for m, v in cc["per_metric"].items():
        out.append(f"| {METRIC_LABELS[m]} | {v['n']} | {v['inside']} | {pc(v['share'])} |")
    out.append(f"| **all** | {cc['n']} | {cc['inside']} | **{pc(cc['share'])}** |")
    out += ["", "| left out | points | share inside |", "|---|---|---|"]
    out += [f"| {g} | {v['n']} | {pc(v['share'])} |" for g, v in cc["per_group"].items()]
    return out


def render_doc(card: dict) -> str:
    mc, cc = card["measured_coverage"], card["coverage_check"]
    L = ["# The accuracy card on every answer", "",
         "Generated by `python scripts/build_card.py` from committed data only (the held-out points of the "
         "measurements here, H200 and H100, and the public corpus scored with the current model); every number below is that script's, and "
         "`tests/test_card.py` fails when this page or `capacity/calibrations/card.json` is stale. The card "
         "(`capacity/card.py`) is on every estimate: `capacity estimate` prints it under the numbers, `--json` carries "
         "it as `card`, the app shows it beside the headline.", "",
         "## Domains", "",
         "- **measured-here**: engine, GPU, weight format, KV precision, model class and size, TP, lengths, load "
         "regime and every knob set are inside what the committed measurements of that engine covered (below; each "
         "dimension on its own, so a combination never measured together still counts as inside). "
         "The errors come from those measurements' held-out points.",
         f"- **calibrated-on-public-data**: the calibration used was fitted on public data. {cap(card['public_calibrations_note'])}.",
         "- **extrapolated**: outside that box (another GPU, an engine never measured here, a larger model, TP beyond "
         "the measured, MLA, other lengths) but inside what the public corpus scored. The errors come from the "
         "public corpus's scored rows of the slice.",
         "- **unsupported-feature**: a knob whose effect no committed measurement checked, here or in public "
         "(speculative decoding at an acceptance or draft count never measured, prefix hits above the highest "
         "measured rate, think time, FP4 on a GPU class where no row ran it, context beyond "
         f"the longest measured ({max([card['public_coverage']['max_context']] + [c['max_context'] for c in mc.values()]):,} "
         "tokens), a scheduler knob never varied), or a part of the engine's configuration its engine object says "
         "the model does not price (capacity/engines, `unpriced`: SGLang's Triton attention on ROCm). The card shows "
         "the slice's errors without the feature and says its effect is not in them; where public rows ran an unpriced "
         "feature they are scored apart and the card quotes their error: "
         + ("; ".join(f"{k}: {v['points']} points, median error {v['median_error'] * 100:+.0f} %"
                      for k, v in card["public_scoring"].get("unpriced", {}).items()) or "none") + ".", "",
         "What the measurements here cover, per engine:", "",
         "| engine | version | GPUs | weights | KV | model classes | largest model (total / active) | TP | EP | lengths up to | regimes | arrivals | knobs set | prefix hits up to | speculative drafts |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for eng, c in mc.items():
        size = ", ".join(f"{k} {c['max_total_params'][k] / 1e9:.1f} B / {c['max_active_params'][k] / 1e9:.1f} B"
                         for k in c["max_total_params"])
        knobs = ", ".join(f"{k}={'/'.join(map(str, v))}" for k, v in c["knobs"].items()) or "none"
        L.append(f"| {eng} | {c['engine_version']} | {', '.join(c['gpus'])} | {', '.join(c['weight_formats'])} | "
                 f"{', '.join(c['kv_precisions'])} | {', '.join(c['model_classes'])} | {size} | "
                 f"{', '.join(map(str, c['tp']))} | {'yes' if True in c['expert_parallel'] else 'no'} | "
                 f"{c['max_isl']:,} in, {c['max_osl']:,} out, {c['max_context']:,} in all | {', '.join(c['regimes'])} | "
                 f"{', '.join(c['arrivals'])} | {knobs} | {c['max_prefix_hit_rate']:.0%} | "
                 + ("; ".join(f"{m}, {k} drafts at acceptance {a:.2f}" for m, k, a in c["speculative"]) or "none")
                 + " |")
    pcv, ps = card["public_coverage"], card["public_scoring"]
    L += ["", f"The public corpus: {ps['scored']} of {ps['rows']} rows scored ({ps['refused']} refused by the model); "
          f"model classes {', '.join(pcv['model_classes'])}; GPU class / weight format pairs "
          f"{', '.join(pcv['gpu_class_formats'])}; contexts up to {pcv['max_context']:,} tokens. Engines scored with "
          f"their own profile: {', '.join(card['public_engines_scored_as_is'])}; "
          + "; ".join(f"{k}: {v} rows" for k, v in ps["mapping"].items()) + ".", "",
          "## Slices", "",
          f"A slice is engine × GPU class × model class × load regime (sync; closed loop; burst, which includes the "
          f"public offline and batch rows; open arrivals). Error = {card['error']}; |error| median and 90th "
          f"percentile per metric; the interval is the {card['interval']}, applied to the estimate. A slice with fewer "
          f"than {card['min_points']} points for a metric is widened: same engine and GPU class with any model class, "
          "then any regime, then any engine on the GPU class, then the whole pool; the card says \"few points\" and "
          "names the slice used.", "",
          f"### Measured here ({card['pools']['measured']['points']} held-out points)", "",
          cap(card["pools"]["measured"]["scored_on"]) + ". Slices with at least "
          f"{card['min_points']} points:", ""]
    L += slice_rows(card["pools"]["measured"]["slices"], card["min_points"])
    L += ["", f"### Public corpus ({card['pools']['public']['points']} scored points)", "",
          cap(card["pools"]["public"]["scored_on"]) + f". Slices with at least {card['min_points']} points:", ""]
    L += slice_rows(card["pools"]["public"]["slices"], card["min_points"])
    L += ["", "## Coverage of the 90 % intervals on held-out points", "",
          "Target 85–95 %. Nothing is fitted to it, but the interval's form (a random-effects prediction for a new group) "
          "was chosen among three by this check (2026-12-02), and the spread a metric reported by under three groups "
          "borrows from the other metrics was added after it (2026-12-03), so it is not an independent test of those "
          "choices. "
          "The shipped intervals are built on every point; "
          "to check them honestly each group is left out in turn and its points are checked against intervals built "
          "without it (a left-out source's slice often widens to a parent, as a new configuration's would).", "",
          f"**Public corpus** ({cc['public']['method']}): {pc(cc['public']['share'])} of {cc['public']['n']} points "
          f"inside ({cc['public']['points_without_interval']} without any interval): "
          f"{versus_target(cc['public']['share'])} the 85–95 % target.", ""]
    L += coverage_rows(cc["public"])
    L += ["", f"**Measured here** ({cc['measured']['method']}): {pc(cc['measured']['share'])} of {cc['measured']['n']} "
          f"points inside ({cc['measured']['points_without_interval']} without any interval): "
          f"{versus_target(cc['measured']['share'])} the 85–95 % target.", ""]
    L += coverage_rows(cc["measured"])
    L += ["", "Reading it: a group left out is usually unlike the rest (another engine family, GPU vendor, model or "
          "host), so its offset is new; the interval is a prediction for such a group (its width grows with the "
          "spread between the groups seen and with how few they are). Where few groups publish a metric (public "
          "TTFT and ITL) a left-out source's slice often has no other source and widens to a parent built on other "
          "kinds of rows, and coverage stays low there: see the per-metric and per-group tables.", ""]
    return "\n".join(L)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=CARD_PATH)
    ap.add_argument("--doc", type=Path, default=DOC_PATH)
    ap.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    a = ap.parse_args(argv)
    card = build()
    text, doc = card_json(card), render_doc(card)
    if a.check:
        stale = [str(p) for p, t in ((a.out, text), (a.doc, doc)) if not p.exists() or p.read_text() != t]
        if stale:
            print("stale: " + ", ".join(stale) + " (rerun scripts/build_card.py)")
            return 1
        print("card.json and docs/card.md are up to date")
        return 0
    a.out.write_text(text)
    a.doc.write_text(doc)
    print(f"wrote {a.out} and {a.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
