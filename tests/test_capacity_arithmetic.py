"""Hand calculations, with the arithmetic written out."""

from pathlib import Path

import pytest

from capacity.model.architecture import load_model
from capacity.engine import VLLM
from capacity.model.kv import kv_bytes_per_sequence, kv_bytes_per_token
from capacity.model.memory import kv_groups, plan_memory
from capacity.model.params import active_params_per_token, count_params
from capacity.model.precision import BYTES_PER_WEIGHT
from capacity.model.weights import weight_bytes

REPO = Path(__file__).resolve().parents[1]


def test_mistral_7b_kv_bytes_per_token():
    m = load_model("mistralai/Mistral-7B-v0.1")
    assert kv_bytes_per_token(m, 2.0) == 2 * 32 * 8 * 128 * 2 == 131_072


def test_mistral_80_users_at_4k():
    m = load_model("mistralai/Mistral-7B-v0.1")
    per_user = float(kv_bytes_per_sequence(m, 4096, 2.0))
    assert per_user == 4096 * 131_072  # the 4096-token window holds the whole 4K context
    assert 80 * per_user == pytest.approx(42.95e9, rel=1e-3)


def test_mistral_weights_about_14_5_gb():
    m = load_model("mistralai/Mistral-7B-v0.1")
    assert count_params(m).total == pytest.approx(7.24e9, rel=0.005)
    assert weight_bytes(m, "bf16").total == pytest.approx(14.5e9, rel=0.01)


def test_llama3_70b_kv_327680_bytes_per_token():
    m = load_model("meta-llama/Llama-3.3-70B-Instruct")
    assert kv_bytes_per_token(m, 2.0) == 80 * 2 * 8 * 128 * 2 == 327_680


def test_deepseek_v3_mla_latent_kv():
    m = load_model("deepseek-ai/DeepSeek-V3")
    assert kv_bytes_per_token(m, 2.0) == 61 * (512 + 64) * 2 == 70_272
    mha = 61 * 2 * 128 * (128 + 64) * 2  # the same heads stored uncompressed
    assert mha / 70_272 > 40


@pytest.mark.parametrize("model_id,total_b,active_b", [
    ("meta-llama/Llama-3.1-8B", 8.03, 7.50),
    ("meta-llama/Llama-3.1-405B", 405.8, 403.8),
    ("Qwen/Qwen3-30B-A3B", 30.5, 3.04),
    ("Qwen/Qwen3-235B-A22B", 235.1, 21.6),
    ("deepseek-ai/DeepSeek-V3", 671.0, 36.6),
    ("openai/gpt-oss-120b", 116.8, 5.13),
    ("openai/gpt-oss-20b", 20.9, 3.61),
    ("google/gemma-3-27b-it", 27.4, 27.0),  # active = total - 0.42 B vision tower (tied LM head counted)
])
def test_parameter_counts_match_published(model_id, total_b, active_b):
    m = load_model(model_id)
    assert count_params(m).total / 1e9 == pytest.approx(total_b, rel=0.01)
    assert active_params_per_token(m) / 1e9 == pytest.approx(active_b, rel=0.02)


def test_block_scaled_formats():
    assert BYTES_PER_WEIGHT["nvfp4"] == 0.5 + 1 / 16  # FP8 scale per 16 values
    assert BYTES_PER_WEIGHT["mxfp4"] == 0.5 + 1 / 32  # E8M0 scale per 32 values


def test_gpt_oss_120b_checkpoint_size():
    # MXFP4 experts, bf16 attention/embeddings: the published checkpoint is about 60.8 GiB
    m = load_model("openai/gpt-oss-120b")
    assert weight_bytes(m, "mxfp4").total / 2**30 == pytest.approx(60.8, rel=0.02)


def test_fp8_keeps_embeddings_and_head_in_bf16():
    m = load_model("meta-llama/Llama-3.1-8B")
    w8, w16 = weight_bytes(m, "fp8"), weight_bytes(m, "bf16")
    assert w8.embedding == w16.embedding == 128256 * 4096 * 2
    assert w8.attention == w16.attention / 2


def test_tensor_parallel_halves_weights_and_kv():
    m = load_model("meta-llama/Llama-3.1-8B")
    assert weight_bytes(m, "bf16", tp=2).attention == weight_bytes(m, "bf16").attention / 2
    assert kv_bytes_per_token(m, 2.0, tp=2) == 131_072 / 2


def test_gemma3_hybrid_groups_like_vllm():
    # 62 layers: every 6th global -> 10 full + 52 sliding; group size 10 -> 1 + 6 groups
    m = load_model("google/gemma-3-27b-it")
    assert (m.num_full_layers, m.num_sliding_layers, m.sliding_window) == (10, 52, 1024)
    assert kv_groups(m) == (7, 10)


def test_gpt_oss_groups_like_vllm():
    m = load_model("openai/gpt-oss-120b")
    assert kv_groups(m) == (2, 18)


