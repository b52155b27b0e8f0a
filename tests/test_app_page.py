"""The calculator's widget logic and values, through Streamlit's AppTest (the script runs in-process, no
browser). The numbers on the page are held against the capacity package's public API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from app_driver import FIXTURES, metrics, open_tab, rerun, run_app  # noqa: F401  (tests/app_driver.py)
from streamlit.testing.v1 import AppTest

from appkit import inputs

from capacity import Scenario, estimate
from capacity.model.formulas import FORMULAS
from capacity.sizing import size

ROOT = Path(__file__).resolve().parent.parent
TINY_LLAMA = ROOT / "tests" / "assets" / "tiny-llama" / "config.json"


@pytest.fixture
def empty_corpus(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMCAP_MEASUREMENTS_DIR", str(tmp_path / "no-measurements"))


@pytest.fixture
def fixture_corpus(monkeypatch):
    monkeypatch.setenv("LLMCAP_MEASUREMENTS_DIR", str(FIXTURES / "measurements"))


def summary(at: AppTest) -> str:
    """The line under the title that restates the scenario."""
    return next(m.value for m in at.markdown if " on **" in m.value)


def page_text(at: AppTest) -> str:
    parts = [e.value for kind in (at.markdown, at.caption, at.info, at.warning, at.error, at.success) for e in kind]
    return "\n".join(str(p) for p in parts)


def expected(s: Scenario, ttft_s: float = 1.0, itl_s: float = 0.05, target: float = 10.0) -> dict[str, str]:
    """The headline as the capacity API computes it, formatted as the page shows it."""
    alone = estimate(s.model_copy(update={"load": "sync"}))
    opt = size(s, target, ttft_s, itl_s, [s.tp])[0]
    at_rate = estimate(s.model_copy(update={"load": f"rate:{opt.max_rps_per_replica:.9g}"}))
    return {
        "Max concurrent users": f"{alone.max_concurrent_requests:,}",
        "Requests/s within objectives": f"{at_rate.requests_per_s:,.2f}",
        "Output tokens/s at that rate": f"{at_rate.output_tokens_per_s:,.0f}",
        "$ per million output tokens": f"${at_rate.usd_per_million_output_tokens:,.3f}",
        f"For {target:,.1f} requests/s": f"{opt.num_gpus} GPU" + ("s" if opt.num_gpus != 1 else ""),
    }


def test_default_scenario_matches_the_capacity_api(empty_corpus):
    at = run_app()
    shown = metrics(at)
    for label, value in expected(Scenario()).items():
        assert shown[label] == value, label
    assert not at.error
    assert any("Fits." in s.value for s in at.success)
    # the footer says how long the rerun took
    assert "page computed in" in at.caption[-1].value


def test_gpu_and_precision_change_the_numbers(empty_corpus):
    at = run_app()
    before = metrics(at)
    at.selectbox(key="gpu").set_value("b200")
    rerun(at)
    on_b200 = metrics(at)
    assert on_b200 != before
    for label, value in expected(Scenario(gpu="b200")).items():
        assert on_b200[label] == value, label
    at.selectbox(key="precision").set_value("fp8")
    rerun(at)
    fp8 = metrics(at)
    assert fp8["Output tokens/s at that rate"] != on_b200["Output tokens/s at that rate"]
    for label, value in expected(Scenario(gpu="b200", precision="fp8")).items():
        assert fp8[label] == value, label


def test_price_defaults_from_the_gpu_spec_and_follows_the_gpu(empty_corpus):
    at = run_app()
    assert at.number_input(key="price").value == pytest.approx(3.59)
    at.selectbox(key="gpu").set_value("h100-sxm")
    rerun(at)
    assert at.number_input(key="price").value == pytest.approx(2.99)
    at.number_input(key="price").set_value(1.0)
    rerun(at)
    assert "$1.00/h" in at.metric[6].proto.delta  # 1 GPU for the target at $1/h
    at.number_input(key="price").set_value(0.0)  # 0 = no price: no cost figures anywhere
    rerun(at)
    assert metrics(at)["$ per million output tokens"] == "—" and "$" not in at.metric[6].proto.delta


def test_objectives_presets_and_target(empty_corpus):
    at = run_app()
    at.segmented_control(key="ttft_preset").set_value("300 ms")
    at.number_input(key="target_rps").set_value(100.0)
    rerun(at)
    shown = metrics(at)
    for label, value in expected(Scenario(), ttft_s=0.3, target=100.0).items():
        assert shown[label] == value, label
    assert "TTFT ≤ **300 ms**" in summary(at)


def test_shape_presets_and_custom_lengths(empty_corpus):
    at = run_app()
    at.selectbox(key="shape").set_value("reasoning-like · 128 in → 1,024 out")
    rerun(at)
    for label, value in expected(Scenario(isl=128, osl=1024)).items():
        assert metrics(at)[label] == value, label
    at.selectbox(key="shape").set_value("custom")
    rerun(at)
    at.number_input(key="isl").set_value(4096)
    at.number_input(key="osl").set_value(512)
    rerun(at)
    for label, value in expected(Scenario(isl=4096, osl=512)).items():
        assert metrics(at)[label] == value, label


def test_zero_length_is_a_message_not_a_traceback(empty_corpus):
    at = run_app()
    at.selectbox(key="shape").set_value("custom")
    rerun(at)
    at.number_input(key="osl").set_value(0)
    rerun(at)
    assert at.error and "osl must be at least 1 token" in at.error[0].value
    assert not at.metric


def test_model_that_does_not_fit_says_why(empty_corpus):
    at = run_app()
    at.selectbox(key="model").set_value("meta-llama/Llama-3.1-405B")
    rerun(at)
    assert len(at.error) == 1
    msg = at.error[0].value
    assert "Does not fit" in msg and "Llama-3.1-405B" in msg and "Try more GPUs" in msg
    # the suggested fix works: 8 GPUs, TP 8, FP8
    at.number_input(key="num_gpus").set_value(8)
    rerun(at)
    at.selectbox(key="tp").set_value(8)
    at.selectbox(key="precision").set_value("fp8")
    rerun(at)
    assert not at.error
    assert metrics(at)["Max concurrent users"] != "—"


def test_an_engine_that_would_not_start_is_a_warning_not_fits(empty_corpus):
    """Qwen3-32B BF16 on one H100: vLLM refuses to start at the model's 40,960-token context (sitting 32 saw it), so
    the page warns instead of saying it fits, and names the flag that fixes it."""
    at = run_app()
    at.selectbox(key="model").set_value("Qwen/Qwen3-32B")
    at.selectbox(key="gpu").set_value("h100-sxm")
    rerun(at)
    assert not at.error and not any("**Fits.**" in s.value for s in at.success)
    warning = next(w.value for w in at.warning if "Does not start" in w.value)
    assert "40,960" in warning and "--max-model-len" in warning
    assert sum("refuse to start" in i.value for i in at.info) == 0  # said once, in the warning


def test_a_pipeline_sizes_what_tensor_parallel_cannot(empty_corpus):
    """Llama-3.1-405B FP8 on eight PCIe RTX Pro 6000s: one GPU per stage fits as a pipeline of 8, and the launch
    snippets write each engine's pipeline flag."""
    at = run_app()
    at.selectbox(key="model").set_value("meta-llama/Llama-3.1-405B")
    at.selectbox(key="gpu").set_value("rtx-pro-6000")
    at.number_input(key="num_gpus").set_value(8)
    rerun(at)
    at.selectbox(key="precision").set_value("fp8")
    rerun(at)
    assert at.error and "does not fit" in at.error[0].value.lower()
    at.selectbox(key="pp").set_value(8)
    rerun(at)
    assert not at.error
    assert metrics(at)["Max concurrent users"] != "—"
    open_tab(at, "Launch")
    code = "\n".join(c.value for c in at.code)
    assert "--pipeline-parallel-size 8" in code and "--pp-size 8" in code and "--pp_size 8" in code


