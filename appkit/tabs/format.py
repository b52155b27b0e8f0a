"""Formatting shared by the page's sections: durations, numbers, prices, the layout, the CSV button."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from capacity import Scenario


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
    per = s.tp * s.pp
    reps = s.num_gpus // per if s.num_gpus % per == 0 else 0
    return (f"TP {s.tp}" + (f" × PP {s.pp}" if s.pp > 1 else "") + (" with attention DP" if s.attention_dp else "")
            + (f", {reps} replicas" if reps > 1 else ""))


def version() -> str:
    import capacity

    return capacity.__version__


def _csv_button(df: pd.DataFrame, name: str, key: str) -> None:
    st.download_button(":material/download: Download CSV", df.to_csv(index=False).encode(), file_name=name,
                       mime="text/csv", key=key, on_click="ignore")

