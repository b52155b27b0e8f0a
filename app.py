"""llm-capacity: the what-if calculator. `streamlit run app.py`

Pick a model, GPUs, precision, workload and latency objectives in the sidebar; the page answers how many
users, how fast and at what cost, shows why (memory, roofline, load curves), compares GPUs and precisions,
and holds the prediction against measured results. Every number comes from the `capacity` package."""

from __future__ import annotations

import dataclasses
import time

_T0 = time.perf_counter()

import streamlit as st  # noqa: E402

from appkit import cached, inputs, tabs  # noqa: E402
from capacity import Scenario  # noqa: E402
from capacity.model.architecture import catalog_ids  # noqa: E402
from capacity.errors import CapacityError, DoesNotFitError  # noqa: E402
from capacity.hardware import gpu_catalog  # noqa: E402

st.set_page_config(page_title="LLM capacity calculator", page_icon=":material/calculate:", layout="wide",
                   initial_sidebar_state="expanded")
st.html("""<style>
[data-testid="stMetricValue"] { font-size: 1.9rem; }
[data-testid="stSidebar"] [data-testid="stVerticalBlock"] { gap: 0.55rem; }
.block-container { padding-top: 2.2rem; }
</style>""")

DEFAULT_MODEL = "meta-llama/Llama-3.1-8B"
DEFAULT_GPU = "h200-sxm"


class InputError(Exception):
    """A sidebar input the model cannot take (bad upload, bad custom GPU); shown as st.error."""


def model_inputs(sb) -> tuple[str, str, str | None]:
    """Model: a catalog id or an uploaded config.json → (model, display name, error)."""
    sb.header("Model")
    source = sb.segmented_control("Model from", ["Catalog", "Upload config.json"], default="Catalog",
                                  key="model_source", label_visibility="collapsed", required=True)
    if source == "Catalog":
        ids = catalog_ids()
        model = sb.selectbox("Model", ids, index=ids.index(DEFAULT_MODEL), key="model", persist_state="page",
                             help="Hugging Face config.json files shipped with the package")
        return model, model, None
    up = sb.file_uploader("config.json of any Hugging Face model", type=["json"], key="config_upload",
                          help="Only the architecture is read: layers, heads, sizes, experts, quantization.")
    if up is None:
        sb.caption("Upload a config.json; until then the page shows the default model.")
        return DEFAULT_MODEL, "(no config uploaded yet)", None
    try:
        model, arch = inputs.uploaded_config(up.name, up.getvalue())
        return model, f"{arch.name} ({arch.architecture})", None
    except CapacityError as exc:
        return DEFAULT_MODEL, "(no config uploaded yet)", f"Uploaded model: {exc}"


def gpu_inputs(sb) -> tuple[str, float, str, str | None]:
    """Hardware: a catalog GPU or custom numbers → (gpu id or spec path, catalog price, price key, error)."""
    sb.header("Hardware")
    gpu_source = sb.segmented_control("GPU from", ["Catalog", "Custom numbers"], default="Catalog",
                                      key="gpu_source", label_visibility="collapsed", required=True)
    catalog = gpu_catalog()
    if gpu_source == "Catalog":
        ids = list(catalog)
        gpu = sb.selectbox("GPU", ids, index=ids.index(DEFAULT_GPU), key="gpu", format_func=inputs.gpu_label,
                           persist_state="page")
        return gpu, catalog[gpu].price_usd_per_gpu_hour or 0.0, gpu, None
    base = catalog[DEFAULT_GPU]
    name = sb.text_input("Name", "My GPU", key="cg_name", persist_state="page")
    c1, c2 = sb.columns(2)
    mem = c1.number_input("Memory (GB)", 1.0, 4096.0, base.usable_memory_bytes / 1e9, 1.0, key="cg_mem", persist_state="page",
                          help="usable memory in GB (10⁹ bytes), as the driver reports it")
    bw = c2.number_input("HBM (TB/s)", 0.05, 100.0, base.memory_bandwidth_bytes_per_s / 1e12, 0.1, key="cg_bw", persist_state="page")
    bf16 = c1.number_input("BF16 TFLOP/s", 1.0, 100000.0, base.dense_flops_per_s.bf16 / 1e12, 10.0, key="cg_bf16", persist_state="page",
                           help="dense (no sparsity)")
    fp8 = c2.number_input("FP8 TFLOP/s", 0.0, 100000.0, (base.dense_flops_per_s.fp8 or 0) / 1e12, 10.0, key="cg_fp8", persist_state="page",
                          help="0 = no FP8 tensor cores")
    fp4 = c1.number_input("FP4 TFLOP/s", 0.0, 100000.0, 0.0, 10.0, key="cg_fp4", persist_state="page", help="0 = no FP4 tensor cores")
    link = c2.number_input("Link (GB/s)", 1.0, 10000.0, base.interconnect_bytes_per_s_per_direction / 1e9, 50.0,
                           key="cg_link", persist_state="page", help="scale-up bandwidth per GPU per direction")
    try:
        gpu, _ = inputs.custom_gpu(name, mem, bw, bf16, fp8, fp4, link, 8, None)
        return gpu, 2.0, "custom", None
    except CapacityError as exc:
        return DEFAULT_GPU, 2.0, "custom", str(exc)


