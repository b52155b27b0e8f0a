"""The page's sections: headline metrics and one renderer per tab (Streamlit calls; numbers from appkit.cached)."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from appkit import cached, charts, inputs, launch as snippets, measured
from appkit.compute import Headline
from appkit.measured import best_configurations, latency_column, matches_scenario
from capacity import Scenario
from capacity.architecture import catalog_ids
from capacity.engines import EngineProfile, engine_profile
from capacity.errors import CapacityError
from capacity.estimate import plan_for
from capacity.formulas import FORMULAS, latex
from capacity.hardware import gpu_catalog, load_gpu


# ---------- formatting ----------

def ms(seconds: float | None) -> str:
    """A duration with its unit: '863 ms', '5.4 ms', '1 s', '2.35 s'."""
    if seconds is None or not math.isfinite(seconds):
        return "—"
    if seconds >= 10:
        return f"{seconds:,.0f} s"
    if seconds >= 1:
        return f"{seconds:,.2f}".rstrip("0").rstrip(".") + " s"
    return f"{seconds * 1e3:,.0f} ms" if seconds >= 0.01 else f"{seconds * 1e3:,.1f} ms"


def num(v: float | None, digits: int = 0) -> str:
    if v is None or not math.isfinite(v):
        return "—"
    if abs(v) >= 1e6:
        return f"{v / 1e6:,.2f} M"
    return f"{v:,.{digits}f}"


def usd(v: float | None) -> str:
    if v is None or not math.isfinite(v):
        return "—"
    return f"${v:,.3f}" if v < 10 else f"${v:,.2f}"


def layout_text(s: Scenario) -> str:
    reps = s.num_gpus // s.tp if s.num_gpus % s.tp == 0 else 0
    return f"TP {s.tp}" + (f", {reps} replicas" if reps > 1 else "")


def version() -> str:
    import capacity

    return capacity.__version__


def _csv_button(df: pd.DataFrame, name: str, key: str) -> None:
    st.download_button(":material/download: Download CSV", df.to_csv(index=False).encode(), file_name=name,
                       mime="text/csv", key=key, on_click="ignore")


# ---------- headline ----------

def engine_limits(s: Scenario) -> EngineProfile:
    """The sidebar engine's limits on the sidebar's GPU and TP, as the estimate uses them (capacity/engines/);
    the engine's reference GPU where the configuration does not fit."""
    try:
        return plan_for(s).profile
    except CapacityError:
        return engine_profile(s.engine, None, s.tp)


def _sequence_cap(s: Scenario) -> str:
    cap = engine_limits(s).max_num_seqs
    return f"{s.engine} runs at most {cap:,} sequences per replica" if cap < 10**8 else "no engine cap on sequences"


