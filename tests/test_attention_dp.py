"""Attention data parallel over a replica's TP GPUs (TensorRT-LLM DEP, SGLang --enable-dp-attention)."""

from __future__ import annotations

import pytest

from capacity import Scenario, estimate, plan_for
from capacity.engines import get as engine
from capacity.errors import CapacityError
from capacity.model.architecture import load_model
from capacity.model.weights import weight_bytes

R1 = dict(model="deepseek-ai/DeepSeek-R1", gpu="b200", num_gpus=8, tp=8, expert_parallel=True, precision="nvfp4",
          kv_precision="fp8", engine="trtllm", isl=1024, osl=1024)


def test_mla_under_attention_dp_holds_tp_times_the_sequences():
    """MLA's latent is one per token: TP stores it on every GPU, attention DP on one (its sequence's)."""
    tp, dp = plan_for(Scenario(**R1)), plan_for(Scenario(**R1, attention_dp=True))
    # MLA's latent per token is the same bytes on a GPU either way
    assert tp.memory.kv_bytes_per_token_layer == dp.memory.kv_bytes_per_token_layer
    # the pool is 8 GPUs' blocks, less what the replicated attention weights took from each
    assert 6 * tp.memory.num_blocks < dp.memory.num_blocks <= 8 * tp.memory.num_blocks
    assert dp.memory.weight_bytes > tp.memory.weight_bytes  # attention whole on every GPU


def test_gqa_under_attention_dp_holds_about_what_tp_holds():
    s = dict(model="Qwen/Qwen3-235B-A22B", gpu="h200-sxm", num_gpus=4, tp=4, expert_parallel=True, precision="fp8")
    tp, dp = plan_for(Scenario(**s)), plan_for(Scenario(**s, attention_dp=True))
    # KV heads split by TP or sequences split by DP: the same bytes per token over the replica
    assert dp.memory.num_blocks * dp.memory.kv_bytes_per_token_layer == pytest.approx(
        tp.memory.num_blocks * tp.memory.kv_bytes_per_token_layer * 4, rel=0.1)
    w = weight_bytes(load_model(s["model"]), dp.weight_format, 1, 4).attention
    assert dp.weights.attention == pytest.approx(w)


def test_large_batch_mla_decode_is_faster_under_attention_dp():
    """Each GPU reads only its own sequences' latent KV: at a full batch DP serves more tokens per second."""
    tp = estimate(Scenario(**R1, load="concurrency:512"))
    dp = estimate(Scenario(**R1, attention_dp=True, load="concurrency:512"))
    assert dp.output_tokens_per_s > tp.output_tokens_per_s
    assert dp.max_concurrent_requests > tp.max_concurrent_requests
    assert dp.card is not None and any("attention data parallel" in r for r in dp.card.reasons)
    assert dp.card.domain != "calibrated-on-public-data"


def test_the_bound_still_bounds_under_attention_dp():
    for load in ("sync", "concurrency:256", "burst:2000"):
        s = Scenario(**R1, attention_dp=True, load=load)
        real, ideal = estimate(s), estimate(s.model_copy(update={"ideal": True}))
        assert ideal.ttft_s <= real.ttft_s and ideal.itl_s <= real.itl_s
        assert ideal.requests_per_s >= real.requests_per_s


def test_tensorrt_llms_batch_limit_is_per_rank_under_attention_dp():
    p = plan_for(Scenario(**R1, attention_dp=True, max_num_seqs=64))
    assert p.max_num_seqs == 64 * 8


def test_attention_dp_without_tp_is_refused():
    with pytest.raises(CapacityError, match="attention_dp"):
        plan_for(Scenario(**{**R1, "tp": 1, "num_gpus": 1}, attention_dp=True))


def test_attention_dp_and_a_pipeline_combine():
    s = dict(model="Qwen/Qwen3-235B-A22B", gpu="rtx-pro-6000", num_gpus=4, tp=2, pp=2, expert_parallel=True,
             precision="nvfp4", engine="trtllm", isl=1024, osl=1024, load="burst:3000", max_num_seqs=128)
    p = plan_for(Scenario(**s, attention_dp=True))
    assert p.pp == 2 and p.max_num_seqs == 128 * 2  # per rank, and per micro-batch (TensorRT-LLM)
    assert estimate(Scenario(**s, attention_dp=True)).output_tokens_per_s > 0


def test_sglang_reads_and_writes_its_dp_attention_switch():
    table = engine("sglang").flags
    assert table.scenario(["--tp-size", "8", "--enable-dp-attention"])["attention_dp"] is True
    argv = table.argv(table.options_for({"tp": 8, "attention_dp": True, "replicas": 2}))
    assert "--enable-dp-attention" in argv and argv[argv.index("--dp-size") + 1] == "8"  # the attention's DP size
    assert "data_parallel_size" not in table.scenario(argv)
    assert "--enable-dp-attention" not in table.argv(table.options_for({"tp": 8}))


def test_tensorrt_llms_token_budget_is_per_rank_under_attention_dp():
    """Each attention-DP rank runs its own executor with its own max_num_tokens: a replica's step schedules tp × it
    (the closed forms' budget and the step simulator's alike)."""
    from capacity.estimate import calibration_for, load_context
    from capacity.loadmodel.simulate import EngineContext
    s = Scenario(**R1, attention_dp=True, max_num_batched_tokens=2048)
    p = plan_for(s)
    assert load_context(p, calibration_for(s, p), s, 1024, 1024).budget_tokens == 2048 * 8
    assert EngineContext.build(p, calibration_for(s, p).efficiency, False, 4096).token_budget == 2048 * 8
    plain = plan_for(Scenario(**R1, max_num_batched_tokens=2048))
    assert plain.profile.scheduled_tokens(plain.dp_ranks) == 2048


def test_per_sequence_host_work_is_shared_by_the_ranks_under_attention_dp():
    """Each rank's process does the host work of its own sequences side by side with the others, so a replica's step
    at a batch of B waits for B / tp sequences' host work, not B's (the fixed per-step costs stay)."""
    from capacity.estimate import calibration_for
    from capacity.model.steptime import step_parts
    s = Scenario(**R1, attention_dp=True)
    p, plain = plan_for(s), plan_for(Scenario(**R1))
    eff = calibration_for(s, p).efficiency
    dp, tp = step_parts(p.costs, eff, 1024.0, 1500.0, 0.0, 0.0), step_parts(plain.costs, eff, 1024.0, 1500.0, 0.0, 0.0)
    assert float(dp.host_s) == pytest.approx(float(tp.host_s) / 8)
    per_seq = eff.sequence_overhead_s * 1024
    assert float(tp.overhead_s) - float(dp.overhead_s) == pytest.approx(per_seq * (1 - 1 / 8), rel=1e-6)
