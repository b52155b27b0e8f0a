"""Altair charts of the calculator.

Each chart is an Altair template over *named* datasets, built once per set of display parameters (titles,
formats) and cached as a Vega-Lite spec; `spec(...)` adds the data of this rerun. Building and validating
Altair charts costs 10–35 ms each, far more than the model, so a rerun never rebuilds one it has seen.
Inputs are the DataFrames of appkit.compute / appkit.measured (SI units); axes name their display units."""

from __future__ import annotations

import functools
import json

import altair as alt
import numpy as np
import pandas as pd

PARTS = ["Weights", "Activations", "Engine overhead", "KV cache", "Kept free"]
PART_COLORS = ["#4c78a8", "#f58518", "#b279a2", "#54a24b", "#d0d0d0"]
PRECISION_COLORS = {"bf16": "#4c78a8", "fp8": "#f58518", "fp4": "#54a24b", "int4": "#b279a2"}
STATUS = ["meets objectives", "misses objectives", "queued (KV full)"]
OK_COLORS = alt.Scale(domain=STATUS, range=["#2ca02c", "#ff7f0e", "#d62728"])


def spec(template: str, datasets: dict[str, pd.DataFrame], **params) -> dict:
    """A Vega-Lite spec: the cached template `template(**params)` with this rerun's datasets."""
    out = json.loads(_template(template, tuple(sorted(params.items()))))
    out["datasets"] = {name: df.reset_index(drop=True) for name, df in datasets.items()}
    return out


@functools.lru_cache(maxsize=256)
def _template(name: str, params: tuple) -> str:
    chart = TEMPLATES[name](**dict(params))
    d = chart.to_dict()
    d.pop("datasets", None)
    return json.dumps(d)


def _data(name: str) -> alt.NamedData:
    return alt.NamedData(name=name)


# ---------- templates ----------

def _memory() -> alt.LayerChart:
    base = alt.Chart(_data("memory"))
    bars = base.mark_bar(height=40).encode(
        x=alt.X("start:Q", title="GB per GPU (10⁹ bytes)", axis=alt.Axis(tickCount=8)), x2="end:Q",
        color=alt.Color("part:N", title=None, sort=PARTS, scale=alt.Scale(domain=PARTS, range=PART_COLORS),
                        legend=alt.Legend(orient="top", direction="horizontal")),
        tooltip=[alt.Tooltip("part:N", title="part"), alt.Tooltip("GB:Q", format=",.2f", title="GB"),
                 alt.Tooltip("GiB:Q", format=",.2f", title="GiB"), alt.Tooltip("share:Q", format=".1%"),
                 alt.Tooltip("what:N", title="what")],
    )
    text = base.mark_text(color="white", fontWeight="bold").encode(x="mid:Q", text="label:N")
    return (bars + text).properties(height=90)


def _roofline() -> alt.LayerChart:
    x = alt.X("intensity:Q", scale=alt.Scale(type="log"), title="arithmetic intensity (FLOP per byte of HBM traffic)",
              axis=alt.Axis(values=[1, 10, 100, 1_000, 10_000, 100_000], format=",~r"))
    y = alt.Y("tflops:Q", scale=alt.Scale(type="log"), title="FLOP/s per GPU (TFLOP/s)",
              axis=alt.Axis(values=[0.1, 1, 10, 100, 1_000, 10_000], format=",~r"))
    roof = alt.Chart(_data("roof")).mark_line(strokeWidth=2.5, color="#555").encode(
        x=x, y=y, strokeDash=alt.StrokeDash("roof:N", title="roof", legend=alt.Legend(orient="bottom")))
    ridge = alt.Chart(_data("ridge")).mark_rule(strokeDash=[2, 3], color="#999").encode(x="intensity:Q")
    tooltip = [alt.Tooltip("label:N", title="step"), alt.Tooltip("intensity:Q", format=",.1f", title="FLOP/byte"),
               alt.Tooltip("tflops:Q", format=",.1f", title="achieved TFLOP/s"),
               alt.Tooltip("time_ms:Q", format=",.2f", title="step time (ms)")]
    pts = alt.Chart(_data("points"))
    trail = pts.transform_filter("datum.step == 'decode'").mark_line(color="#4c78a8", opacity=0.5).encode(
        x=x, y=y, order="batch:Q")
    dots = pts.mark_circle(size=70).encode(
        x=x, y=y, tooltip=tooltip,
        color=alt.Color("step:N", scale=alt.Scale(domain=["prefill", "decode"], range=["#e45756", "#4c78a8"]),
                        legend=alt.Legend(orient="bottom", title="step")))
    marked = pts.transform_filter("datum.mark != ''")
    big = marked.mark_point(size=220, filled=False, strokeWidth=2, color="black").encode(x=x, y=y, tooltip=tooltip)
    # labels: the objective's point above-left, the KV-full point below-right (they sit close together)
    left = marked.transform_filter("datum.mark == 'decode at objective'").mark_text(
        align="right", dx=-12, dy=-10, fontSize=12).encode(x=x, y=y, text="mark:N")
    below = marked.transform_filter("datum.mark == 'decode, KV-full'").mark_text(
        align="left", dx=10, dy=14, fontSize=12).encode(x=x, y=y, text="mark:N")
    right = marked.transform_filter("datum.mark != 'decode at objective' && datum.mark != 'decode, KV-full'").mark_text(
        align="left", dx=12, dy=12, fontSize=12).encode(x=x, y=y, text="mark:N")
    return alt.layer(roof, ridge, trail, dots, big, left, below, right).properties(height=360)