def test_bad_tensor_parallel_is_a_message(empty_corpus):
    at = run_app()
    at.selectbox(key="model").set_value("google/gemma-3-27b-it")
    at.number_input(key="num_gpus").set_value(3)
    rerun(at)
    at.selectbox(key="tp").set_value(3)
    rerun(at)
    assert at.error and "does not divide" in at.error[0].value


def test_malformed_config_upload_shows_an_error(empty_corpus):
    at = run_app()
    at.segmented_control(key="model_source").set_value("Upload config.json")
    rerun(at)
    at.sidebar.file_uploader[0].set_value(("config.json", b'{"hidden_size": 4096, "num_hidden_layers": ', "application/json"))
    rerun(at)
    assert at.error and "not valid JSON" in at.error[0].value
    at.sidebar.file_uploader[0].set_value(("config.json", json.dumps({"hidden_size": 64}).encode(), "application/json"))
    rerun(at)
    assert at.error and "lacks required field 'num_hidden_layers'" in at.error[0].value
    at.sidebar.file_uploader[0].set_value(("config.json", b"\xff\xfe\x00garbage", "application/json"))
    rerun(at)
    assert at.error and "UTF-8" in at.error[0].value


def test_uploaded_config_is_estimated(empty_corpus):
    at = run_app()
    at.segmented_control(key="model_source").set_value("Upload config.json")
    rerun(at)
    at.sidebar.file_uploader[0].set_value(("config.json", TINY_LLAMA.read_bytes(), "application/json"))
    rerun(at)
    assert not at.error
    assert "LlamaForCausalLM" in summary(at)
    assert metrics(at)["Max concurrent users"] == "1,024"  # a tiny model: vLLM's 1,024-sequence cap binds