def headline_metrics(s: Scenario, h: Headline, ttft_slo: float, itl_slo: float) -> None:
    ctx = s.isl + s.osl
    row = st.columns(4)
    row[0].metric("Max concurrent users", num(h.max_concurrent_users), border=True,
                  delta=f"at {ctx:,} tokens each", delta_color="off", delta_arrow="off",
                  help=f"requests of {ctx:,} tokens (input + output) whose KV cache fits at once, all replicas "
                       f"(KV cache: {h.kv_capacity_tokens:,} tokens per replica; {_sequence_cap(s)})")
    load = (f"{h.requests_per_s / h.max_requests_per_s:.0%} of the ceiling" if h.requests_per_s and h.max_requests_per_s
            else "none meets the objectives")
    row[1].metric("Requests/s within objectives", num(h.requests_per_s, 2), border=True, delta=load,
                  delta_color="off", delta_arrow="off",
                  help="the highest arrival rate whose TTFT and ITL meet the objectives (capacity.sizing.max_rate_within_slo)")
    row[2].metric("Output tokens/s at that rate", num(h.output_tokens_per_s), border=True,
                  delta=f"{num(h.total_tokens_per_s)} incl. input" if h.total_tokens_per_s else "—", delta_color="off",
                  delta_arrow="off")
    row[3].metric("$ per million output tokens", usd(h.usd_per_million_output_tokens), border=True,
                  delta=f"{usd(h.usd_per_million_total_tokens)} per M total" if h.usd_per_million_total_tokens else "—",
                  delta_color="off", delta_arrow="off",
                  help="$/GPU-hour × GPUs ÷ tokens per hour × 10⁶ at the objective rate; the whole bill is charged to "
                       "each token class, so the output and total figures are two views of one cost")
    row = st.columns(4)
    row[0].metric("TTFT at that rate", ms(h.ttft_s), border=True, delta=f"alone: {ms(h.sync_ttft_s)}",
                  delta_color="off", delta_arrow="off", help="time to first token; 'alone' = one request at a time")
    row[1].metric("ITL at that rate", ms(h.itl_s), border=True, delta=f"alone: {ms(h.sync_itl_s)}",
                  delta_color="off", delta_arrow="off", help="inter-token latency (time per output token)")
    gpus = f"{h.gpus_for_target:,} GPU{'s' if h.gpus_for_target != 1 else ''}" if h.gpus_for_target else "—"
    row[2].metric(f"For {num(h.target_rps, 1)} requests/s", gpus, border=True,
                  delta=(f"{h.replicas_for_target:,} × TP {s.tp}" + (f" · ${h.usd_per_hour_for_target:,.2f}/h"
                                                                      if h.usd_per_hour_for_target else ""))
                  if h.replicas_for_target else ("set a target load" if not h.target_rps else "objectives out of reach"),
                  delta_color="off", delta_arrow="off",
                  help="replicas of TP GPUs, each loaded to its highest rate within the objectives (capacity.sizing.size)")
    row[3].metric("Ceiling (every KV slot busy)", f"{num(h.max_output_tokens_per_s)} tok/s", border=True,
                  delta=f"{num(h.max_requests_per_s, 2)} requests/s, latency ignored", delta_color="off", delta_arrow="off")
    if h.reason:
        st.warning(f"**Objectives out of reach.** {h.reason}. Relax the objectives, use more GPUs per replica (TP), "
                   "a lower precision or a faster GPU.", icon=":material/warning:")
    else:
        reps = f" per replica of {s.tp} GPUs" if s.tp > 1 else ""
        st.success(f"**Fits.** Per GPU, {h.weight_bytes_per_gpu / 1e9:,.1f} GB of {h.weight_format.upper()} weights "
                   f"leave {h.kv_cache_bytes_per_gpu / 1e9:,.1f} GB for the KV cache: {h.kv_capacity_tokens:,} tokens"
                   f"{reps}, {num(h.max_concurrent_users)} users of {ctx:,} tokens. Prefill is {h.prefill_bound}-bound, "
                   f"decode {h.decode_bound}-bound ({h.compute_precision.upper()} matmuls).",
                   icon=":material/check_circle:")
    for note in h.notes:
        st.info(note, icon=":material/info:")


def what_fits(s: Scenario) -> None:
    """Shown under a 'does not fit' error: max concurrent users for each TP × precision on this GPU."""
    try:
        df = cached.fit_options(s.model_dump_json())
    except Exception:  # noqa: BLE001  a hint only: never let it break the page
        return
    if not (df.drop(columns=["weights"]) > 0).any().any():
        st.info("Nothing fits on up to one scale-up domain of this GPU; choose a larger GPU.", icon=":material/info:")
        return
    st.markdown(f"**What fits on {gpu_name(s)}** — users of {s.isl + s.osl:,} tokens per replica "
                "(0: does not fit). Set *GPUs* and *Tensor parallel* in the sidebar.")
    st.dataframe(df, hide_index=True, column_config={
        c: st.column_config.NumberColumn(c, format="%d") for c in df.columns if c.startswith("TP")})


def gpu_name(s: Scenario) -> str:
    g = gpu_catalog().get(s.gpu)
    return g.name if g else "the custom GPU"


# ---------- tabs ----------

