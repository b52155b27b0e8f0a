"""Pipeline parallelism: stages, their weights and memory, and the load model's lanes (capacity/model/pipeline.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from capacity import Scenario, estimate, plan_for
from capacity.engines import get as engine
from capacity.errors import CapacityError
from capacity.model.architecture import load_model
from capacity.model.pipeline import stage_layers, stage_weight_bytes
from capacity.model.weights import weight_bytes


@pytest.mark.parametrize("layers, pp", [(32, 1), (32, 2), (80, 3), (126, 8), (61, 4), (5, 5)])
def test_stages_cover_every_layer_once_and_differ_by_at_most_one(layers, pp):
    bounds = stage_layers(layers, pp)
    assert bounds[0][0] == 0 and bounds[-1][1] == layers
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
    sizes = [b - a for a, b in bounds]
    assert max(sizes) - min(sizes) <= 1
    if layers % pp:  # vLLM's split: the extra layers go to the stages before the last, never to the last
        assert sizes[-1] == layers // pp


def test_a_stage_count_outside_the_layers_is_refused():
    with pytest.raises(ValueError):
        stage_layers(4, 5)
    with pytest.raises(CapacityError, match="pipeline stages"):
        plan_for(Scenario(model="meta-llama/Llama-3.1-8B", num_gpus=64, pp=64))


@pytest.mark.parametrize("model, fmt", [("meta-llama/Llama-3.1-405B", "fp8"), ("Qwen/Qwen3-235B-A22B", "fp8"),
                                        ("meta-llama/Llama-3.1-8B", "bf16")])
def test_the_stages_weights_add_up_to_the_model(model, fmt):
    m = load_model(model)
    whole = weight_bytes(m, fmt, 1, 1).total
    for pp in (2, 4, 8):
        stages = stage_weight_bytes(m, fmt, 1, 1, pp)
        # equal up to a tied embedding's second copy on the last stage
        extra = weight_bytes(m, fmt, 1, 1).embedding if m.tie_word_embeddings else 0.0
        assert sum(stages) == pytest.approx(whole + extra, rel=1e-9)
        w = weight_bytes(m, fmt, 1, 1)
        assert max(stages) < whole / pp * 1.1 + w.embedding + w.lm_head  # a layer share, plus the end stages' extras


def test_405b_fp8_on_eight_rtx_pro_6000_fits_only_as_a_pipeline():
    base = dict(model="meta-llama/Llama-3.1-405B", gpu="rtx-pro-6000", precision="fp8", engine="trtllm",
                isl=1024, osl=1024, load="burst:3000")
    with pytest.raises(CapacityError, match="does not fit"):
        plan_for(Scenario(**base, num_gpus=8, tp=1))
    e = estimate(Scenario(**base, num_gpus=8, pp=8))
    assert e.pp == 8 and e.replicas == 1 and e.output_tokens_per_s > 0
    assert e.weight_bytes == pytest.approx(weight_bytes(load_model(base["model"]), "fp8", 1, 1).total, rel=1e-6)
    assert e.card is not None and e.card.domain != "measured-here"
    assert any("pipeline parallel 8" in r for r in e.card.reasons)


def test_one_stage_is_the_model_without_a_pipeline():
    s = Scenario(model="Qwen/Qwen3-8B", isl=1024, osl=256, load="concurrency:16")
    a, b = estimate(s), estimate(s.model_copy(update={"pp": 1}))
    assert a.model_dump() == b.model_dump()


LLAMA70 = dict(model="meta-llama/Llama-3.3-70B-Instruct", gpu="h200-sxm", precision="fp8", isl=1024, osl=256)


def test_one_request_pays_every_stage_and_the_sends_between_them():
    tp2 = estimate(Scenario(**LLAMA70, num_gpus=2, tp=2, load="sync"))
    pp2 = estimate(Scenario(**LLAMA70, num_gpus=2, tp=1, pp=2, load="sync"))
    one = estimate(Scenario(**LLAMA70, num_gpus=1, tp=1, load="sync"))
    # a lone request runs the whole model on one stage's GPU after another: slower than TP 2, near one GPU's step
    assert pp2.itl_s > tp2.itl_s
    assert one.itl_s <= pp2.itl_s <= one.itl_s * 1.25


def test_a_full_pipeline_keeps_its_stages_busy():
    """At a load that fills both, a 2-stage pipeline serves about what two 1-GPU replicas serve (both hold the
    same weights once per GPU pair and the same KV), and never more than the replicas' sum by a large factor."""
    pipe = estimate(Scenario(**LLAMA70, num_gpus=2, pp=2, load="burst:2000"))
    reps = estimate(Scenario(**LLAMA70, num_gpus=2, tp=1, load="burst:1000"))  # the load is per replica
    assert 0.5 < pipe.output_tokens_per_s / reps.output_tokens_per_s < 2.0
    assert pipe.max_concurrent_requests > reps.max_concurrent_requests  # weights once, not twice


def test_the_load_is_dealt_out_over_the_batches_in_flight():
    e = estimate(Scenario(**LLAMA70, num_gpus=4, pp=4, load="concurrency:2"))
    assert "2 of the pipeline's 4 batches in flight busy" in e.regime
    sync = estimate(Scenario(**LLAMA70, num_gpus=4, pp=4, load="sync"))
    assert "one request at a time" in sync.regime


