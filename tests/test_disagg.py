"""Disaggregated prefill/decode and multi-replica sizing (capacity/disagg.py, `capacity size --disagg`)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capacity.cli import main
from capacity.disagg import (FIRST_TOKEN_DECODE_STEPS, Link, decode_curve, exposed_transfer_s, kv_transfer_bytes,
                             kv_transfer_bytes_per_gpu, kv_transfer_time_s, link_catalog, one_p_one_d, pareto_mask,
                             prefill_alone_s, replica_imbalance, resolve_link, router_hit_rate, search)
from capacity.estimate import Scenario, calibration_for, plan_for, run_load
from capacity.hardware import load_gpu
from capacity.model.kv import attended_tokens_prefill
from capacity.sizing import size
from capacity.model.steptime import step_time_s

ROOT = Path(__file__).resolve().parents[1]
INFINITE = Link.model_construct(id="infinite", name="infinitely fast", scope="node", bytes_per_s=math.inf,
                                efficiency=1.0, latency_s=0.0, sources={})


def _plan(**kw):
    s = Scenario(**kw)
    p = plan_for(s)
    return s, p, calibration_for(s, p)


# --- KV transfer bytes -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kv", ["bf16", "fp8"])
@pytest.mark.parametrize("isl", [1, 128, 1024, 4096, 32000])
def test_kv_transfer_bytes_are_the_plans_kv_bytes_per_token_times_prompt_tokens(kv, isl):
    for model in ("meta-llama/Llama-3.1-8B", "Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-32B"):
        _, plan, _ = _plan(model=model, kv_precision=kv, isl=isl, osl=16)
        assert float(kv_transfer_bytes(plan, isl)) == pytest.approx(plan.kv_bytes_per_token * isl, rel=1e-12)


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_kv_shards_split_over_tp_and_are_replicated_beyond_the_kv_heads(tp):
    _, plan, _ = _plan(model="meta-llama/Llama-3.1-8B", tp=tp, num_gpus=tp, isl=2048)
    whole = float(kv_transfer_bytes(plan, 2048))
    shard = float(kv_transfer_bytes_per_gpu(plan, 2048))
    heads = plan.model.num_kv_heads  # 8
    assert shard * tp == pytest.approx(whole * max(tp, heads) / heads)


def test_sliding_window_layers_move_at_most_their_window():
    _, plan, _ = _plan(model="google/gemma-3-27b-it", isl=16000, osl=16)
    assert float(kv_transfer_bytes(plan, 16000)) < plan.kv_bytes_per_token * 16000 * 0.5


# --- link catalog and transfer time ----------------------------------------------------------------------------


def test_every_link_number_has_a_source_and_typical_figures_say_so():
    cat = link_catalog()
    assert {"nvlink4", "nvlink5", "ib-ndr", "ib-xdr", "roce-400g", "pcie-gen5"} <= set(cat)
    for link in cat.values():
        for field in ("bytes_per_s", "efficiency", "latency_s"):
            assert link.sources[field].strip()
        assert "typical" in link.sources["latency_s"] or "measured" in link.sources["latency_s"]
    assert cat["nvlink4"].bytes_per_s == load_gpu("h200-sxm").interconnect_bytes_per_s_per_direction
    assert cat["ib-ndr"].bytes_per_s == 400e9 / 8 and cat["ib-xdr"].bytes_per_s == 800e9 / 8


def test_auto_link_is_the_gpus_own_scale_up_link_within_a_node():
    node, net = resolve_link("auto", load_gpu("b200"))
    assert node.bytes_per_s == load_gpu("b200").interconnect_bytes_per_s_per_direction
    assert net.id == "ib-ndr"


def test_transfer_time_is_the_larger_shard_over_the_achieved_link():
    assert kv_transfer_time_s(1e9, 2e9, 100e9, 0.5) == pytest.approx(2e9 / 50e9)


@pytest.mark.parametrize("tx,tp", [(0.001, 0.05), (0.05, 0.001), (0.02, 0.02), (0.0, 0.01)])
def test_overlap_is_a_two_stage_pipeline_of_equal_layers(tx, tp):
    L = 32
    after = float(exposed_transfer_s(tx, tp, L, False, 1e-5))
    over = float(exposed_transfer_s(tx, tp, L, True, 1e-5))
    # the pipeline ends at t_p/L + t_x/L + (L-1)·max(t_p, t_x)/L; what it adds after the prefill is that - t_p
    end = tp / L + tx / L + (L - 1) * max(tp, tx) / L
    assert over == pytest.approx(end - tp + 1e-5)
    assert after == pytest.approx(tx + 1e-5)
    assert over <= after + 1e-15


# --- router ---------------------------------------------------------------------------------------------------


def test_router_imbalance_and_hit_rates():
    n = np.arange(1, 65)
    assert np.all(replica_imbalance(n, "round-robin", 10) == 1)
    imb = replica_imbalance(n, "prefix-aware", 64)
    assert imb[0] == 1 and np.all(np.diff(imb) > 0) and np.all(imb <= n)
    assert replica_imbalance(8, "prefix-aware", 1e6) < replica_imbalance(8, "prefix-aware", 100)
    # Raab & Steger at G = 1000 balls, N = 10 bins: max = 100 + sqrt(2·100·ln 10)
    assert float(replica_imbalance(10, "prefix-aware", 1000)) == pytest.approx((100 + math.sqrt(200 * math.log(10))) / 100)
    # random routing: the requests in flight are the balls; more in flight per replica, smaller excess
    busy, idle = replica_imbalance(8, "random", 0, 50.0), replica_imbalance(8, "random", 0, 0.5)
    assert 1 < float(busy) < float(idle) <= 8
    assert float(busy) == pytest.approx(1 + math.sqrt(2 * 8 * math.log(8) / 400))
    assert float(replica_imbalance(1, "random", 0, 3.0)) == 1.0
    assert np.allclose(router_hit_rate(n, "prefix-aware", 0.9), 0.9)
    assert float(router_hit_rate(1, "round-robin", 0.9)) == pytest.approx(0.9)
    assert float(router_hit_rate(5, "round-robin", 0.9)) == pytest.approx(0.5)
    assert float(router_hit_rate(20, "round-robin", 0.9)) == 0.0


# --- 1P1D without link cost or interference is the aggregated engine's steps ------------------------------------


@pytest.mark.parametrize("model", ["meta-llama/Llama-3.1-8B", "Qwen/Qwen3-30B-A3B"])
@pytest.mark.parametrize("isl,osl", [(1024, 128), (4096, 256), (128, 1024)])
def test_1p1d_with_an_infinitely_fast_link_reproduces_the_aggregated_step_times(model, isl, osl):
    s, plan, cal = _plan(model=model, isl=isl, osl=osl)
    # prefill: the aggregated engine's prefill-only step of the whole prompt (it fits the 8,192-token budget)
    keys = attended_tokens_prefill(plan.model, isl, 0.0)
    agg_prefill = float(step_time_s(plan.costs, cal.efficiency, 0.0, isl, isl, keys))
    pp = plan_for(s.model_copy(update={"osl": 1}))
    assert prefill_alone_s(pp, cal, s.model_copy(update={"osl": 1})) == pytest.approx(agg_prefill, rel=1e-12)
    # decode: the aggregated engine's decode-only step at every batch
    curve = decode_curve(plan, cal, s)
    agg_decode = step_time_s(plan.costs, cal.efficiency, curve.batch, isl + osl / 2, 0.0, 0.0)
    assert np.allclose(curve.step_s, agg_decode, rtol=1e-12)
    # the transfer costs nothing over an infinite link, so one request alone waits prefill + its first decode step
    p = one_p_one_d(s, "sync", 1, INFINITE)
    assert p.kv_transfer_s == 0.0
    assert p.itl_s == pytest.approx(float(curve.step_s[0]), rel=1e-9)
    prefill_ttft = float(run_load(pp, cal, s.model_copy(update={"osl": 1}), isl, 1, "rate", np.asarray([p.requests_per_s])).ttft_s[0])
    assert p.ttft_s == pytest.approx(prefill_ttft + FIRST_TOKEN_DECODE_STEPS * p.itl_s, rel=1e-9)


def test_a_real_link_adds_its_transfer_and_overlap_hides_most_of_it():
    s = Scenario(isl=4096, osl=256)
    slow = link_catalog()["pcie-gen5"]
    inf = one_p_one_d(s, "sync", 1, INFINITE)
    over = one_p_one_d(s, "sync", 1, slow, overlapped=True)
    after = one_p_one_d(s, "sync", 1, slow, overlapped=False)
    assert inf.ttft_s < over.ttft_s < after.ttft_s
    assert after.kv_transfer_s == pytest.approx(after.kv_transfer_bytes / (slow.bytes_per_s * slow.efficiency)
                                                + slow.latency_s, rel=1e-9)


def test_decode_curve_serves_more_at_larger_batches_and_finds_the_smallest_batch():
    s, plan, cal = _plan(isl=1024, osl=128)
    c = decode_curve(plan, cal, s)
    assert np.all(np.diff(c.requests_per_s) >= 0)
    b, itl, ok = c.at_rate(np.asarray([c.requests_per_s[9], c.requests_per_s[-1] * 1.01]))
    assert b[0] == 10 and ok[0] and not ok[1]


# --- the search -------------------------------------------------------------------------------------------------


def test_pareto_front_has_no_dominated_point():
    rng = np.random.default_rng(0)
    g = rng.integers(1, 20, 300)
    u = rng.random(300)
    keep = pareto_mask(g, u)
    for i in np.flatnonzero(keep):
        assert not np.any((g <= g[i]) & (u >= u[i]) & ((g < g[i]) | (u > u[i])))
    for i in np.flatnonzero(~keep):
        assert np.any(keep & (g <= g[i]) & (u >= u[i]))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=st.sampled_from(["meta-llama/Llama-3.1-8B", "Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-8B"]),
       shape=st.sampled_from([(1024, 128), (4096, 256), (128, 1024), (2048, 512)]),
       rps=st.floats(0.5, 120), ttft=st.floats(0.1, 3.0), itl=st.floats(0.004, 0.08),
       router=st.sampled_from(["round-robin", "random", "prefix-aware"]), transfer=st.sampled_from(["overlapped", "after-prefill"]))
def test_the_pick_is_never_worse_than_an_aggregated_layout_at_the_same_slo(model, shape, rps, ttft, itl, router, transfer):
    s = Scenario(model=model, isl=shape[0], osl=shape[1])
    ans = search(s, rps, ttft, itl, [1, 2, 4], router=router, transfer=transfer)
    agg_only = search(s, rps, ttft, itl, [1, 2, 4], router=router, transfer=transfer, disagg=False)
    sized = [o for o in size(s, rps, ttft, itl, [1, 2, 4]) if o.num_gpus]
    if ans.chosen is None:
        assert agg_only.chosen is None
        return
    c = ans.chosen
    assert c.ttft_s <= ttft and c.itl_s <= itl
    for other in ([agg_only.chosen] if agg_only.chosen else []) + ([ans.best_aggregated] if ans.best_aggregated else []):
        assert c.num_gpus <= other.num_gpus and c.usd_per_hour <= other.usd_per_hour + 1e-9
        if c.num_gpus == other.num_gpus:
            assert c.tokens_per_s_per_user >= other.tokens_per_s_per_user - 1e-9
    if router == "round-robin":  # the aggregated sizing answer (`capacity size`) never needs fewer GPUs
        for o in sized:
            assert c.num_gpus <= o.num_gpus
    assert ans.pareto_front[0].num_gpus == c.num_gpus


def test_search_refuses_bad_input_in_one_line():
    from capacity.errors import WorkloadError

    s = Scenario()
    for bad in (dict(target_rps=0), dict(target_rps=math.inf), dict(ttft_slo_s=-1), dict(tps=[0]), dict(tps=[])):
        kw = dict(target_rps=5.0, ttft_slo_s=1.0, itl_slo_s=0.05, tps=[1]) | bad
        with pytest.raises(WorkloadError):
            search(s, **kw)
    with pytest.raises(WorkloadError, match="unknown link"):
        search(s, 5, 1, 0.05, [1], link="nvlink9")


def test_a_model_that_does_not_fit_says_why_per_tp():
    ans = search(Scenario(model="meta-llama/Llama-3.1-405B"), 1, 5, 0.2, [1, 8])
    assert "1" in ans.unfit and "does not fit" in ans.unfit["1"]


# --- command line -----------------------------------------------------------------------------------------------


def test_cli_size_disagg_json_is_strict_and_the_aggregated_answer_is_unchanged(capsys):
    assert main(["size", "--disagg", "--target-rps", "30", "--ttft-slo-s", "0.5", "--itl-slo-s", "0.02",
                 "--isl", "4096", "--osl", "256", "--tps", "1,2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(f"non-strict JSON {c}"))
    assert out["pareto_front"] and out["chosen"]["num_gpus"] == out["pareto_front"][0]["num_gpus"]
    assert out["launch"] and out["search_s"] < 5
    for pool in out["pools"]:  # one instance of each pool alone, per TP
        assert 0 < pool["prefill_rps_within_ttft_slo"] <= pool["prefill_max_rps"]
        assert pool["decode_rps_within_itl_slo"] <= pool["decode_max_rps"]
        assert pool["kv_bytes_per_gpu_per_request"] * pool["tp"] == pytest.approx(pool["kv_bytes_per_request"])
    assert main(["size", "--target-rps", "30", "--tps", "1,2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert isinstance(rows, list) and {r["tp"] for r in rows} == {1, 2}


@pytest.mark.parametrize("argv", [["--prefix-groups", "0"], ["--router", "hash"], ["--kv-transfer", "never"],
                                  ["--link", "nvlink9"], ["--prefill-max-num-batched-tokens", "-3"]])
def test_cli_size_disagg_bad_flags_exit_2_in_one_line(argv, capsys):
    assert main(["size", "--disagg", "--target-rps", "5", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("InputError")


def test_launch_snippet_of_a_disaggregated_layout_names_the_connector():
    s = Scenario(isl=4096, osl=256)
    ans = search(s, 40, 0.4, 0.008, [1, 2])
    assert ans.best_disaggregated is not None
    from capacity.disagg import launch_snippet

    text = "\n".join(launch_snippet(s, ans.best_disaggregated))
    assert "--kv-transfer-config" in text and "NixlConnector" in text and "--disaggregation-mode prefill" in text


def test_predictions_file_matches_the_spec():
    """Every point of the issue-22 spec has one prediction per layout, written by scripts/predict_disagg.py."""
    spec = json.loads((ROOT / "scripts/device/specs/h200x2-disagg.json").read_text())
    rows = [json.loads(x) for x in (ROOT / "data/predictions/h200x2-vllm-0.26.0-disagg.before.jsonl").read_text().splitlines()]
    expected = {(c["name"], isl, osl, p) for c in spec for isl, osl, pts in c["shapes"] for p in pts
                if not p.startswith("warmburst")}
    assert {c["layout"] for c in spec} == {"1p1d", "2agg"} and len(expected) == 60
    assert {(r["run"], r["isl"], r["osl"], r["point"]) for r in rows} == expected
    for r in rows:
        assert r["error"] is None and r["ttft_s"] > 0 and r["itl_s"] > 0 and r["requests_per_s"] > 0
        if r["arrivals"] == "poisson":  # the spec's rates stay below both layouts' predicted capacity
            assert not r["saturated"], r


def test_docs_example_table_is_what_the_code_prints():
    r = subprocess.run([sys.executable, str(ROOT / "scripts/disagg_doc_table.py"), "--check"], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