def charts_tab(s: Scenario, h: Headline, ttft_slo: float, itl_slo: float, target: float) -> None:
    sj = s.model_dump_json()
    mem = cached.memory_breakdown(sj)
    st.subheader("Memory per GPU", help="the engine's accounting: usable × memory fraction − weights − activations "
                                         "− overhead = KV cache")
    st.vega_lite_chart(spec=charts.memory(mem), width="stretch")
    usable = mem["bytes"].sum()
    st.caption(f"Usable {usable / 1e9:,.1f} GB ({usable / 2**30:,.1f} GiB) per GPU. GB = 10⁹ bytes; vLLM's logs "
               "print GiB (2³⁰ bytes = 1.074 GB). Hover a segment for both.")
    curve = cached.load_curve(sj)
    if h.price_usd_per_gpu_hour is None:
        curve = curve.assign(usd_per_million_output_tokens=float("nan"), usd_per_million_total_tokens=float("nan"))
    st.subheader("Latency vs throughput as load grows",
                 help="closed-loop concurrency sweep: C users, each sending its next request when the last one ends")
    _, meas, _, _ = measured_points(s)
    reps = s.num_gpus // s.tp
    if not meas.empty and reps > 1:
        meas = meas.assign(output_tokens_per_s=meas["output_tokens_per_s"] * reps)
    c1, c2 = st.columns(2)
    c1.vega_lite_chart(spec=charts.latency(curve, "ttft_s", ttft_slo, ttft_slo, itl_slo, meas), width="stretch")
    c2.vega_lite_chart(spec=charts.latency(curve, "itl_s", itl_slo, ttft_slo, itl_slo, meas), width="stretch")
    note = ""
    if not meas.empty:
        note = (f" Black diamonds: {len(meas)} measured points for this configuration ({measured.STATISTIC} latency"
                + (f"; throughput of one replica × {reps}" if reps > 1 else "") + "), see *Measured vs predicted*.")
    st.caption("Each dot is a number of concurrent users (hover for it). Green: both objectives met. Red: more users "
               "than the KV cache holds, so requests wait in the queue." + note)
    c1, c2 = st.columns(2)
    running = None
    if h.requests_per_s:
        running = None  # the decode batch at the objective: where the concurrency sweep meets the objective rate
        ok = curve[(curve["requests_per_s"] <= h.requests_per_s * 1.0001)]
        if not ok.empty:
            running = float(ok["concurrency_per_replica"].iloc[-1])
    roof, pts, info = cached.roofline(sj, running)
    with c1:
        st.subheader("Roofline (per GPU)", help="attainable FLOP/s = min(peak, intensity × bandwidth)")
        st.vega_lite_chart(spec=charts.roofline(roof, pts, info), width="stretch")
        st.caption(f"Ridge at {info['ridge']:,.0f} FLOP/byte: left of it a step waits on memory, right of it on the "
                   f"tensor cores. Decode (blue) climbs toward the ridge as the batch grows; prefill (red) sits far right.")
    with c2:
        st.subheader("Cost vs load")
        st.vega_lite_chart(spec=charts.cost(curve, ttft_slo, itl_slo, bool(h.price_usd_per_gpu_hour)), width="stretch")
        price = h.price_usd_per_gpu_hour
        st.caption(f"At ${price:,.2f}/GPU-hour × {s.num_gpus} GPU{'s' if s.num_gpus > 1 else ''}. More users share the "
                   "same GPUs, until latency breaks the objectives." if price else "No price known for this GPU.")
    with st.expander("Load sweep table", icon=":material/table:"):
        table = curve.assign(ttft_ms=curve["ttft_s"] * 1e3, itl_ms=curve["itl_s"] * 1e3).drop(columns=["ttft_s", "itl_s"])
        st.dataframe(table, hide_index=True, width="stretch", column_config={
            "concurrency": st.column_config.NumberColumn("users", format="%d"),
            "ttft_ms": st.column_config.NumberColumn("TTFT (ms)", format="%.1f"),
            "itl_ms": st.column_config.NumberColumn("ITL (ms)", format="%.2f"),
            "requests_per_s": st.column_config.NumberColumn("requests/s", format="%.2f"),
            "output_tokens_per_s": st.column_config.NumberColumn("output tok/s", format="%.0f"),
            "usd_per_million_output_tokens": st.column_config.NumberColumn("$/M output", format="$%.3f")})
        _csv_button(table, "load-sweep.csv", "csv_load")