def test_custom_gpu_numbers(empty_corpus):
    at = run_app()
    at.segmented_control(key="gpu_source").set_value("Custom numbers")
    rerun(at)
    base = metrics(at)  # pre-filled with the H200's numbers: the same answer as the catalog H200 (no price)
    assert base["Max concurrent users"] == expected(Scenario())["Max concurrent users"]
    at.number_input(key="cg_bw").set_value(9.6)  # twice the bandwidth: decode (memory-bound) gets faster
    rerun(at)
    faster = metrics(at)
    assert float(faster["Output tokens/s at that rate"].replace(",", "")) > \
        float(base["Output tokens/s at that rate"].replace(",", ""))
    at.number_input(key="cg_mem").set_value(10.0)  # 10 GB: an 8B model in BF16 does not fit
    rerun(at)
    assert at.error and "does not fit" in at.error[0].value


def test_ideal_engine_is_an_upper_bound(empty_corpus):
    at = run_app()
    vllm = metrics(at)
    at.radio(key="engine").set_value("Ideal roofline")
    rerun(at)
    ideal = metrics(at)
    assert float(ideal["Output tokens/s at that rate"].replace(",", "")) > \
        float(vllm["Output tokens/s at that rate"].replace(",", ""))


def test_every_tab_renders(empty_corpus):
    at = run_app()
    assert len(at.tabs) == 6
    assert at.get("vega_lite_chart") or at.get("arrow_vega_lite_chart")
    open_tab(at, "Compare GPUs")
    assert any("Download CSV" in b.label for b in at.get("download_button"))
    open_tab(at, "Measured vs predicted")
    assert "No project measurements for this configuration yet" in page_text(at)
    open_tab(at, "Explorer")
    assert "No measured results yet" in page_text(at)
    open_tab(at, "Formulas")
    assert len(at.latex) == len(FORMULAS)
    open_tab(at, "Launch")
    code = "\n".join(c.value for c in at.code)
    assert "vllm serve meta-llama/Llama-3.1-8B" in code and "--tensor-parallel-size 1" in code
    assert "sglang.launch_server" in code and "trtllm-serve serve" in code and "modal.App" in code
    assert "--max-cudagraph-capture-size" not in code  # a dense model
    assert not at.error


def test_launch_snippet_gives_a_large_batch_moe_its_cuda_graphs(empty_corpus):
    """An MoE whose replica holds more than 512 users: vLLM's snippet captures graphs to 1,024 (sitting 6)."""
    at = run_app()
    at.selectbox(key="model").set_value("Qwen/Qwen3-30B-A3B").run()
    open_tab(at, "Launch")
    code = "\n".join(c.value for c in at.code)
    assert "--max-cudagraph-capture-size 1024" in code and "MoE above 512 running sequences" in code
    assert not at.error


def test_measured_overlay_and_explorer_with_fixture_corpus(fixture_corpus):
    at = run_app()
    open_tab(at, "Measured vs predicted")
    table = at.dataframe[0].value
    assert len(table) == 6 and set(table["origin"]) == {"project"}  # the BF16 fixture run matches the default
    # each row's error is its own prediction against its measurement (the synthetic fixture's distance
    # from the model changes whenever the model does, so only the arithmetic is pinned here)
    expected = (table["pred_requests_per_s"] / table["requests_per_s"] - 1) * 100
    assert ((table["err_requests_per_s_pct"] - expected).abs() < 0.01).all()
    assert table["pred_requests_per_s"].gt(0).all()
    at.sidebar.file_uploader[0].set_value(
        ("bench.json", (FIXTURES / "vllm-bench-serve-llama8b-c16.json").read_bytes(), "application/json"))
    rerun(at)
    table = at.dataframe[0].value
    assert len(table) == 7 and (table["origin"] == "uploaded").sum() == 1
    open_tab(at, "Explorer")
    best = at.dataframe[0].value
    assert list(best["precision"])[:2] == ["fp8", "bf16"]  # best first
    assert best["output_tokens_per_s_per_gpu"].is_monotonic_decreasing
    at.selectbox(key="ex_ttft").set_value("300 ms")
    rerun(at)
    assert (at.dataframe[0].value["ttft_ms"] <= 300).all()