def _latency(title: str) -> alt.LayerChart:
    x = alt.X("output_tokens_per_s:Q", title="output tokens/s (all GPUs)")
    y = alt.Y("ms:Q", title=title, scale=alt.Scale(type="log"))
    curve = alt.Chart(_data("curve"))
    line = curve.mark_line(color="#999").encode(x=x, y=y, order="concurrency:Q")
    dots = curve.mark_circle(size=55).encode(
        x=x, y=y, color=alt.Color("status:N", scale=OK_COLORS, title=None, legend=alt.Legend(orient="bottom")),
        tooltip=[alt.Tooltip("concurrency:Q", title="concurrent users", format=",.0f"),
                 alt.Tooltip("ms:Q", title=title, format=",.1f"),
                 alt.Tooltip("output_tokens_per_s:Q", title="output tok/s", format=",.0f"),
                 alt.Tooltip("requests_per_s:Q", title="requests/s", format=",.2f")])
    rule = alt.Chart(_data("objective"))
    rule_line = rule.mark_rule(strokeDash=[6, 4], color="#d62728", strokeWidth=2).encode(y="ms:Q")
    rule_text = rule.mark_text(align="left", dx=4, dy=-7, color="#d62728").encode(y="ms:Q", x=alt.value(4), text="label:N")
    measured = alt.Chart(_data("measured")).mark_point(shape="diamond", size=110, filled=True, color="black",
                                                        opacity=0.8).encode(
        x=x, y=y, tooltip=[alt.Tooltip("load:N", title="measured load"), alt.Tooltip("source:N"),
                           alt.Tooltip("ms:Q", title=f"measured median {title}", format=",.1f"),
                           alt.Tooltip("output_tokens_per_s:Q", title="measured output tok/s", format=",.0f")])
    sim = alt.Chart(_data("simulated"))
    sim_line = sim.mark_line(color="#1f77b4", strokeDash=[3, 3]).encode(x=x, y=y, order="concurrency:Q")
    sim_dots = sim.mark_square(size=60, color="#1f77b4", filled=False).encode(
        x=x, y=y, tooltip=[alt.Tooltip("concurrency:Q", title="concurrent users (simulated)", format=",.0f"),
                           alt.Tooltip("ms:Q", title=f"simulated {title}", format=",.1f"),
                           alt.Tooltip("output_tokens_per_s:Q", title="output tok/s", format=",.0f")])
    return alt.layer(line, dots, sim_line, sim_dots, rule_line, rule_text, measured).properties(height=300)


def _cost(title: str) -> alt.LayerChart:
    x = alt.X("concurrency:Q", scale=alt.Scale(type="log", nice=False), title="concurrent users (all GPUs)")
    tips = [alt.Tooltip("concurrency:Q", title="concurrent users", format=",.0f"),
            alt.Tooltip("usd_per_million_output_tokens:Q", title="$ / M output tokens", format="$,.3f"),
            alt.Tooltip("usd_per_million_total_tokens:Q", title="$ / M total tokens", format="$,.4f"),
            alt.Tooltip("ttft_s:Q", title="TTFT (s)", format=",.3f")]
    y = alt.Y("usd_per_million_output_tokens:Q", scale=alt.Scale(type="log"), title="$ per million output tokens")
    curve = alt.Chart(_data("curve"))
    line = curve.mark_line(color="#999").encode(x=x, y=y)
    dots = curve.mark_circle(size=55).encode(
        x=x, y=y, tooltip=tips, color=alt.Color("status:N", scale=OK_COLORS, title=None, legend=alt.Legend(orient="bottom")))
    chart = alt.layer(line, dots).properties(height=300)
    return chart.properties(title=title) if title else chart