def compare_tab(s: Scenario, h: Headline, ttft_slo: float, itl_slo: float, target: float) -> None:
    st.markdown("The same model, workload and objectives on other GPUs and weight precisions — one replica of "
                f"TP {s.tp} each, catalog prices.")
    c1, c2, c3 = st.columns([3, 2, 2])
    catalog = gpu_catalog()
    gpus = c1.multiselect("GPUs", list(catalog), default=inputs.COMPARE_GPUS, key="cmp_gpus", persist_state="page",
                          format_func=lambda g: catalog[g].name.replace("NVIDIA ", "").replace("AMD Instinct ", ""))
    precisions = c2.multiselect("Weight precisions", ["bf16", "fp8", "fp4", "int4"], default=["bf16", "fp8", "fp4"],
                                key="cmp_precisions", persist_state="page", format_func=str.upper)
    metrics = {"output_tokens_per_s_per_gpu": ("output tokens/s per GPU at the objectives", ",.0f"),
               "usd_per_million_output_tokens": ("$ per million output tokens at the objectives", "$,.3f"),
               "max_concurrent_users": ("max concurrent users", ",.0f"),
               "gpus_for_target": (f"GPUs for {target:g} requests/s", ",.0f"),
               "max_output_tokens_per_s_per_gpu": ("ceiling output tokens/s per GPU", ",.0f")}
    metric = c3.selectbox("Metric", list(metrics), key="cmp_metric", persist_state="page", format_func=lambda m: metrics[m][0])
    if not gpus or not precisions:
        st.info("Pick at least one GPU and one precision.")
        return
    sj = s.model_copy(update={"gpu": "h200-sxm" if s.gpu not in catalog else s.gpu}).model_dump_json()
    df = cached.compare(sj, tuple(gpus), tuple(precisions), ttft_slo, itl_slo, max(target, 1e-9))
    title, fmt = metrics[metric]
    st.vega_lite_chart(spec=charts.compare(df, metric, title, fmt), width="stretch")
    misfit = df[df["fits"] != True]  # noqa: E712
    if not misfit.empty:
        st.caption("Does not fit: " + "; ".join(f"{r.gpu} {r.precision.upper()}" for r in misfit.itertuples()))
    show = df.assign(ttft_ms=df["ttft_s"] * 1e3, itl_ms=df["itl_s"] * 1e3).drop(columns=["ttft_s", "itl_s"])
    num_col = st.column_config.NumberColumn
    st.dataframe(show, hide_index=True, width="stretch", height=min(35 * (len(show) + 1) + 3, 800), column_order=[
        "gpu_name", "precision", "weight_format", "fits", "max_concurrent_users", "rps_per_replica_at_objective",
        "output_tokens_per_s_per_gpu", "ttft_ms", "itl_ms", "usd_per_million_output_tokens", "gpus_for_target",
        "usd_per_hour_for_target", "max_output_tokens_per_s_per_gpu", "reason"], column_config={
        "gpu_name": "GPU", "precision": "weights", "weight_format": "format",
        "max_concurrent_users": num_col("max users", format="%d"),
        "rps_per_replica_at_objective": num_col("req/s at objectives", format="%.2f"),
        "output_tokens_per_s_per_gpu": num_col("out tok/s per GPU", format="%.0f"),
        "usd_per_million_output_tokens": num_col("$/M output", format="$%.3f"),
        "gpus_for_target": num_col(f"GPUs for {target:g} req/s", format="%d"),
        "usd_per_hour_for_target": num_col("$/h for target", format="$%.2f"),
        "max_output_tokens_per_s_per_gpu": num_col("ceiling tok/s per GPU", format="%.0f"),
        "ttft_ms": num_col("TTFT (ms)", format="%.0f"), "itl_ms": num_col("ITL (ms)", format="%.1f"),
        "reason": st.column_config.TextColumn("note", width="large")})
    _csv_button(show, "compare.csv", "csv_compare")