def test_bad_results_upload_is_a_message(fixture_corpus):
    at = run_app()
    open_tab(at, "Measured vs predicted")
    at.sidebar.file_uploader[0].set_value(("points.jsonl", b"{not json}\n{\"load\": \"sync\"}\n", "application/json"))
    rerun(at)
    assert any("points.jsonl:1" in e.value and "JSON" in e.value for e in at.error)  # validate.results' message


def test_sglang_engine_profile_in_the_app(empty_corpus):
    """Choosing SGLang renders without error, and its own memory rule gives another KV size than vLLM's."""
    at = run_app()
    vllm = metrics(at)
    at.radio(key="engine").set_value("SGLang")
    rerun(at)
    assert not at.exception and not at.error
    sglang = metrics(at)
    assert sglang["Max concurrent users"] != vllm["Max concurrent users"]


@pytest.mark.parametrize("label", ["TensorRT-LLM", "Transformers"])
def test_every_engine_object_is_a_sidebar_choice(empty_corpus, label):
    """The engine choices are capacity/engines/' objects; the ones without a calibration render too."""
    import capacity.engines as capacity_engines

    at = run_app()
    assert at.radio(key="engine").options == [capacity_engines.get(n).title for n in capacity_engines.names()]
    at.radio(key="engine").set_value(label)
    rerun(at)
    assert not at.exception and not at.error
    open_tab(at, "Launch")
    assert not at.exception and not at.error


def test_simulator_points_on_the_load_curve_are_the_estimates(empty_corpus):
    """The Charts tab's blue squares are `capacity estimate` for those closed loops (one path: the estimate's
    simulator), and the toggle that adds them works; they are off by default so the curve stays instant."""
    from appkit import compute

    s = Scenario(model="meta-llama/Llama-3.1-8B", isl=1024, osl=128)
    sim = compute.simulated_curve(s)
    assert len(sim) >= 3
    for _, row in sim.iterrows():
        e = estimate(s.model_copy(update={"load": f"concurrency:{int(row['concurrency'])}"}))
        assert e.method == "simulate"
        assert row["ttft_s"] == pytest.approx(e.ttft_s, rel=1e-9) and row["itl_s"] == pytest.approx(e.itl_s, rel=1e-9)
    at = run_app()
    assert "Blue squares" not in page_text(at)
    at.toggle(key="simulate_curve").set_value(True)
    rerun(at)
    assert "Blue squares: the step simulator at" in page_text(at)


def test_api_servers_reach_the_estimate(empty_corpus):
    """vLLM's API-server count is a sidebar input: the headline is the capacity API's for that scenario; another
    engine has no such input."""
    at = run_app()
    at.sidebar.number_input(key="api_servers").set_value(2)
    at = rerun(at)
    assert not at.error
    shown = metrics(at)
    for label, value in expected(Scenario(api_server_count=2)).items():
        assert shown[label] == value, label
    open_tab(at, "Launch")
    assert "--api-server-count 2" in "\n".join(c.value for c in at.code)
    sglang = next(label for label, name in inputs.engine_labels().items() if name == "sglang")
    at.sidebar.radio(key="engine").set_value(sglang)
    at = rerun(at)
    assert not at.error and not [w for w in at.sidebar.number_input if w.key == "api_servers"]


def test_speculative_decoding_and_prefix_cache_reach_the_estimate(empty_corpus):
    """The sidebar's prefix-cache and speculative inputs become the Scenario's fields: the headline is the capacity
    API's for that scenario, a draft model included (priced from its own architecture)."""
    at = run_app()
    at.sidebar.selectbox(key="model").set_value("Qwen/Qwen3-8B")  # Qwen3-0.6B shares its vocabulary
    at.sidebar.slider(key="prefix_hit").set_value(0.5)
    at.sidebar.number_input(key="spec_k").set_value(4)
    at = rerun(at)
    at.sidebar.selectbox(key="spec_drafter").set_value("Qwen/Qwen3-0.6B")
    at.sidebar.slider(key="spec_acc").set_value(0.6)
    at = rerun(at)
    assert not at.error
    s = Scenario(model="Qwen/Qwen3-8B", prefix_hit_rate=0.5, spec_draft_tokens=4, spec_acceptance=0.6,
                 spec_draft_model="Qwen/Qwen3-0.6B")
    shown = metrics(at)
    for label, value in expected(s).items():
        assert shown[label] == value, label
    assert any(shown[k] != v for k, v in expected(Scenario(model="Qwen/Qwen3-8B")).items())  # the inputs changed it
    at.sidebar.selectbox(key="model").set_value("meta-llama/Llama-3.1-8B")  # another tokenizer: one line, no traceback
    at = rerun(at)
    assert not at.exception and any("vocabulary" in e.value for e in at.error)