def deployment_inputs(sb) -> tuple[int, int, int, bool, str, str, str, int | None]:
    """GPUs, tensor and pipeline parallel, attention DP, weight and KV precision, engine, API servers → (num_gpus,
    tp, pp, attention_dp, precision, kv precision, engine, api_server_count or None)."""
    c1, c2 = sb.columns(2)
    num_gpus = c1.number_input("GPUs", 1, 1024, 1, key="num_gpus", help="all GPUs of the deployment")
    tps = [d for d in range(1, int(num_gpus) + 1) if num_gpus % d == 0 and d <= 64]
    if st.session_state.get("tp") not in tps:
        st.session_state["tp"] = 1
    tp = c2.selectbox("Tensor parallel", tps, key="tp", help="GPUs per pipeline stage; GPUs ÷ (TP × PP) replicas "
                      "serve in parallel")
    c1, c2 = sb.columns(2)
    rest = int(num_gpus) // int(tp)
    pps = [d for d in range(1, rest + 1) if rest % d == 0 and d <= 16]
    if st.session_state.get("pp") not in pps:
        st.session_state["pp"] = 1
    pp = c1.selectbox("Pipeline stages", pps, key="pp", help="pipeline parallel: a replica is TP × PP GPUs, each "
                      "stage holding its share of the layers (scored on published TensorRT-LLM rows only)")
    attention_dp = c2.checkbox("Attention DP", key="attention_dp", disabled=int(tp) == 1,
                               help="attention data parallel over the TP GPUs (TensorRT-LLM DEP, SGLang "
                               "--enable-dp-attention): each GPU the whole attention and its own sequences' KV")
    c1, c2 = sb.columns(2)
    precision = c1.selectbox("Weights", inputs.PRECISIONS, key="precision", format_func=lambda p: p.upper()
                             if p != "native" else "native", help="; ".join(f"{k}: {v}" for k, v in inputs.PRECISION_LABELS.items()))
    kv = c2.selectbox("KV cache", inputs.KV_PRECISIONS, key="kv_precision", format_func=str.upper)
    engines = inputs.engine_labels()
    engine = sb.radio("Engine profile", list(engines), key="engine", horizontal=True, help=inputs.engine_help())
    api = None
    if engines[engine] == "vllm":
        api = int(sb.number_input("API servers", 1, 16, 1, key="api_servers", help=inputs.api_servers_help()))
    return (int(num_gpus), int(tp), int(pp), bool(attention_dp) and int(tp) > 1, precision, kv, engines[engine],
            api if api and api > 1 else None)


def price_input(sb, default_price: float, price_key: str) -> float:
    """$ per GPU-hour, reset to the catalog's price when the GPU changes."""
    if st.session_state.get("_price_for") != price_key:
        st.session_state["price"] = float(default_price)
        st.session_state["_price_for"] = price_key
    return sb.number_input("Price ($ per GPU-hour)", 0.0, 1000.0, step=0.1, key="price", format="%.2f",
                           help="defaults to the catalog's price for the GPU; 0 = unknown (no cost figures)")