def _uploaded(s: Scenario) -> tuple[list[measured.Run], pd.DataFrame, list[str]]:
    """Files uploaded in the Measured tab (kept in session state, so the Explorer sees them too)."""
    files = st.session_state.get("results_upload") or []
    defaults = (("model", s.model), ("gpu", s.gpu if s.gpu in gpu_catalog() else "custom"), ("tp", s.tp),
                ("precision", s.precision), ("kv_precision", s.kv_precision),
                ("engine", s.engine if s.engine != "ideal" else "vllm"))
    return cached.uploads(tuple((f.name, f.getvalue()) for f in files), defaults)


def all_results(s: Scenario) -> tuple[list[measured.Run], pd.DataFrame, int, list[str]]:
    """The project's runs and the uploads: (runs, their points with `run_index` into runs, points in the project,
    upload errors)."""
    project_runs, project, _ = cached.corpus()
    up_runs, up, errors = _uploaded(s)
    if not up.empty:
        up = up.assign(run_index=up["run_index"] + len(project_runs))
    frames = [d for d in (project, up) if not d.empty]
    points = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return [*project_runs, *up_runs], points, len(project), errors


def measured_points(s: Scenario) -> tuple[list[measured.Run], pd.DataFrame, int, list[str]]:
    """Measured points for the sidebar's configuration (model, GPU, precision, TP, shape, engine), the project's
    and the uploads alike. Returns (all runs, the matching points, points in the project in all, upload errors)."""
    runs, points, in_project, errors = all_results(s)
    gpu_id = s.gpu if s.gpu in gpu_catalog() else "custom"
    mine = points[matches_scenario(points, s, gpu_id)] if not points.empty else points
    if not mine.empty:
        mine = mine.assign(ttft_s=latency_column(mine, "ttft", measured.STATISTIC),
                           itl_s=latency_column(mine, "itl", measured.STATISTIC))
    return runs, mine, in_project, errors


