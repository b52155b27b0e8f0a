"""Property tests: monotonicity, units and bounds that must hold for every input."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capacity import Scenario, estimate
from capacity.model.architecture import load_model
from capacity.calibration import IDEAL, Calibration
from capacity.engine import VLLM
from capacity.hardware import load_gpu
from capacity.plan import make_plan
from capacity.model.steptime import step_time_s
from capacity.loadmodel.workload import Slots, burst, closed_loop

MODEL = load_model("meta-llama/Llama-3.1-8B")
PLAN = make_plan(MODEL, load_gpu("h200-sxm"), "bf16", "bf16", VLLM)
EFF = Calibration().efficiency

lengths = st.integers(min_value=1, max_value=32_000)
batch = st.integers(min_value=1, max_value=1024)


@given(d=batch, ctx=lengths, extra=st.integers(1, 5000))
def test_step_time_grows_with_context(d, ctx, extra):
    assert step_time_s(PLAN.costs, EFF, d, ctx + extra) >= step_time_s(PLAN.costs, EFF, d, ctx)


@given(d=batch, ctx=lengths, more=st.integers(1, 512))
def test_step_time_grows_with_batch(d, ctx, more):
    assert step_time_s(PLAN.costs, EFF, d + more, ctx) >= step_time_s(PLAN.costs, EFF, d, ctx)


@given(d=batch, ctx=lengths, p=st.integers(0, 8192))
def test_ideal_step_is_a_lower_bound(d, ctx, p):
    real = step_time_s(PLAN.costs, EFF, d, ctx, p, ctx / 2 * 32)
    ideal = step_time_s(PLAN.costs, IDEAL.efficiency, d, ctx, p, ctx / 2 * 32, ideal=True)
    assert ideal <= real


@settings(max_examples=50)
@given(isl=st.integers(1, 8000), osl=st.integers(1, 4000), n=st.integers(1, 2000))
def test_ideal_throughput_bounds_calibrated(isl, osl, n):
    cap = Slots(PLAN.max_running(isl, osl), PLAN.max_concurrent(isl + osl), PLAN.max_concurrent(isl))
    args = (PLAN.costs,)
    real = burst(*args, EFF, 8192, isl, osl, n, cap, False)
    ideal = burst(*args, IDEAL.efficiency, 8192, isl, osl, n, cap, True)
    assert ideal.requests_per_s >= real.requests_per_s * (1 - 1e-9)


@settings(max_examples=50)
@given(isl=st.integers(1, 8000), osl=st.integers(2, 4000), c=st.integers(2, 512))
def test_more_users_more_throughput_slower_tokens(isl, osl, c):
    cap = Slots(PLAN.max_running(isl, osl), PLAN.max_concurrent(isl + osl), PLAN.max_concurrent(isl))
    one = closed_loop(PLAN.costs, EFF, 8192, isl, osl, 1, cap, False)
    many = closed_loop(PLAN.costs, EFF, 8192, isl, osl, c, cap, False)
    assert many.requests_per_s >= one.requests_per_s * 0.999
    assert many.itl_s >= one.itl_s * 0.999


@settings(max_examples=25, deadline=None)
@given(isl=st.integers(1, 4096), osl=st.integers(1, 2048))
def test_units_and_consistency(isl, osl):
    e = estimate(Scenario(isl=isl, osl=osl, load="concurrency:8"))
    assert abs(e.output_tokens_per_s - e.requests_per_s * osl) <= 1e-9 * e.output_tokens_per_s
    assert e.total_tokens_per_s >= e.output_tokens_per_s
    assert e.e2e_latency_s >= e.ttft_s
    assert 0 <= e.itl_s < 1 and 0 < e.ttft_s < 60
    assert e.itl_s > 0 or osl == 1  # one output token has no inter-token gap
    assert e.usd_per_million_total_tokens <= e.usd_per_million_output_tokens


def test_lower_memory_utilization_fewer_kv_tokens():
    a = estimate(Scenario(gpu_memory_utilization=0.9))
    b = estimate(Scenario(gpu_memory_utilization=0.8))
    assert b.kv_capacity_tokens < a.kv_capacity_tokens


def test_fp8_decodes_faster_than_bf16():
    bf16 = estimate(Scenario(precision="bf16"))
    fp8 = estimate(Scenario(precision="fp8"))
    assert fp8.itl_s < bf16.itl_s
    assert fp8.kv_capacity_tokens > bf16.kv_capacity_tokens


def test_fp8_kv_doubles_tokens_roughly():
    a = estimate(Scenario(kv_precision="bf16"))
    b = estimate(Scenario(kv_precision="fp8"))
    assert 1.98 < b.kv_capacity_tokens / a.kv_capacity_tokens < 2.02


def test_prefix_hits_cut_ttft_and_speculation_cuts_itl():
    base = estimate(Scenario(isl=4096, osl=256))
    assert estimate(Scenario(isl=4096, osl=256, prefix_hit_rate=0.8)).ttft_s < base.ttft_s
    spec = estimate(Scenario(isl=4096, osl=256, spec_acceptance=0.7, spec_draft_tokens=3, spec_draft_cost=0.05))
    assert spec.itl_s < base.itl_s


def test_latency_rises_toward_saturation():
    cap = estimate(Scenario(isl=1024, osl=128, load="burst:1000")).requests_per_s
    ttfts = [estimate(Scenario(isl=1024, osl=128, load=f"rate:{cap * x:.4f}")).ttft_s for x in (0.2, 0.6, 0.9, 0.99)]
    assert ttfts == sorted(ttfts)


def test_tensor_parallel_adds_kv_room_and_cuts_itl():
    one = estimate(Scenario(model="Qwen/Qwen3-32B"))
    two = estimate(Scenario(model="Qwen/Qwen3-32B", tp=2, num_gpus=2))
    assert two.kv_capacity_tokens > 2 * one.kv_capacity_tokens
    assert two.itl_s < one.itl_s


@given(d=batch, ctx=lengths, h=st.floats(1e-6, 2e-4))
def test_host_floor_bounds_the_step_and_does_not_shrink_with_tensor_parallel(d, ctx, h):
    """The pipelined host work (host_token_s per sequence) is a floor under the step on one GPU and at TP=2:
    splitting the GPU work over two GPUs leaves the host work as it is."""
    eff = EFF.model_copy(update={"host_token_s": h})
    tp2 = make_plan(MODEL, load_gpu("h200-sxm"), "bf16", "bf16", VLLM, num_gpus=2, tp=2)
    for plan in (PLAN, tp2):
        assert step_time_s(plan.costs, eff, d, ctx) >= h * d * (1 - 1e-12)
    assert step_time_s(PLAN.costs, eff, d, ctx) >= step_time_s(PLAN.costs, EFF.model_copy(update={"host_token_s": 0}), d, ctx)


def test_step_parts_broadcast_over_context_and_keys():
    """Arrays may come in through any input (a scalar batch with an array of contexts, say)."""
    import numpy as np

    from capacity.model.steptime import step_parts

    ctx = np.array([100.0, 2000.0, 30000.0])
    for ideal, eff in ((False, EFF), (True, IDEAL.efficiency)):
        parts = step_parts(PLAN.costs, eff, 8.0, ctx, 0.0, 0.0, ideal)
        assert parts.time_s.shape == parts.gpu_s.shape == parts.host_s.shape == (3,)
        assert np.all(np.diff(parts.time_s) > 0)
        keys = step_parts(PLAN.costs, eff, 0.0, 0.0, 512.0, ctx, ideal)
        assert keys.time_s.shape == (3,)


@settings(max_examples=50)
@given(isl=st.integers(1, 8000), osl=st.integers(2, 4000), n=st.integers(2, 2000))
def test_prefill_that_runs_alone_costs_decode_time(isl, osl, n):
    """An engine that runs prefill batches alone (SGLang) makes running sequences wait through them: per
    token no faster than mixing chunks into decode steps (vLLM). (Requests/s may go either way: a wave gets
    prefilled sooner when no decodes ride along.)"""
    cap = Slots(PLAN.max_running(isl, osl), PLAN.max_concurrent(isl + osl), PLAN.max_concurrent(isl))
    mixed = burst(PLAN.costs, EFF, 8192, isl, osl, n, cap, False, mixed=True)
    alone = burst(PLAN.costs, EFF, 8192, isl, osl, n, cap, False, mixed=False)
    assert alone.itl_s >= mixed.itl_s * 0.999


@settings(max_examples=30, deadline=None)
@given(isl=st.integers(1, 40_000), more=st.integers(1, 9000), engine=st.sampled_from(["vllm", "sglang"]))
def test_one_request_ttft_grows_with_its_prompt(isl, more, engine):
    """A lone request's prompt is done only after all its chunks (no dip when it needs one more chunk)."""
    short = estimate(Scenario(engine=engine, isl=isl, osl=16))
    long = estimate(Scenario(engine=engine, isl=isl + more, osl=16))
    assert long.ttft_s >= short.ttft_s * 0.999


