"""Explorer tab: every measured result, best configuration first."""

from __future__ import annotations

import streamlit as st

from appkit import cached, charts
from appkit.compute import Headline
from appkit.explorer import best_configurations
from appkit.tabs.format import _csv_button, ms
from appkit.tabs.measured_tab import all_results
from capacity import Scenario


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
                "Upload points.jsonl or any file `validate import` reads in the sidebar (*Your measurements*), or run "
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

