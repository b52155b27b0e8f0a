"""Compare tab: the same question on other GPUs and weight precisions."""

from __future__ import annotations

import streamlit as st

from appkit import cached, charts, inputs
from appkit.compute import Headline
from appkit.tabs.format import _csv_button
from capacity import Scenario
from capacity.hardware import gpu_catalog


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

