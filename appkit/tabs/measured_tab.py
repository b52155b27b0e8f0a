"""Measured vs predicted tab: the sidebar configuration's measured points against the model, as `validate
compare` computes them; and the measured results (project and uploads) the Charts and Explorer tabs use."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from appkit import cached, charts, measured
from appkit.compute import Headline
from appkit.explorer import latency_column
from appkit.measured import matches_scenario
from appkit.tabs.format import _csv_button
from capacity import Scenario
from capacity.hardware import gpu_catalog


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
    _typical_errors(df)
    st.vega_lite_chart(spec=charts.measured_vs_predicted(df), width="content")
    df = df.assign(ttft_ms=df["ttft_s"] * 1e3, itl_ms=df["itl_s"] * 1e3, pred_ttft_ms=df.get("pred_ttft_s") * 1e3,
                   pred_itl_ms=df.get("pred_itl_s") * 1e3)
    _points_table(df)
    st.caption(f"error % = predicted ÷ measured − 1. Statistic compared: the {measured.STATISTIC} TTFT and ITL of each "
               "point's requests against the model's means (the same as `validate compare` and docs/accuracy.md). "
               "Only runs of the sidebar's engine count; uploads name their configuration in their metadata, else the "
               "sidebar's is taken.")
    _telemetry_table(df)
    _csv_button(df[[c for c in (*POINT_COLUMNS, *TELEMETRY_COLUMNS) if c in df]], "measured-vs-predicted.csv",
                "csv_measured")


POINT_COLUMNS = ("origin", "source", "load", "isl", "osl", "requests_per_s", "pred_requests_per_s",
                 "err_requests_per_s_pct", "output_tokens_per_s", "pred_output_tokens_per_s",
                 "err_output_tokens_per_s_pct", "ttft_ms", "pred_ttft_ms", "err_ttft_s_pct", "itl_ms", "pred_itl_ms",
                 "err_itl_s_pct", "pred_error")
TELEMETRY_COLUMNS = ("engine_counters", "gpu_mean_power_w", "gpu_joules_per_output_token", "telemetry_note")


def _typical_errors(df: pd.DataFrame) -> None:
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


def _points_table(df: pd.DataFrame) -> None:
    n, pct = st.column_config.NumberColumn, "%+.0f%%"
    st.dataframe(df[[c for c in POINT_COLUMNS if c in df]], hide_index=True, width="stretch", column_config={
        "isl": n("in", format="%.0f"), "osl": n("out", format="%.0f"),
        "requests_per_s": n("req/s", format="%.2f"), "pred_requests_per_s": n("predicted", format="%.2f"),
        "err_requests_per_s_pct": n("error", format=pct),
        "output_tokens_per_s": n("out tok/s", format="%.0f"), "pred_output_tokens_per_s": n("predicted", format="%.0f"),
        "err_output_tokens_per_s_pct": n("error", format=pct),
        "ttft_ms": n("mean TTFT (ms)", format="%.1f"), "pred_ttft_ms": n("predicted", format="%.1f"),
        "err_ttft_s_pct": n("error", format=pct),
        "itl_ms": n("mean ITL (ms)", format="%.2f"), "pred_itl_ms": n("predicted", format="%.2f"),
        "err_itl_s_pct": n("error", format=pct), "pred_error": "prediction error"})


def _telemetry_table(df: pd.DataFrame) -> None:
    """What the engine's /metrics and the GPUs recorded during each point (validate's PointResult telemetry)."""
    if "engine_counters" not in df:
        return
    recorded = (df["engine_counters"] != measured.NO_COUNTERS) | df["gpu_mean_power_w"].notna()
    if not recorded.any():
        st.caption(f"Engine counters and GPU power: {measured.NO_COUNTERS} for these points (measured before "
                   "`validate` read the engine's /metrics and the GPUs, or imported from another tool's file).")
        return
    st.markdown(f"**What the engine and the GPUs recorded** during each point ({int(recorded.sum())} of {len(df)} "
                "points have it)")
    notes = df["telemetry_note"].astype(bool).any()  # a column only where some point says what it lacks
    cols = ["origin", "source", "load", *TELEMETRY_COLUMNS[:3], *(["telemetry_note"] if notes else [])]
    n = st.column_config.NumberColumn
    st.dataframe(df[cols], hide_index=True, width="stretch", column_config={
        "engine_counters": st.column_config.TextColumn(
            "engine counters", width="large", help="the engine's own /metrics over the point: running and waiting "
            "peaks, prefix-cache hit rate, preemptions, share of the point with the KV cache full, draft acceptance, "
            "and a FLAG where the counters contradict the workload"),
        "gpu_mean_power_w": n("GPU power (W)", format="%.0f", help="mean power of the point's GPUs, summed (NVML)"),
        "gpu_joules_per_output_token": n("J / output token", format="%.2f",
                                         help="GPU energy over the point ÷ its output tokens"),
        "telemetry_note": "what is missing"})
