"""The accuracy card (capacity/card.py, capacity/calibrations/card.json, docs/card.md): every estimate carries one;
its domain follows what the committed measurements covered; its slice errors come from held-out points only; the
shipped card.json and docs/card.md regenerate byte-identically from committed data (scripts/build_card.py)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from capacity import Scenario, estimate
from capacity.card import DOMAINS, METRICS, card_data, slice_chain

REPO = Path(__file__).resolve().parents[1]


def _script(name: str):
    sys.path.insert(0, str(REPO / "scripts"))
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def built():
    bc = _script("build_card")
    card, mpts, ppts = bc.build_all()
    return bc, card, mpts, ppts


def test_card_json_and_doc_regenerate_byte_identically(built):
    bc, card, _, _ = built
    assert bc.card_json(card) == (REPO / "capacity/calibrations/card.json").read_text(), \
        "capacity/calibrations/card.json is stale: rerun scripts/build_card.py"
    assert bc.render_doc(card) == (REPO / "docs/card.md").read_text(), "docs/card.md is stale: rerun scripts/build_card.py"
    json.loads(bc.card_json(card), parse_constant=lambda c: pytest.fail(f"non-finite {c} in card.json"))


def test_measured_pool_is_held_out_only(built):
    bc, card, mpts, _ = built
    ar = bc.ar
    assert mpts
    for p in mpts:
        if p["engine"] == "vllm" and p["gpu_class"] != "H200":  # another GPU: no fit reads its folder at all
            assert str(bc.OTHER_GPU_VLLM) in str(p["run"]) and not ar.trains_on(ar.PLAN_PATH, p["run"], "vllm", "bf16", 1,
                                                                                "concurrency:1", ar.PLAN), p
        elif p["engine"] == "vllm":
            assert p["shape"] in ar.HOLDOUT or not ar.fitted_run(p["run"]), p
        else:  # SGLang: held-out shapes of its fit's sittings, every point of the others
            assert p["shape"] in ar.HOLDOUT or not ar.sglang_fitted_run(p["run"]), p
    assert any(p["engine"] == "sglang" and p["shape"] not in ar.HOLDOUT for p in mpts)  # sitting 14 is in
    assert any(p["gpu_class"] == "H100" for p in mpts)  # the H100 of sitting 29 is in, every point of it
    pool = card["pools"]["measured"]
    assert pool["points"] == len(mpts)
    assert sum(st["n"] for st in pool["slices"]["* × * × * × *"].values()) == len(mpts)


def test_coverage_is_what_card_json_says(built):
    bc, card, mpts, ppts = built
    for name, pts in (("measured", mpts), ("public", ppts)):
        cc = bc.coverage_check(pts)
        shipped = card["coverage_check"][name]
        assert {k: cc[k] for k in ("n", "inside", "share", "per_metric", "per_group")} == \
               {k: shipped[k] for k in ("n", "inside", "share", "per_metric", "per_group")}
        groups = {p["group"] for p in pts}
        assert len(groups) >= 2 and set(cc["per_group"]) == groups  # every point checked with its own group left out
    doc = (REPO / "docs/card.md").read_text()
    assert f"{card['coverage_check']['public']['share'] * 100:.0f} % of {card['coverage_check']['public']['n']} points" in doc
    e = estimate(Scenario(gpu="b200"))
    assert e.card.interval_coverage == {m: v["share"] for m, v in card["coverage_check"]["public"]["per_metric"].items()}


def _check_errors_match(card, pool: str):
    data = card_data()
    assert card.errors, "no held-out error on the card"
    for m, a in card.errors.items():
        st = data["pools"][pool]["slices"][a.slice][m]
        assert (a.points, a.median_abs_error, a.p90_abs_error) == (st["n"], st["median_abs_error"], st["p90_abs_error"])
        assert a.slice in slice_chain(*card.slice.split(" × "))
        assert a.points >= data["min_points"] or a.slice == "* × * × * × *"
        assert a.few_points == (a.slice != card.slice)


@pytest.mark.parametrize("kw", [
    {},
    {"precision": "fp8"},
    {"load": "burst:1000"},
    {"model": "Qwen/Qwen3-30B-A3B", "load": "concurrency:32"},
    {"model": "Qwen/Qwen3-32B", "num_gpus": 2, "tp": 2, "isl": 512, "osl": 512},
    {"engine": "sglang", "load": "rate:5"},
])
def test_measured_here(kw):
    c = estimate(Scenario(**kw)).card
    assert c.domain == "measured-here", c.reasons
    assert c.evidence == "measured-here held-out" and not c.reasons
    assert set(c.errors) == set(METRICS)
    _check_errors_match(c, "measured")
    assert {"ttft_s", "itl_s", "requests_per_s", "output_tokens_per_s"} <= set(c.intervals)


def test_few_points_widen_and_say_so():
    c = estimate(Scenario(engine="sglang", load="rate:5")).card
    assert any(a.few_points for a in c.errors.values())
    assert any("few points" in n for n in c.notes)


@pytest.mark.parametrize("kw, why", [
    ({"gpu": "b200"}, "GPU b200"),
    ({"gpu": "mi355x", "precision": "fp8", "kv_precision": "fp8"}, "GPU mi355x"),
    ({"model": "deepseek-ai/DeepSeek-R1", "num_gpus": 8, "tp": 8, "precision": "fp8", "kv_precision": "fp8"}, "TP 8"),
    ({"model": "deepseek-ai/DeepSeek-R1", "gpu": "b200", "num_gpus": 8, "tp": 8, "expert_parallel": True,
      "precision": "nvfp4", "kv_precision": "fp8", "load": "concurrency:64"}, "MLA model"),
    ({"engine": "trtllm", "gpu": "l40s", "precision": "fp8", "load": "burst:3000"}, "engine trtllm"),
    ({"model": "meta-llama/Llama-3.3-70B-Instruct", "num_gpus": 4, "tp": 4, "precision": "fp8"}, "parameters"),
    # SGLang's receive interval: 1 and 30 measured here (sitting 18); 10 only set by InferenceX's B200/B300 rows
    ({"engine": "sglang", "load": "concurrency:8", "recv_interval_steps": 10}, "recv_interval_steps=10"),
])
def test_extrapolated(kw, why):
    c = estimate(Scenario(**kw)).card
    assert c.domain == "extrapolated"
    assert any(why in r for r in c.reasons), c.reasons
    assert c.evidence == "public corpus"
    _check_errors_match(c, "public")
    assert c.errors["throughput"].points >= 10 and c.errors["throughput"].sources


@pytest.mark.parametrize("kw, why", [
    ({"spec_draft_tokens": 3, "spec_acceptance": 0.7}, "speculative decoding"),
    ({"gpu": "b200", "spec_draft_tokens": 3, "spec_acceptance": 0.7}, "speculative decoding"),
    ({"prefix_hit_rate": 0.95}, "prefix caching"),
    # measured: n-gram drafts at 0.99 and a draft model at 0: neither the middle of that span nor a drafter at the
    # other's acceptance is
    ({"spec_draft_tokens": 4, "spec_acceptance": 0.5}, "speculative decoding (n-gram)"),
    ({"model": "Qwen/Qwen3-8B", "spec_draft_tokens": 4, "spec_acceptance": 0.99, "spec_draft_model": "Qwen/Qwen3-0.6B"},
     "speculative decoding (draft model)"),
    ({"isl": 100_000, "osl": 1000, "max_model_len": None}, "context of"),
    ({"model": "openai/gpt-oss-120b", "precision": "nvfp4"}, "nvfp4 weights on H200"),  # only MXFP4 ran here
])
def test_unsupported_feature(kw, why):
    c = estimate(Scenario(**kw)).card
    assert c.domain == "unsupported-feature"
    assert any(why in r for r in c.reasons), c.reasons
    assert c.errors and any("never checked" in n for n in c.notes)
    _check_errors_match(c, "measured" if c.evidence == "measured-here held-out" else "public")


@pytest.mark.parametrize("kw", [
    {"spec_draft_tokens": 4, "spec_acceptance": 0.99},  # sitting 11: vLLM n-gram drafts, all accepted
    # sitting 12: a Qwen3-0.6B draft model for Qwen3-8B, none accepted
    {"model": "Qwen/Qwen3-8B", "spec_draft_tokens": 4, "spec_acceptance": 0.0, "spec_draft_model": "Qwen/Qwen3-0.6B"},
    {"prefix_hit_rate": 0.5},  # sitting 9: shared prefixes of 50 and 90 %
    {"isl": 32_768, "osl": 256},  # sitting 11: long prompts
    {"model": "openai/gpt-oss-120b", "precision": "mxfp4"},  # sittings 9 and 16: MXFP4 experts on the H200
    # sitting 16b: the draft model at a set acceptance of 0.64
    {"model": "Qwen/Qwen3-8B", "spec_draft_tokens": 4, "spec_acceptance": 0.64, "spec_draft_model": "Qwen/Qwen3-0.6B"},
])
def test_measured_features_stay_in_the_box(kw):
    """What a committed measurement ran (with the engine's own counters reading the hit rate and the acceptance) is
    not an unsupported feature; the card's coverage table says how far each was measured."""
    c = estimate(Scenario(**kw)).card
    assert c.domain != "unsupported-feature", c.reasons


def test_the_card_names_the_public_calibrations():
    from validate.public.fit import load_plan

    data = card_data()
    assert sorted(data["public_calibrations"]) == sorted(f"{s.engine}/{s.gpu}/{s.precision}" for s in load_plan())
    assert "calibrated-on-public-data" in DOMAINS


def test_cli_json_carries_the_card(capsys):
    from capacity.cli import main

    assert main(["estimate", "--gpu", "b200", "--load", "burst:1000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(f"non-finite {c}"))
    assert out["card"]["domain"] == "extrapolated" and out["card"]["errors"]["throughput"]["points"] > 0
    assert main(["estimate"]) == 0
    table = capsys.readouterr().out
    assert "accuracy domain" in table and "measured-here" in table and "held-out |error|" in table


def test_every_published_configuration_gets_a_card():
    sp = _script("score_public")
    from validate.public.build import load_rows

    scored = [s for s in sp.score(load_rows()) if s.est is not None]
    assert len(scored) > 1000
    for s in scored:
        c = s.est.card
        assert c is not None and c.domain in DOMAINS and c.errors, s.row.row_id
        json.dumps(s.est.model_dump(), allow_nan=False)


@pytest.mark.parametrize("engine, gpu, precision", [("trtllm", "h200-sxm", "fp8"), ("trtllm", "b200", "nvfp4"),
                                                     ("vllm", "mi300x", "fp8")])
def test_calibrated_on_public_data(engine, gpu, precision):
    """An engine where a public calibration was fitted for the GPU and format (data/public/calibration-plan.toml):
    its own domain, public evidence; on another GPU (l40s, mi355x above) the same engine is an extrapolation."""
    c = estimate(Scenario(engine=engine, gpu=gpu, precision=precision, kv_precision="fp8", load="burst:3000")).card
    assert c.domain == "calibrated-on-public-data"
    assert c.evidence == "public corpus"
    _check_errors_match(c, "public")