def measured_tab(s: Scenario, h: Headline, ttft_slo: float, itl_slo: float, target: float) -> None:
    st.markdown("Measured load points of **the configuration in the sidebar** (model, GPU, precision, TP, shape "
                "within 10 %, and engine) beside the model's prediction, computed the way `validate compare` does it: "
                "each point with its own run's engine flags, load and request count. Add your own results under "
                "*Your measurements* in the sidebar.")
    runs, points, in_project, errors = measured_points(s)
    for e in errors:
        st.error(e, icon=":material/error:")
    if points.empty:
        st.info(f"No project measurements for this configuration yet ({in_project:,} measured points in the project "
                "in all). Upload your own results in the sidebar (*Your measurements*) to see them against the "
                "prediction.", icon=":material/info:")
        return
    key = tuple(f"{r.origin}:{r.source}" for r in runs)
    df = cached.predicted(points, s.model_dump_json(), key, tuple(runs))
    typical = measured.typical_errors(df)
    cols = st.columns(4)
    for col, (m, label) in zip(cols, (("requests_per_s", "requests/s"), ("output_tokens_per_s", "output tokens/s"),
                                      ("ttft_s", "TTFT (mean)"), ("itl_s", "ITL (mean)"))):
        err = df.get(f"err_{m}_pct")
        ok = err is not None and err.notna().any()
        col.metric(f"Typical error, {label}", f"{typical[m]:.0f} %" if ok and m in typical else "—", border=True,
                   help="mean |predicted ÷ measured − 1| over the points, as `validate compare` summarizes it",
                   delta=f"{err.notna().sum()} points, bias {err.median():+.0f} %" if ok else None,
                   delta_color="off", delta_arrow="off")
    st.vega_lite_chart(spec=charts.measured_vs_predicted(df), width="content")
    cols = ["origin", "source", "load", "isl", "osl", "requests_per_s", "pred_requests_per_s", "err_requests_per_s_pct",
            "output_tokens_per_s", "pred_output_tokens_per_s", "err_output_tokens_per_s_pct", "ttft_ms", "pred_ttft_ms",
            "err_ttft_s_pct", "itl_ms", "pred_itl_ms", "err_itl_s_pct", "pred_error"]
    df = df.assign(ttft_ms=df["ttft_s"] * 1e3, itl_ms=df["itl_s"] * 1e3, pred_ttft_ms=df.get("pred_ttft_s") * 1e3,
                   pred_itl_ms=df.get("pred_itl_s") * 1e3)
    table = df[[c for c in cols if c in df]]
    n, pct = st.column_config.NumberColumn, "%+.0f%%"
    st.dataframe(table, hide_index=True, width="stretch", column_config={
        "isl": n("in", format="%.0f"), "osl": n("out", format="%.0f"),
        "requests_per_s": n("req/s", format="%.2f"), "pred_requests_per_s": n("predicted", format="%.2f"),
        "err_requests_per_s_pct": n("error", format=pct),
        "output_tokens_per_s": n("out tok/s", format="%.0f"), "pred_output_tokens_per_s": n("predicted", format="%.0f"),
        "err_output_tokens_per_s_pct": n("error", format=pct),
        "ttft_ms": n("mean TTFT (ms)", format="%.1f"), "pred_ttft_ms": n("predicted", format="%.1f"),
        "err_ttft_s_pct": n("error", format=pct),
        "itl_ms": n("mean ITL (ms)", format="%.2f"), "pred_itl_ms": n("predicted", format="%.2f"),
        "err_itl_s_pct": n("error", format=pct), "pred_error": "prediction error"})
    st.caption(f"error % = predicted ÷ measured − 1. Statistic compared: the {measured.STATISTIC} TTFT and ITL of each "
               "point's requests against the model's means (the same as `validate compare` and docs/accuracy.md). "
               "Only runs of the sidebar's engine count; uploads name their configuration in their metadata, else the "
               "sidebar's is taken.")
    _csv_button(table, "measured-vs-predicted.csv", "csv_measured")


def explorer_tab(s: Scenario, h: Headline, ttft_slo: float, itl_slo: float, target: float) -> None:
    perrors = cached.corpus()[2]
    _, allp, _, _ = all_results(s)
    st.markdown("Every measured result (the project's `data/measurements/` and your uploads), best configuration "
                "first: per configuration, the load point with the most output tokens/s per GPU whose TTFT meets the "
                "objective.")
    for e in perrors:
        st.warning(f"Skipped: {e}")
    if allp.empty:
        st.info("No measured results yet: the project's `data/measurements/` is empty and nothing is uploaded. "
                "Upload points.jsonl or `vllm bench serve` JSON in the sidebar (*Your measurements*), or run "
                "`validate run ... --out data/measurements/<gpu>/<engine-version>/<name>`.", icon=":material/info:")
        return
    c = st.columns([2, 1, 3, 2, 2, 2])
    objectives = {"300 ms": 0.3, "1 s": 1.0, "3 s": 3.0, "10 s": 10.0, "any": None}
    if ms(ttft_slo) not in objectives:
        objectives = {ms(ttft_slo): ttft_slo, **objectives}
    obj = c[0].selectbox("TTFT objective", list(objectives), index=list(objectives).index(ms(ttft_slo)), key="ex_ttft",
                         persist_state="page", help="defaults to the sidebar's objective")
    stat = c[1].selectbox("statistic", ["p90", "median", "p99", "mean"], key="ex_stat", persist_state="page")
    models = c[2].multiselect("model", sorted(allp["model"].unique()), key="ex_model", persist_state="page", placeholder="all")
    engines = c[3].multiselect("engine", sorted(allp["engine"].unique()), key="ex_engine", persist_state="page", placeholder="all")
    precs = c[4].multiselect("precision", sorted(allp["precision"].unique()), key="ex_precision", persist_state="page", placeholder="all")
    shape = c[5].selectbox("shape", ["all"] + sorted(allp["shape"].unique()), key="ex_shape", persist_state="page")
    sel = allp
    for col, chosen in (("model", models), ("engine", engines), ("precision", precs)):
        if chosen:
            sel = sel[sel[col].isin(chosen)]
    if shape != "all":
        sel = sel[sel["shape"] == shape]
    best = best_configurations(sel, objectives[obj], None, stat)
    if best.empty:
        st.warning("No measured configuration meets this TTFT objective with these filters.", icon=":material/warning:")
        return
    st.vega_lite_chart(spec=charts.explorer(best), width="stretch")
    show = best.assign(ttft_ms=best["ttft_s"] * 1e3, itl_ms=best["itl_s"] * 1e3).drop(columns=["ttft_s", "itl_s"])
    top = show["output_tokens_per_s_per_gpu"].max()
    n = st.column_config.NumberColumn
    st.dataframe(show, hide_index=True, width="stretch", column_config={
        "num_gpus": n("GPUs", format="%d"), "engine_version": "version", "kv_precision": "KV",
        "load": "best load point",
        "output_tokens_per_s_per_gpu": st.column_config.ProgressColumn("out tok/s per GPU", format="%.0f", min_value=0,
                                                                       max_value=float(top) if top > 0 else 1.0),
        "output_tokens_per_s": n("out tok/s", format="%.0f"), "requests_per_s": n("req/s", format="%.2f"),
        "ttft_ms": n(f"TTFT {stat} (ms)", format="%.0f"), "itl_ms": n(f"ITL {stat} (ms)", format="%.1f"),
        "usd_per_million_output_tokens": n("$/M out", format="$%.3f")})
    _csv_button(show, "explorer.csv", "csv_explorer")


