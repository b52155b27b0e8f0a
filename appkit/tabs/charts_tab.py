"""Charts tab: memory per GPU, latency and cost against load, the roofline."""

from __future__ import annotations

import streamlit as st

from appkit import cached, charts, measured
from appkit.compute import Headline
from appkit.tabs.format import _csv_button
from appkit.tabs.measured_tab import measured_points
from capacity import Scenario


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
                 help="closed-loop concurrency sweep: C users, each sending its next request when the last one "
                      "ends. Dots: the closed forms (lockstep waves), at once for 40 concurrencies. Blue squares: the "
                      "step simulator at a few of them, as `capacity estimate` prices a closed loop (clients drift "
                      "apart, so TTFT is lower than the waves')")
    simulate = st.toggle("Step simulator at a few loads", value=False, key="simulate_curve",
                         help="adds the simulator's answer (blue squares) at up to 6 concurrencies: a second or so "
                              "per configuration, so it is off by default")
    simulated = cached.simulated_curve(sj) if simulate else None
    _, meas, _, _ = measured_points(s)
    reps = s.num_gpus // s.tp
    if not meas.empty and reps > 1:
        meas = meas.assign(output_tokens_per_s=meas["output_tokens_per_s"] * reps)
    c1, c2 = st.columns(2)
    c1.vega_lite_chart(spec=charts.latency(curve, "ttft_s", ttft_slo, ttft_slo, itl_slo, meas, simulated), width="stretch")
    c2.vega_lite_chart(spec=charts.latency(curve, "itl_s", itl_slo, ttft_slo, itl_slo, meas, simulated), width="stretch")
    note = ""
    if not meas.empty:
        note = (f" Black diamonds: {len(meas)} measured points for this configuration ({measured.STATISTIC} latency"
                + (f"; throughput of one replica × {reps}" if reps > 1 else "") + "), see *Measured vs predicted*.")
    st.caption("Each dot is a number of concurrent users (hover for it). Green: both objectives met. Red: more users "
               "than the KV cache holds, so requests wait in the queue."
               + (f" Blue squares: the step simulator at {len(simulated)} of those loads (what `capacity estimate` "
                  "gives for a closed loop)." if simulated is not None else "") + note)
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

