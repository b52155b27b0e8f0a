"""The headline metrics above the tabs, and what fits when nothing does."""

from __future__ import annotations

import streamlit as st

from appkit import cached
from appkit.compute import Headline
from appkit.tabs.format import ms, num, usd
from capacity import Scenario
from capacity.engines import EngineProfile, engine_profile
from capacity.errors import CapacityError
from capacity.estimate import plan_for
from capacity.hardware import gpu_catalog
from capacity.model.power import shipped_power


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
    k = shipped_power()
    if h.power_w and k is not None:
        held = (f", MoE points held out at a median {k.held_out_median_abs_error:.0%} off"
                if k.held_out_median_abs_error is not None else "")
        st.caption(f"Power at that rate: {h.power_w:,.0f} W for all GPUs, {h.joules_per_output_token:.3g} J per output "
                   f"token (predicted from the work each request does; fitted on one {k.gpu} with random weights{held}: "
                   "docs/power.md)")
    accuracy_card(s, h)
    if h.reason:
        st.warning(f"**Objectives out of reach.** {h.reason}. Relax the objectives, use more GPUs per replica (TP), "
                   "a lower precision or a faster GPU.", icon=":material/warning:")
    elif h.start_refusal:  # the numbers hold once the engine is told to take shorter requests
        st.warning(f"**Does not start as configured.** {h.start_refusal}.", icon=":material/warning:")
    else:
        reps = f" per replica of {s.tp} GPUs" if s.tp > 1 else ""
        st.success(f"**Fits.** Per GPU, {h.weight_bytes_per_gpu / 1e9:,.1f} GB of {h.weight_format.upper()} weights "
                   f"leave {h.kv_cache_bytes_per_gpu / 1e9:,.1f} GB for the KV cache: {h.kv_capacity_tokens:,} tokens"
                   f"{reps}, {num(h.max_concurrent_users)} users of {ctx:,} tokens. Prefill is {h.prefill_bound}-bound, "
                   f"decode {h.decode_bound}-bound ({h.compute_precision.upper()} matmuls).",
                   icon=":material/check_circle:")
    for note in h.notes:
        st.info(note, icon=":material/info:")


def accuracy_card(s: Scenario, h: Headline) -> None:
    """The accuracy card of the headline's answer (at the objective rate, else one request alone): its domain, the
    slice's held-out error and the 90 % intervals (capacity/card.py)."""
    from capacity.card import METRIC_LABELS, card_rows
    from capacity.estimate import estimate

    load = f"rate:{h.rate_per_replica:.9g}" if h.rate_per_replica else "sync"  # as appkit.compute.headline
    try:
        card = estimate(s.model_copy(update={"load": load})).card
    except CapacityError:
        return
    if card is None:
        return
    errs = ", ".join(f"{METRIC_LABELS[m]} {a.median_abs_error * 100:.0f} %" for m, a in card.errors.items())
    iv = "; ".join(f"{label} {ms(lo)} – {ms(hi)}" for k, label in (("ttft_s", "TTFT"), ("itl_s", "ITL"))
                   if (lo_hi := card.intervals.get(k)) for lo, hi in [lo_hi])
    st.markdown(f"**Accuracy: {card.domain}** · slice {card.slice} · held-out median |error|: {errs or 'none'}"
                + (f" · 90 % interval at {'that rate' if h.rate_per_replica else 'one request alone'}: {iv}" if iv else ""),
                help="; ".join(card.reasons + card.notes) or "inside what the committed H200 measurements covered")
    with st.expander("Accuracy card", icon=":material/verified:"):
        st.table({"": [k for k, _ in card_rows(card)], "value": [v for _, v in card_rows(card)]})


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