def test_a_single_output_token_has_no_inter_token_latency():
    for engine in ("vllm", "sglang"):
        assert estimate(Scenario(engine=engine, isl=100, osl=1, load="burst:1000")).itl_s == 0


@settings(max_examples=50)
@given(d=st.integers(1, 2048), ctx=st.integers(1, 8192), launch=st.floats(0, 3e-3))
def test_a_step_without_cuda_graphs_lasts_at_least_its_launch(d, ctx, launch):
    """Above the largest CUDA graph the CPU launches the step op by op: a floor, never below the graphed step."""
    moe = make_plan(load_model("Qwen/Qwen3-30B-A3B"), load_gpu("h200-sxm"), "bf16", "bf16", VLLM)
    eff = EFF.model_copy(update={"eager_moe_layer_overhead_s": launch, "eager_layer_overhead_s": 0.0})
    graphed = moe.costs.__class__(**{**moe.costs.__dict__, "max_cudagraph_tokens": float("inf")})
    t, t_graphed = step_time_s(moe.costs, eff, d, ctx), step_time_s(graphed, eff, d, ctx)
    assert t >= t_graphed * (1 - 1e-12)
    if d > moe.costs.max_cudagraph_tokens:
        assert t >= launch * moe.costs.moe_layers * (1 - 1e-12)
    else:
        assert t == t_graphed