def formulas_tab(s: Scenario, h: Headline, ttft_slo: float, itl_slo: float, target: float) -> None:
    st.markdown("Every closed-form formula of the model, written once in sympy (`capacity/formulas.py`), compiled "
                "to numpy for the numbers above and rendered here. With this scenario's values where they apply.")
    values = cached.formula_values(s.model_dump_json())
    cols = st.columns(2)
    for i, (name, f) in enumerate(FORMULAS.items()):
        with cols[i % 2].container(border=True):
            st.markdown(f"**{name.replace('_', ' ')}** — {f.meaning}")
            st.latex(latex(name))
            if name in values:
                st.caption(f"Here: {values[name]}")


def launch_tab(s: Scenario, h: Headline, ttft_slo: float, itl_slo: float, target: float) -> None:
    model = s.model if s.model in catalog_ids() else "/path/to/your/model"
    try:
        memory = load_gpu(s.gpu).usable_memory_bytes
    except CapacityError:
        memory = None
    # an MoE whose replica holds more users than vLLM's largest default CUDA graph (sitting 6: graphs to 1,024)
    graph_tokens = engine_profile("vllm", memory, s.tp).max_cudagraph_tokens
    cfg = snippets.Launch(model=model, gpu=s.gpu, num_gpus=s.num_gpus, tp=s.tp, precision=s.precision,
                          kv_precision=s.kv_precision, max_model_len=-(-(s.isl + s.osl) // 1024) * 1024,
                          gpu_memory_bytes=memory,
                          large_moe_graphs=cached.is_moe(s.model) and h.max_concurrent_users > graph_tokens * h.replicas)
    st.markdown(f"Commands that start this configuration ({layout_text(s)}, max model length {cfg.max_model_len:,} "
                f"tokens: the request's {s.isl + s.osl:,} rounded up to a multiple of 1,024). "
                "Measure it with `validate sweep` or `vllm bench serve` and upload the result in *Measured vs predicted*.")
    t = st.tabs(["vLLM", "SGLang", "TensorRT-LLM", "Modal"])
    t[0].code(snippets.vllm(cfg), language="bash")
    t[1].code(snippets.sglang(cfg), language="bash")
    t[2].code(snippets.trtllm(cfg), language="bash")
    t[3].code(snippets.modal_app(cfg), language="python")