def _compare(title: str, fmt: str, precisions: tuple[str, ...]) -> alt.LayerChart:
    base = alt.Chart(_data("compare")).encode(
        x=alt.X("short:N", title=None, sort=alt.EncodingSortField("order", op="min"), axis=alt.Axis(labelAngle=0)),
        xOffset=alt.XOffset("precision:N", sort=list(precisions)),
        y=alt.Y("value:Q", title=title),
    )
    bars = base.mark_bar().encode(
        color=alt.Color("precision:N", title="weights", scale=alt.Scale(
            domain=list(precisions), range=[PRECISION_COLORS.get(p, "#888") for p in precisions])),
        tooltip=[alt.Tooltip("label:N", title="GPU"), alt.Tooltip("precision:N"),
                 alt.Tooltip("weight_format:N", title="weight format"), alt.Tooltip("value:Q", title=title, format=fmt)])
    text = base.mark_text(dy=-6, fontSize=10).encode(text=alt.Text("value:Q", format=fmt))
    return (bars + text).properties(height=340)


def _measured() -> alt.FacetChart:
    kinds = alt.Scale(domain=["measured", "predicted"], range=["#e45756", "#4c78a8"])
    return alt.Chart(_data("mvp")).mark_line(point=alt.OverlayMarkDef(size=70)).encode(
        x=alt.X("point:N", sort=alt.EncodingSortField("order", op="min"), title="load point (by measured requests/s)",
                axis=alt.Axis(labelAngle=-30, labelExpr="split(datum.label, ' · ')[0]")),
        y=alt.Y("value:Q", title=None, scale=alt.Scale(zero=False)),
        color=alt.Color("kind:N", scale=kinds, title=None, legend=alt.Legend(orient="top")),
        strokeDash=alt.StrokeDash("kind:N", scale=alt.Scale(domain=["measured", "predicted"], range=[[1, 0], [6, 4]]),
                                  legend=None),
        detail="kind:N",
        tooltip=["point:N", "kind:N", alt.Tooltip("value:Q", format=",.4g")],
    ).properties(height=220, width=280).facet(
        column=alt.Column("metric:N", title=None, sort=["output tokens/s", "TTFT (s)", "ITL (s)"])
    ).resolve_scale(y="independent")


def _explorer() -> alt.Chart:
    return alt.Chart(_data("best")).mark_circle(size=120, opacity=0.85).encode(
        x=alt.X("ttft_ms:Q", title="TTFT at the best point (ms)"),
        y=alt.Y("output_tokens_per_s_per_gpu:Q", title="output tokens/s per GPU"),
        color=alt.Color("gpu:N", title="GPU"), shape=alt.Shape("precision:N", title="precision"),
        tooltip=["model:N", "config:N", "shape:N", "load:N",
                 alt.Tooltip("output_tokens_per_s_per_gpu:Q", format=",.0f", title="output tok/s per GPU"),
                 alt.Tooltip("ttft_ms:Q", format=",.0f", title="TTFT (ms)"), "source:N"],
    ).properties(height=280)


TEMPLATES = {"memory": _memory, "roofline": _roofline, "latency": _latency, "cost": _cost, "compare": _compare,
             "measured": _measured, "explorer": _explorer}


# ---------- specs with data ----------

def memory(df: pd.DataFrame) -> dict:
    end = df["GB"].cumsum()
    d = df.assign(start=end - df["GB"], end=end, mid=end - df["GB"] / 2,
                  label=[f"{g:,.1f} GB" if s > 0.06 else "" for g, s in zip(df["GB"], df["share"])])
    return spec("memory", {"memory": d.drop(columns=["bytes"])})


def roofline(roof: pd.DataFrame, pts: pd.DataFrame, info: dict) -> dict:
    return spec("roofline", {"roof": roof.assign(tflops=roof["flops_per_s"] / 1e12).drop(columns=["flops_per_s"]),
                             "points": pts.assign(tflops=pts["flops_per_s"] / 1e12).drop(columns=["flops_per_s"]),
                             "ridge": pd.DataFrame({"intensity": [info["ridge"]]})})