@settings(max_examples=30)
@given(d=st.integers(1, 512), ctx=st.integers(1, 8192), cost=st.floats(1e-6, 1e-4))
def test_weight_only_fp4_experts_pay_a_fixed_cost_per_moe_layer(d, ctx, cost):
    """MXFP4 experts on a GPU without FP4 tensor cores (the H200) run weight-only, with their own routing kernels:
    each MoE layer costs `fp4_moe_layer_s` more per step, whatever the batch. Where FP4 runs natively (B200), or
    the weights are not FP4, the term is absent."""
    gpt = load_model("openai/gpt-oss-20b")
    h200 = make_plan(gpt, load_gpu("h200-sxm"), "mxfp4", "bf16", VLLM)
    assert h200.costs.weight_only_fp4_moe_layers == gpt.num_moe_layers == 24
    assert make_plan(gpt, load_gpu("b200"), "mxfp4", "bf16", VLLM).costs.weight_only_fp4_moe_layers == 0
    assert make_plan(gpt, load_gpu("h200-sxm"), "bf16", "bf16", VLLM).costs.weight_only_fp4_moe_layers == 0
    base = EFF.model_copy(update={"host_token_s": 0.0, "fp4_moe_layer_s": 0.0})  # no host floor to hide it
    eff = base.model_copy(update={"fp4_moe_layer_s": cost})
    extra = float(step_time_s(h200.costs, eff, d, ctx) - step_time_s(h200.costs, base, d, ctx))
    assert abs(extra - cost * 24) <= 1e-9 * max(1.0, float(step_time_s(h200.costs, eff, d, ctx)))


def test_a_burst_whose_prompts_fit_enters_as_one_wave():
    """vLLM admits a request once its prompt's blocks are free: 1,000 × 512/512 on the MoE (cache for ~727 at full
    length, ~969 at the mean context) all run at once, and preemption then stretches the tail."""
    e = estimate(Scenario(model="Qwen/Qwen3-30B-A3B", isl=512, osl=512, load="burst:1000"))
    assert e.running_requests == 1000 and e.max_concurrent_requests < 1000
    roomy = estimate(Scenario(model="Qwen/Qwen3-30B-A3B", isl=512, osl=512, load="burst:700"))
    assert e.requests_per_s < roomy.requests_per_s * 1000 / 700  # the evicted recompute and decode again


def test_the_estimate_says_when_the_launch_floor_binds():
    default = estimate(Scenario(model="Qwen/Qwen3-30B-A3B", isl=512, osl=512, load="burst:1000"))
    graphed = estimate(Scenario(model="Qwen/Qwen3-30B-A3B", isl=512, osl=512, load="burst:1000",
                                max_cudagraph_tokens=1024))
    assert any("largest CUDA graph" in n for n in default.notes)
    assert not any("largest CUDA graph" in n for n in graphed.notes)
    assert graphed.requests_per_s > default.requests_per_s and graphed.itl_s < default.itl_s
    dense = estimate(Scenario(model="meta-llama/Llama-3.1-8B", isl=512, osl=512, load="burst:1000"))
    assert not any("largest CUDA graph" in n for n in dense.notes)  # its launch never outlasts the host floor


def test_the_eager_moe_launch_is_the_fused_moe_paths_only():
    """Above the largest CUDA graph vLLM launches the fused-MoE path op by op (eager MoE cost per MoE layer); MXFP4
    experts on the H200 run Triton's matmul_ogs, which does not pay it (sitting 20: gpt-oss-20b's 1,024-token prompt is
    6.2 ms over its 512-token one). The closed forms' step and the simulator's Stepper price it alike."""
    from capacity.model.stepper import Stepper

    eff = EFF.model_copy(update={"eager_moe_layer_overhead_s": 1e-3, "eager_layer_overhead_s": 0.0})
    gpt = make_plan(load_model("openai/gpt-oss-20b"), load_gpu("h200-sxm"), "mxfp4", "bf16", VLLM).costs
    qwen = make_plan(load_model("Qwen/Qwen3-30B-A3B"), load_gpu("h200-sxm"), "bf16", "bf16", VLLM).costs
    for c, launched in ((gpt, 0.0), (qwen, 1e-3 * qwen.moe_layers)):
        no_launch = c.__class__(**{**c.__dict__, "max_cudagraph_tokens": float("inf")})
        assert step_time_s(c, eff, 0, 0, 2048, 1024) - step_time_s(no_launch, eff, 0, 0, 2048, 1024) == \
            pytest.approx(launched, abs=1e-9)
        st_ = Stepper.build(c, eff, False)
        assert st_.time_s(0, 0.0, 2048.0, 1024.0) == pytest.approx(float(step_time_s(c, eff, 0, 0, 2048, 1024)), rel=1e-6)
