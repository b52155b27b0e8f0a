"""The /metrics reader and the per-point summary, on text pages shaped like vLLM's and SGLang's (the live
servers are read in test_validate_vllm.py; SGLang cannot run on this CPU machine, so its page is written here)."""

from __future__ import annotations

import pytest

from validate.engines import metric_names
from validate.telemetry import Sample, TelemetrySeries, parse_prometheus, summarize

VLLM_PAGE = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 2.0
vllm:num_requests_waiting{engine="0",model_name="m"} 7.0
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 1.0
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000.0
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 250.0
vllm:num_preemptions_total{engine="0",model_name="m"} 4.0
vllm:prompt_tokens_total{engine="0",model_name="m"} 1000.0
vllm:request_success_total{engine="0",finished_reason="length",model_name="m"} 9.0
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 1.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 3.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 0.7
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 10.0
vllm:generation_tokens_total{engine="0",model_name="m"} NaN
"""


def test_vllm_page():
    values = parse_prometheus(VLLM_PAGE, metric_names("vllm"))
    assert values["running"] == 5 and values["waiting"] == 7  # summed over engine cores
    assert values["kv_usage"] == 0.75  # a share: averaged
    assert values["prefix_cache_hits"] == 250 and values["preemptions"] == 4 and values["requests_finished"] == 10
    assert "generation_tokens" not in values  # NaN is not a value
    assert values["ttft_sum_s"] == 0.7 and values["ttft_count"] == 10  # a histogram's sum and count, not buckets


def test_engine_latency_means_are_deltas_of_histogram_sums():
    """The point's own requests only: the means come from the change in _sum over the change in _count."""
    before = {"ttft_sum_s": 5.0, "ttft_count": 10, "queue_sum_s": 1.0, "queue_count": 10}
    after = {"ttft_sum_s": 7.0, "ttft_count": 20, "queue_sum_s": 1.5, "queue_count": 20}
    t = summarize([Sample(t_s=-0.01, values=before), Sample(t_s=1, values=after)])
    assert t.engine_mean_ttft_s == pytest.approx(0.2) and t.engine_mean_queue_s == pytest.approx(0.05)
    assert t.engine_mean_prefill_s is None  # not on the page: nothing invented
    assert "engine TTFT 200 ms (queued 50 ms)" in t.describe()


def test_sglang_page_hit_rate_from_cached_and_prompt_tokens():
    page = ('sglang:prompt_tokens_total{model_name="m"} 800\nsglang:cached_tokens_total{model_name="m"} 200\n'
            'sglang:num_retracted_requests_total{model_name="m"} 2\nsglang:num_retracted_reqs{pid="1"} 1\n'
            'sglang:num_running_reqs{model_name="m"} 12\nsglang:token_usage{model_name="m"} 0.4\n')
    before = parse_prometheus(page.replace("800", "0").replace(" 200", " 0").replace("} 2\n", "} 0\n"),
                              metric_names("sglang"))
    after = parse_prometheus(page, metric_names("sglang"))
    t = summarize([Sample(t_s=-0.01, values=before), Sample(t_s=1, values=after)], intended_hit_rate=0.25)
    assert t is not None and t.prefix_cache_hit_rate == 0.25 and t.preemptions == 2 and t.flags == []


def test_attach_mode_reads_any_engine():
    names = metric_names(None)
    assert "vllm:num_requests_running" in names["running"] and "sglang:num_running_reqs" in names["running"]


def test_summary_gauges_and_flags():
    def s(t, **v):
        return Sample(t_s=t, values=v)
    samples = [s(0, prefix_cache_queries=0, prefix_cache_hits=0, preemptions=1, running=0, kv_usage=0.0),
               s(1, running=4, kv_usage=0.995), s(2, running=8, kv_usage=1.0), s(3, running=2, kv_usage=0.3),
               s(4, prefix_cache_queries=1000, prefix_cache_hits=410, preemptions=141, running=0, kv_usage=0.0)]
    t = summarize(samples, intended_hit_rate=0.0)
    assert t.preemptions == 140 and t.max_running == 8 and t.mean_running == pytest.approx(14 / 3)
    assert t.kv_full_fraction == pytest.approx(2 / 3) and t.max_kv_usage == 1.0
    assert t.flags == ["prefix-cache hit rate 41% (intended 0%)"]
    assert "140 preemptions" in t.describe() and "KV full for 67% of the point" in t.describe()
    series = TelemetrySeries.of("c4", samples)
    assert series.columns["running"] == [0, 4, 8, 2, 0] and series.columns["prefix_cache_hits"][1] is None


