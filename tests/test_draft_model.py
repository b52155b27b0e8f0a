"""A draft model (vLLM's draft_model speculator) priced from its own architecture: cost, memory, sitting 12."""

import numpy as np
import pytest

from capacity.cli import main
from capacity.estimate import Scenario, calibration_for, estimate, plan_for
from capacity.errors import WorkloadError
from capacity.loadmodel.workload import Extras, _decode_step

S12 = dict(model="Qwen/Qwen3-8B", isl=1024, osl=256, spec_draft_tokens=4, spec_draft_model="Qwen/Qwen3-0.6B",
           spec_acceptance=0.0, method="closed-form")


def _step(draft: str | None, k: int, d: float = 16.0) -> float:
    s = Scenario(**{**S12, "spec_draft_model": draft, "spec_draft_tokens": k})
    p = plan_for(s)
    eff = calibration_for(s, p).efficiency
    return float(_decode_step(p.costs, eff, np.asarray(d), 1152.0, False, Extras(0.0, 0.0, k, 0.0)))


def test_draft_cost_grows_with_k():
    steps = [_step("Qwen/Qwen3-0.6B", k) for k in (1, 2, 4, 8)]
    assert all(b > a for a, b in zip(steps, steps[1:]))


def test_larger_draft_costs_more():
    assert _step("Qwen/Qwen3-8B", 4) > _step("Qwen/Qwen3-0.6B", 4) * 1.2


def test_acceptance_zero_still_prices_the_drafts():
    plain = estimate(Scenario(**{**S12, "spec_draft_model": None, "spec_draft_tokens": 0}))
    drafted = estimate(Scenario(**S12))
    assert drafted.itl_s > 3 * plain.itl_s


def test_draft_memory():
    plain = plan_for(Scenario(**{**S12, "spec_draft_model": None, "spec_draft_tokens": 0, "spec_acceptance": 0.0}))
    drafted = plan_for(Scenario(**S12))
    assert drafted.memory.weight_bytes - plain.memory.weight_bytes == pytest.approx(1.11 * 2**30, rel=0.02)
    assert drafted.kv_bytes_per_token == 147456 + 114688  # Qwen3-8B + Qwen3-0.6B, as the log's 106.66 GiB / 436,880
    assert drafted.memory.kv_capacity_tokens < 0.6 * plain.memory.kv_capacity_tokens
    # sitting 12: "Model loading took 16.38 GiB" (target + draft), "GPU KV cache size: 436,880 tokens"
    assert drafted.memory.weight_bytes / 2**30 == pytest.approx(16.38, rel=0.005)
    assert drafted.memory.kv_capacity_tokens == pytest.approx(436_880, rel=0.05)
    assert drafted.profile.max_num_scheduled_tokens == 7168  # "max_num_scheduled_tokens is set to 7168"


def test_sitting_12_itl():
    """Measured ITL 22.9 / 24.2 / 34.2 ms at 1 / 16 / 64 clients; the sync point sets draft_forward_host_s
    (vLLM profile), the other two are held out."""
    for load, measured in (("sync", 22.888e-3), ("concurrency:16", 24.173e-3), ("concurrency:64", 34.177e-3)):
        itl = estimate(Scenario(**S12, load=load)).itl_s
        assert itl == pytest.approx(measured, rel=0.25), load


def test_ratio_still_used_without_a_draft_model():
    base = dict(S12, spec_draft_model=None, spec_acceptance=0.6)
    assert estimate(Scenario(**base, spec_draft_cost=0.2)).itl_s > estimate(Scenario(**base)).itl_s


def test_cli_bad_draft_model(capsys):
    assert main(["estimate", "--model", "Qwen/Qwen3-8B", "--spec-draft-tokens", "4", "--spec-draft-model", "no/such"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("UnknownModelError") and "\n" not in err


def test_a_draft_with_another_vocabulary_is_refused_in_one_line(capsys):
    """The target verifies the draft's token ids: Qwen3-0.6B cannot draft for Llama-3.1-8B (151,936 vs 128,256)."""
    with pytest.raises(WorkloadError, match="not the target's"):
        plan_for(Scenario(**{**S12, "model": "meta-llama/Llama-3.1-8B"}))
    rc = main(["estimate", "--model", "meta-llama/Llama-3.1-8B", "--spec-draft-tokens", "4", "--spec-acceptance", "0.5",
               "--spec-draft-model", "Qwen/Qwen3-0.6B"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "\n" not in err and "vocabulary" in err