def test_vllm_kv_tokens_from_memory_budget():
    m = load_model("meta-llama/Llama-3.1-8B")
    usable = 143_771 * 2**20
    w = weight_bytes(m, "bf16").total
    plan = plan_memory(m, usable, w, 2.0, VLLM)
    kv_mem = usable * 0.92 - w - plan.activation_bytes - VLLM.non_torch_bytes
    blocks = int(kv_mem // (4096 * 16) // 32)  # 4096 bytes per token per layer, 16-token blocks, 32 layers
    assert plan.num_blocks == blocks
    assert plan.kv_capacity_tokens == blocks * 16


def test_gemma3_reported_kv_tokens_follow_vllms_hybrid_rule():
    """vLLM prints max_model_len × (requests of max_model_len that the blocks hold) for hybrid models: a request
    holds every block in the full-attention group but only window − 1 + 2 × 8192 in-flight tokens (+1 block) in
    each of the 6 sliding groups. 61,941 blocks → 4.206 requests of 131,072 tokens → 551,3xx (the log: 551,292)."""
    m = load_model("google/gemma-3-27b-it")
    assert m.max_position_embeddings == 131_072  # transformers' default; the released config leaves it out
    plan = plan_memory(m, 143_771 * 2**20, weight_bytes(m, "bf16").total, 2.0, VLLM)
    per_request = 131_072 // 16 + 6 * ((1023 + 2 * 8192 + 15) // 16 + 1)
    assert plan.kv_capacity_tokens == int(plan.num_blocks / per_request * 131_072)
    assert plan.kv_capacity_tokens > 3.5 * plan.num_blocks // 7 * 16  # not blocks ÷ groups × block size


def test_an_all_windowed_models_reported_kv_tokens_count_requests_not_slots():
    """Mistral-7B-v0.1 windows every layer (4,096 tokens): vLLM 0.26 prints max_model_len × the requests of
    max_model_len the blocks hold, each holding window − 1 + 2 × 8,192 in-flight tokens (+1 block). Sitting 27 on one
    H200: 113.96 GiB of KV cache, "GPU KV cache size: 1,492,542 tokens" (45.55 × 32,768), 933,5xx slots."""
    import json

    m = load_model("mistralai/Mistral-7B-v0.1")
    assert m.num_full_layers == 0 and m.sliding_window == 4096
    plan = plan_memory(m, 143_771 * 2**20, weight_bytes(m, "bf16").total, 2.0, VLLM, max_model_len=32_768)
    per_request = (4095 + 2 * 8192 + 15) // 16 + 1
    assert plan.kv_capacity_tokens == int(plan.num_blocks / per_request * 32_768)
    facts = json.loads((REPO / "data/measurements/h200/vllm-0.26.0/sitting-27/Mistral-7B-v0.1-bf16-s27/facts.json")
                       .read_text())
    assert plan.kv_capacity_tokens == pytest.approx(facts["kv_cache_tokens"], rel=0.01)
    assert plan.num_blocks * 16 == pytest.approx(facts["kv_cache_bytes"] / (32 * 4096), rel=0.01)  # the slots


def test_mla_down_projections_are_replicated_under_tensor_parallelism():
    """vLLM and SGLang build DeepSeek's q_a and kv_a projections as replicated linears: each TP GPU holds them whole
    (0.92 B parameters over DeepSeek-R1's 61 layers), the rest of attention is split."""
    from capacity.model.architecture import load_model
    from capacity.model.params import attention_params_per_gpu, count_params, replicated_attention_params

    r1 = load_model("deepseek-ai/DeepSeek-R1")
    rep = replicated_attention_params(r1)
    assert rep == 61 * 7168 * (1536 + 512 + 64)
    assert attention_params_per_gpu(r1, 8) == (count_params(r1).attention - rep) / 8 + rep
    assert attention_params_per_gpu(r1, 1) == count_params(r1).attention
    llama = load_model("meta-llama/Llama-3.1-8B")
    assert replicated_attention_params(llama) == 0
    assert attention_params_per_gpu(llama, 2) == count_params(llama).attention / 2


def test_grouped_expert_gemms_are_slower_for_short_reductions():
    """moe_share: moe_matmul × the FLOP-weighted K / (K + K0) of the expert projections. Qwen3-30B-A3B's experts reduce
    over 2,048 (up/gate, 2/3 of the FLOPs) and 768 (down); Mixtral's over 4,096 and 14,336; TP splits the down
    projection's reduction (the expert's width), EP does not. K0 = 0 gives moe_matmul for every shape."""
    from capacity import Scenario, plan_for
    from capacity.calibration import Efficiency
    from capacity.model.steptime import moe_share

    eff = Efficiency(moe_matmul=0.6, moe_reduction_tokens=700.0)

    def costs(model, **kw):
        return plan_for(Scenario(model=model, gpu="h200-sxm", **kw)).costs

    qwen, mixtral = costs("Qwen/Qwen3-30B-A3B"), costs("mistralai/Mixtral-8x7B-v0.1")
    assert qwen.expert_reductions == ((2 / 3, 2048.0), (1 / 3, 768.0))
    assert moe_share(qwen, eff) == pytest.approx(0.6 / (2 / 3 * (1 + 700 / 2048) + 1 / 3 * (1 + 700 / 768)))
    assert moe_share(qwen, eff) < moe_share(mixtral, eff) < 0.6
    tp2 = costs("Qwen/Qwen3-30B-A3B", tp=2, num_gpus=2)
    ep2 = costs("Qwen/Qwen3-30B-A3B", tp=2, num_gpus=2, expert_parallel=True)
    assert tp2.expert_reductions[1][1] == 384.0 and ep2.expert_reductions[1][1] == 768.0
    assert moe_share(qwen, Efficiency(moe_matmul=0.6, moe_reduction_tokens=0.0)) == 0.6
    assert moe_share(costs("meta-llama/Llama-3.1-8B"), eff) == 0.6  # no experts: nothing to scale