def workload_inputs(sb) -> tuple[int, int]:
    """Request shape → (input tokens, output tokens)."""
    sb.header("Workload")
    shape = sb.selectbox("Request shape", list(inputs.SHAPES), key="shape")
    if inputs.SHAPES[shape] is not None:
        return inputs.SHAPES[shape]
    c1, c2 = sb.columns(2)
    isl = int(c1.number_input("Input tokens", 0, 10_000_000, 1024, 64, key="isl", persist_state="page"))
    osl = int(c2.number_input("Output tokens", 0, 10_000_000, 128, 16, key="osl", persist_state="page"))
    return isl, osl


NGRAM = "n-gram (prompt lookup, no draft model)"


def feature_inputs(sb) -> dict:
    """Prefix caching and speculative decoding → Scenario fields (defaults: neither)."""
    ex = sb.expander("Prefix cache and speculative decoding")
    hit = ex.slider("Prefix-cache hit rate", 0.0, 0.95, 0.0, 0.05, key="prefix_hit",
                    help="share of prompt tokens already cached (shared system prompts, multi-turn chats)")
    k = int(ex.number_input("Draft tokens per step", 0, 16, 0, 1, key="spec_k",
                            help="speculative decoding: tokens drafted per verification step (0 = off)"))
    if not k:
        return {"prefix_hit_rate": hit}
    drafter = ex.selectbox("Drafter", [NGRAM] + catalog_ids(), key="spec_drafter",
                           help="a draft model is priced from its own architecture (its forwards, weights and KV "
                                "cache); n-gram drafts cost no model step")
    acc = ex.slider("Acceptance per draft token", 0.0, 0.99, 0.7, 0.01, key="spec_acc",
                    help="measure it: vLLM's counters (accepted ÷ drafted tokens)")
    return {"prefix_hit_rate": hit, "spec_draft_tokens": k, "spec_acceptance": acc,
            "spec_draft_model": None if drafter == NGRAM else drafter}


def objective_inputs(sb) -> tuple[float, float, float]:
    """Latency objectives and target load → (TTFT ms, ITL ms, requests/s)."""
    sb.header("Objectives")
    preset = sb.segmented_control("TTFT objective", list(inputs.TTFT_PRESETS_MS), default="1 s", key="ttft_preset",
                                  required=True, help="time to first token (p50 in the model)")
    ttft_ms = inputs.TTFT_PRESETS_MS[preset]
    c1, c2 = sb.columns(2) if ttft_ms is None else (None, sb)
    if ttft_ms is None:
        ttft_ms = c1.number_input("TTFT (ms)", 1.0, 600_000.0, 500.0, 50.0, key="ttft_ms", persist_state="page")
    itl_ms = c2.number_input("ITL objective (ms)", 0.1, 10_000.0, 50.0, 5.0, key="itl_ms",
                             help="inter-token latency: 50 ms = 20 tokens/s per user")
    target = sb.number_input("Target load (requests/s)", 0.0, 1e6, 10.0, 1.0, key="target_rps",
                             help="the GPUs needed to serve it within the objectives")
    return ttft_ms, itl_ms, float(target)


def measurements_input(sb) -> None:
    """Uploaded results (read from session state by the Measured and Explorer tabs)."""
    sb.header("Your measurements")
    sb.file_uploader("validate's points.jsonl (+ metadata.json), or any file `validate import` reads",
                     type=["jsonl", "json", "yaml", "yml"], accept_multiple_files=True, key="results_upload",
                     help="Shown against the prediction (Measured vs predicted) and ranked with the project's "
                          "results (Explorer). Other tools' files are read as `validate import` reads them: "
                          "`vllm bench serve --save-result`, guidellm, AIPerf (profile_export_aiperf.json, or "
                          "profile_export.jsonl with that summary), genai-perf (with its profile_export.json), llm-d "
                          "Benchmark Reports, InferenceX rows. A file that names no GPU or precision is taken to be "
                          "the configuration above.")