def _status(curve: pd.DataFrame, ttft_slo_s: float, itl_slo_s: float) -> np.ndarray:
    ok = (curve["ttft_s"] <= ttft_slo_s) & (curve["itl_s"] <= itl_slo_s)
    return np.where(curve["queued"], STATUS[2], np.where(ok, STATUS[0], STATUS[1]))


def latency(curve: pd.DataFrame, metric: str, slo_s: float, ttft_slo_s: float, itl_slo_s: float,
            measured: pd.DataFrame | None = None, simulated: pd.DataFrame | None = None) -> dict:
    """Output tokens/s (x) vs TTFT or ITL (y) over the concurrency sweep (closed forms), with the objective line
    and, when given, the step simulator's points (blue squares) and measured points (black diamonds; median
    latency)."""
    title = {"ttft_s": "TTFT (ms)", "itl_s": "ITL (ms)"}[metric]
    d = curve[["concurrency", "output_tokens_per_s", "requests_per_s"]].assign(
        ms=curve[metric] * 1e3, status=_status(curve, ttft_slo_s, itl_slo_s))
    rule = pd.DataFrame({"ms": [slo_s * 1e3], "label": [f"objective {slo_s * 1e3:,.0f} ms"]})
    if measured is not None and not measured.empty:
        m = pd.DataFrame({"output_tokens_per_s": measured["output_tokens_per_s"], "ms": measured[metric] * 1e3,
                          "load": measured["load"].astype(str), "source": measured["source"].astype(str)}).dropna()
    else:
        m = pd.DataFrame({"output_tokens_per_s": [], "ms": [], "load": [], "source": []})
    if simulated is not None and not simulated.empty:
        sim = simulated[["concurrency", "output_tokens_per_s"]].assign(ms=simulated[metric] * 1e3)
    else:
        sim = pd.DataFrame({"concurrency": [], "output_tokens_per_s": [], "ms": []})
    return spec("latency", {"curve": d, "objective": rule, "measured": m, "simulated": sim}, title=title)


def cost(curve: pd.DataFrame, ttft_slo_s: float, itl_slo_s: float, price_known: bool) -> dict:
    d = curve[["concurrency", "usd_per_million_output_tokens", "usd_per_million_total_tokens", "ttft_s"]].assign(
        status=_status(curve, ttft_slo_s, itl_slo_s))
    return spec("cost", {"curve": d}, title="" if price_known else "no price for this GPU: set $/GPU-hour in the sidebar")


def compare(df: pd.DataFrame, metric: str, title: str, fmt: str) -> dict:
    order = {g: i for i, g in enumerate(dict.fromkeys(df["gpu"]))}
    d = df[df["fits"] == True]  # noqa: E712
    names = d["gpu_name"].fillna(d["gpu"])
    d = pd.DataFrame({"gpu": d["gpu"], "precision": d["precision"], "weight_format": d["weight_format"],
                      "label": names, "short": names.map(short_gpu_name),
                      "value": pd.to_numeric(d[metric], errors="coerce"), "order": d["gpu"].map(order)})
    return spec("compare", {"compare": d}, title=title, fmt=fmt,
                precisions=tuple(dict.fromkeys(df["precision"])))


def short_gpu_name(name: str) -> str:
    for prefix in ("NVIDIA ", "AMD Instinct ", "AMD "):
        name = name.replace(prefix, "")
    return name.split(" (")[0]


def measured_vs_predicted(df: pd.DataFrame) -> dict:
    """Per metric, measured and predicted over the measured points (ordered by measured request rate)."""
    names = {"output_tokens_per_s": "output tokens/s", "ttft_s": "TTFT (s)", "itl_s": "ITL (s)"}
    rows = []
    for order, (_, p) in enumerate(df.sort_values("requests_per_s").iterrows()):
        point = f"{p['load']} · {p['source']} · {order}"
        for m, label in names.items():
            rows.append({"point": point, "order": order, "metric": label, "kind": "measured", "value": p.get(m)})
            rows.append({"point": point, "order": order, "metric": label, "kind": "predicted", "value": p.get(f"pred_{m}")})
    d = pd.DataFrame(rows)
    d["value"] = pd.to_numeric(d["value"], errors="coerce")
    return spec("measured", {"mvp": d.dropna(subset=["value"])})


def explorer(best: pd.DataFrame) -> dict:
    d = best.assign(ttft_ms=best["ttft_s"] * 1e3, config=best["gpu"] + " · " + best["precision"] + " · " + best["engine"])
    return spec("explorer", {"best": d[["model", "config", "shape", "load", "output_tokens_per_s_per_gpu", "ttft_ms",
                                        "source", "gpu", "precision"]]})
