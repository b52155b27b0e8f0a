"""trtllm-bench's own limits (the harness of TensorRT-LLM's perf overview), as the public corpus scores them."""

from __future__ import annotations

import pytest

from capacity.engines.trtllm import PROFILE, bench_limits, bench_model_inputs
from capacity.model.architecture import load_model
from validate.public.build import load_rows
from validate.public.scenario import scenario_for

GiB = 2**30


def test_the_harness_reads_deepseeks_head_size_as_hidden_over_heads():
    """DeepSeek's config has no head_dim, so trtllm-bench's ModelConfig falls back to hidden ÷ heads (7,168 ÷ 128)
    and, before its MLA case (PR #16707), priced every KV head at that size: ~25× the MLA latent."""
    m = load_model("deepseek-ai/DeepSeek-R1")
    _, head = bench_model_inputs(m, "fp8")
    assert head == 56
    assert 2 * m.num_kv_heads * head / (m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) == pytest.approx(24.9, abs=0.1)
    assert bench_model_inputs(load_model("Qwen/Qwen3-30B-A3B"), "bf16")[1] == 128  # the config's head_dim wins


def test_an_nvfp4_checkpoints_engine_size_is_about_half_its_bytes_to_the_harness():
    """The safetensors element count counts a packed FP4 byte once: PR #13498 measured the old estimate at
    183.70 GB for DeepSeek-V3.2-NVFP4 (the R1 architecture plus a small indexer) against 386.54 GB on disk."""
    elements, _ = bench_model_inputs(load_model("deepseek-ai/DeepSeek-R1"), "nvfp4")
    assert elements * 0.5 / GiB == pytest.approx(183.70, rel=0.06)
    fp8, _ = bench_model_inputs(load_model("deepseek-ai/DeepSeek-R1"), "fp8")
    assert fp8 == pytest.approx(671e9, rel=0.01)  # FP8 weights are one element each


def test_the_ladder_rounds_up_from_a_floor_of_64_and_2048():
    m = load_model("meta-llama/Llama-3.1-8B")
    small = bench_limits(8e9, 1.0, m.num_layers, m.num_kv_heads, m.head_dim, 1.0, 20e9, 1, 1, 30000, 2000)
    assert small == (64, 2048)  # a few requests fit: the floors
    batch, tokens = bench_limits(8e9, 1.0, m.num_layers, m.num_kv_heads, m.head_dim, 1.0, 141e9, 1, 1, 128, 128)
    assert batch == 4096 and tokens == 8192  # the batch cap, and 4,096 × (1 + 1) tokens on the 1,024 ladder


def test_deepseek_r1_fp4_on_four_b200s_gets_the_batch_its_heuristic_gives():
    """The overview's DeepSeek-R1 FP4 row at 1000/1000 on 4 B200s: ~310 requests of 2,000 tokens fit the harness's
    (overstated) KV, which its ladder rounds to 384 per rank; the old reading (192-wide heads, whole bytes per
    weight) gave the floor of 64."""
    rows = {r.row_id: r for r in load_rows()}
    s, flags = scenario_for(rows["trtllm-perf-v1.2:0000"])
    assert s["max_num_seqs"] == 384 and s["max_num_batched_tokens"] == 2048
    assert any("own batch and token limits" in f for f in flags)


def test_formats_the_harness_does_not_tune_keep_the_api_defaults():
    rows = [r for r in load_rows() if r.source_kind == "trtllm_perf" and r.weight_precision == "mxfp4"]
    assert rows
    s, flags = scenario_for(rows[0])
    assert (s["max_num_seqs"], s["max_num_batched_tokens"]) == (PROFILE.max_num_seqs, PROFILE.max_num_batched_tokens)
    assert any("not a format it tunes" in f for f in flags)