def test_the_ideal_bound_stays_below_the_prediction():
    for load in ("sync", "concurrency:32", "burst:500"):
        s = Scenario(**LLAMA70, num_gpus=4, tp=2, pp=2, load=load)
        real, ideal = estimate(s), estimate(s.model_copy(update={"ideal": True}))
        assert ideal.ttft_s <= real.ttft_s and ideal.itl_s <= real.itl_s
        assert ideal.requests_per_s >= real.requests_per_s


def test_tensorrt_llms_batch_limit_is_per_micro_batch_and_vllms_is_shared():
    assert engine("trtllm").profile().lane_running_limit(4) == engine("trtllm").profile().max_num_seqs
    assert engine("vllm").profile().lane_running_limit(4) == -(-engine("vllm").profile().max_num_seqs // 4)


@pytest.mark.parametrize("name, argv", [("vllm", ["--tensor-parallel-size", "2", "--pipeline-parallel-size", "4"]),
                                        ("sglang", ["--tp-size", "2", "--pp-size", "4"]),
                                        ("trtllm", ["--tp_size", "2", "--pp_size", "4"])])
def test_each_engine_writes_and_reads_its_pipeline_flag(name, argv):
    table = engine(name).flags
    assert table.scenario(argv) == {"tp": 2, "pp": 4, "num_gpus": 8}
    assert table.sets("pp", 4)
    assert table.scenario(table.argv(table.options_for({"tp": 2, "pp": 4}))) == {"tp": 2, "pp": 4, "num_gpus": 8}
    assert not table.argv(table.options_for({"pp": 1}))  # one stage writes no flag


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "capacity.cli", "estimate", *args], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("args, field", [(["--pp", "0"], "--pp"), (["--pp", "x"], "--pp"),
                                         (["--pp", "3", "--num-gpus", "4"], "num_gpus")])
def test_bad_pipeline_input_is_one_line_exit_2(args, field):
    r = _cli(*args)
    assert r.returncode == 2, r.stderr
    assert field in r.stderr and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_the_cli_takes_pp_and_says_so_in_json():
    r = _cli("--model", "meta-llama/Llama-3.3-70B-Instruct", "--precision", "fp8", "--num-gpus", "2", "--pp", "2",
             "--json")
    assert r.returncode == 0, r.stderr
    e = json.loads(r.stdout)
    assert e["pp"] == 2 and e["replicas"] == 1


@pytest.mark.parametrize("load, running", [("concurrency:3", 3), ("burst:5", 5), ("concurrency:8", 8)])
def test_uneven_loads_are_dealt_in_whole_shares(load, running):
    e = estimate(Scenario(model="Qwen/Qwen3-8B", num_gpus=3, pp=3, load=load, isl=1024, osl=256))
    assert e.running_requests == pytest.approx(running, rel=0.02)


def test_a_full_pipeline_goes_at_its_slowest_stages_pace():
    """Qwen3-8B's LM head (1.2 GB of 16 GB in BF16) sits on the last stage: at pp 8 that stage reads ~1.5× the mean."""
    p = plan_for(Scenario(model="Qwen/Qwen3-8B", num_gpus=8, pp=8))
    assert p.stage_max_share * 8 > 1.3
    full = estimate(Scenario(model="Qwen/Qwen3-8B", num_gpus=8, pp=8, load="concurrency:64", isl=1024, osl=256))
    one = estimate(Scenario(model="Qwen/Qwen3-8B", num_gpus=8, pp=8, load="sync", isl=1024, osl=256))
    assert full.itl_s > 1.3 * one.itl_s


def test_power_counts_each_stage_doing_its_share():
    one = estimate(Scenario(model="Qwen/Qwen3-8B", load="sync"))
    pipe = estimate(Scenario(model="Qwen/Qwen3-8B", num_gpus=4, pp=4, load="sync"))
    if one.power_w is not None:
        assert pipe.power_w / 4 < one.power_w


def test_sizing_counts_the_stages_gpus():
    from capacity.sizing import size

    s = Scenario(model="meta-llama/Llama-3.3-70B-Instruct", gpu="h200-sxm", precision="fp8", pp=2, isl=1024, osl=256)
    opt = size(s, 20.0, 2.0, 0.1, [1])[0]
    assert opt.fits and opt.num_gpus == opt.replicas * 2


def test_simulate_with_pp_is_one_line_exit_2():
    r = subprocess.run([sys.executable, "-m", "capacity.cli", "simulate", "--pp", "2", "--num-gpus", "2"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--pp" in r.stderr and "Traceback" not in r.stderr


def test_the_apps_load_curve_goes_at_the_pipelines_pace_as_the_estimate_does():
    """The app's concurrency curve and `capacity estimate` give one answer for a full pipeline (64 users over 8
    batches in flight, the closed forms): the curve once priced the lanes without the slowest stage's pace."""
    from appkit.compute import load_curve

    s = Scenario(model="Qwen/Qwen3-8B", num_gpus=8, pp=8, isl=1024, osl=256, method="closed-form")
    curve = load_curve(s, points=60)
    row = curve.iloc[(curve["concurrency"] - 64).abs().argmin()]
    e = estimate(s.model_copy(update={"load": f"concurrency:{int(row['concurrency'])}"}))
    assert row["itl_s"] == pytest.approx(e.itl_s, rel=1e-6)
    assert row["requests_per_s"] == pytest.approx(e.requests_per_s, rel=1e-6)