def test_no_metrics_no_summary():
    assert summarize([Sample(t_s=0, values={}), Sample(t_s=1, values={})]) is None


def test_energy_at_tdp_bounds_every_measured_point():
    """The estimate's energy term is the GPUs' TDP over the output rate, and it is an upper bound: every committed
    point with NVML power drew less than the H200's 700 W on average (sitting 9: 190-630 W; single 0.5-s samples
    reach 708 W, power limiting acts over a window), so its measured joules per output
    token sit below TDP x duration / output tokens. The electricity cost is that energy at the price per kWh."""
    import glob
    import json
    from pathlib import Path

    from capacity import Scenario, estimate
    from capacity.hardware import load_gpu

    tdp_w = load_gpu("h200-sxm").tdp_watts
    root = Path(__file__).resolve().parents[1] / "data/measurements/h200"
    seen = 0
    for f in glob.glob(str(root / "*/*/*/*/points.jsonl")):
        for line in open(f):
            p = json.loads(line)
            g = p.get("gpu_telemetry")
            if not g or g.get("mean_power_w") is None or not p["total_output_tokens"]:
                continue
            seen += 1
            assert 0 < g["mean_power_w"] <= tdp_w and g["max_power_w"] <= 1.05 * tdp_w, (f, p["load"])
            assert g["joules_per_output_token"] <= tdp_w * p["duration_s"] / p["total_output_tokens"], (f, p["load"])
    assert seen >= 29
    e = estimate(Scenario(model="meta-llama/Llama-3.1-8B", gpu="h200-sxm", isl=1024, osl=128, load="concurrency:8",
                          price_usd_per_kwh=0.12))
    assert e.power_w_at_tdp == tdp_w
    assert e.joules_per_output_token_at_most == pytest.approx(tdp_w / e.output_tokens_per_s)
    assert 0 < e.power_w < e.power_w_at_tdp  # the predicted mean power (capacity/model/power.py), below the bound
    assert e.joules_per_output_token == pytest.approx(e.power_w / e.output_tokens_per_s)
    assert e.usd_per_million_output_tokens_energy == pytest.approx(e.joules_per_output_token * 1e6 / 3.6e6 * 0.12)
    assert estimate(Scenario(model="meta-llama/Llama-3.1-8B", gpu="h200-sxm")).usd_per_million_output_tokens_energy is None


def _gpu_here() -> bool:
    import importlib.util
    import shutil
    return shutil.which("nvidia-smi") is not None or importlib.util.find_spec("pynvml") is not None


def test_gpu_telemetry_absent_says_why():
    """Without NVML and nvidia-smi (the CPU build) there is no reader and the reason names both."""
    from validate.gpu_telemetry import open_reader

    if _gpu_here():
        pytest.skip("a GPU reader exists on this machine; test_gpu_telemetry_samples covers it")
    reader, why = open_reader()
    assert reader is None and why.startswith("no GPU telemetry (") and "nvml" in why and "nvidia-smi" in why


def test_gpu_telemetry_samples():
    """On a GPU machine: a second of samples gives a positive power and an energy over the window."""
    if not _gpu_here():
        pytest.skip("no GPU on this machine (no nvidia-smi, no pynvml): the NVML path runs on the device sittings")
    import time

    from validate.gpu_telemetry import GpuSampler, open_reader

    reader, why = open_reader()
    assert reader is not None, why
    with GpuSampler(reader, interval_s=0.2) as sampler:
        time.sleep(1.0)
    summary = sampler.summary(duration_s=1.0, output_tokens=100, requests=1)
    assert summary.samples >= 3 and summary.mean_power_w > 0 and summary.energy_j > 0