def sidebar() -> tuple[Scenario, float, float, float, str]:
    """The inputs → (scenario, TTFT objective s, ITL objective s, target requests/s, model display name)."""
    sb = st.sidebar
    model, display, model_error = model_inputs(sb)
    gpu, default_price, price_key, gpu_error = gpu_inputs(sb)
    num_gpus, tp, pp, attention_dp, precision, kv, engine, api_servers = deployment_inputs(sb)
    price = price_input(sb, default_price, price_key)
    isl, osl = workload_inputs(sb)
    features = feature_inputs(sb)
    ttft_ms, itl_ms, target = objective_inputs(sb)
    measurements_input(sb)
    if model_error or gpu_error:
        raise InputError(gpu_error or model_error)
    s = Scenario(model=model, gpu=gpu, num_gpus=num_gpus, tp=tp, pp=pp, attention_dp=attention_dp,
                 precision=precision, kv_precision=kv,
                 engine=engine, ideal=engine == "ideal", isl=isl, osl=osl, price_usd_per_gpu_hour=price or None,
                 api_server_count=api_servers, **features)
    return s, ttft_ms / 1e3, itl_ms / 1e3, target, display


def lap(name: str) -> None:
    """Server time of each part of this rerun (session_state['_timings'], read by tests/test_app_timings.py)."""
    now = time.perf_counter()
    laps = st.session_state.setdefault("_timings", {})
    laps[name] = (now - st.session_state.get("_lap", _T0)) * 1e3
    st.session_state["_lap"] = now


def main() -> None:
    st.session_state["_timings"] = {}
    st.session_state["_lap"] = _T0
    st.title("How many users, how fast, at what cost?")
    try:
        s, ttft_slo, itl_slo, target, display = sidebar()
        lap("sidebar")
    except InputError as exc:
        st.error(str(exc), icon=":material/error:")
        st.caption("A model's config.json is the small JSON file at the top of its Hugging Face repository "
                   "(…/blob/main/config.json). Only its architecture fields are read.")
        st.stop()
    gpu_name = gpu_catalog()[s.gpu].name if s.gpu in gpu_catalog() else "custom GPU"
    st.markdown(f"**{display}** on **{s.num_gpus} × {gpu_name}** ({tabs.layout_text(s)}) · weights "
                f"**{s.precision.upper()}**, KV **{s.kv_precision.upper()}** · {s.engine if not s.ideal else 'ideal roofline'}"
                f" · **{s.isl:,} in → {s.osl:,} out** tokens · objectives TTFT ≤ **{tabs.ms(ttft_slo)}**, "
                f"ITL ≤ **{tabs.ms(itl_slo)}**")
    sj = s.model_dump_json()
    try:
        h = cached.headline(sj, ttft_slo, itl_slo, target)
    except DoesNotFitError as exc:
        st.error(f"**Does not fit.** {exc}", icon=":material/block:")
        tabs.what_fits(s)
        st.stop()
    except CapacityError as exc:
        st.error(f"**{type(exc).__name__.replace('Error', ' error')}:** {exc}", icon=":material/error:")
        st.stop()
    except Exception as exc:  # noqa: BLE001  never a traceback on the page
        st.error(f"Unexpected error ({type(exc).__name__}): {exc}", icon=":material/error:")
        st.stop()
    if s.price_usd_per_gpu_hour is None:  # price 0 in the sidebar: no cost figures (the model would use the catalog's)
        h = dataclasses.replace(h, usd_per_million_output_tokens=None, usd_per_million_total_tokens=None,
                                usd_per_hour_for_target=None, price_usd_per_gpu_hour=None)
    lap("headline")
    tabs.headline_metrics(s, h, ttft_slo, itl_slo)
    lap("metrics")
    names = [":material/monitoring: Charts", ":material/compare_arrows: Compare GPUs",
             ":material/fact_check: Measured vs predicted", ":material/travel_explore: Explorer",
             ":material/function: Formulas", ":material/rocket_launch: Launch"]
    try:
        panes = st.tabs(names, key="tab", on_change="rerun")
    except TypeError:  # Streamlit without lazy tabs: render them all
        panes = st.tabs(names)
    for pane, render in zip(panes, tabs.TABS):
        if getattr(pane, "open", None) is False:
            continue
        with pane:
            try:
                render(s, h, ttft_slo, itl_slo, target)
            except CapacityError as exc:
                st.error(str(exc), icon=":material/error:")
            except Exception as exc:  # noqa: BLE001
                st.error(f"Unexpected error ({type(exc).__name__}): {exc}", icon=":material/error:")
        lap(render.__name__)
    st.caption(f"Model v{tabs.version()} · calibration: {h.calibration} · page computed in "
               f"{(time.perf_counter() - _T0) * 1e3:,.0f} ms", help="server time of this rerun")


main()
