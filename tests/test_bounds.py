"""`--ideal` is a bound: no committed measurement and no published one beats it (throughput above it,
TTFT or ITL below it). Every violation is listed with its row so a failure says what broke."""

from __future__ import annotations

import glob
import sys
from pathlib import Path

import pytest

from capacity import Scenario, estimate
from capacity.errors import CapacityError
from validate.compare import load_run, point_scenario

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

LATENCY = {"ttft_s": "ttft_s", "itl_s": "itl_s", "tpot_s": "itl_s", "e2e_latency_s": "e2e_latency_s"}
THROUGHPUT = {"output_tokens_per_s": 1, "total_tokens_per_s": 1, "requests_per_s": 1, "output_tokens_per_s_per_gpu": 1}


def violations_committed() -> list[str]:
    bad = []
    for f in sorted(glob.glob(str(ROOT / "data/measurements/*/*/*/*/*/points.jsonl"))):  # every GPU measured here
        if "/warmup/" in f:
            continue
        run = load_run(Path(f).parent)
        for p in run.points:
            if not p.completed:
                continue
            e = estimate(point_scenario(run, p, ideal=True))
            if p.requests_per_s > e.requests_per_s:
                bad.append(f"{f} {p.load}: {p.requests_per_s:.3g} req/s measured > bound {e.requests_per_s:.3g}")
            if p.mean_ttft_s is not None and p.mean_ttft_s < e.ttft_s:
                bad.append(f"{f} {p.load}: TTFT {p.mean_ttft_s:.4g} s measured < bound {e.ttft_s:.4g}")
            if p.mean_itl_s is not None and p.mean_itl_s < e.itl_s:
                bad.append(f"{f} {p.load}: ITL {p.mean_itl_s:.4g} s measured < bound {e.itl_s:.4g}")
    return bad


def test_no_committed_measurement_beats_the_ideal_bound():
    assert violations_committed() == []


def public_rows():
    from validate.public.build import load_rows

    return load_rows()


def bound_for_public_row(r):
    from score_public import predicted_value, scenario_for

    s, _ = scenario_for(r)
    if r.lengths == "distributed" and r.length_range_ratio:  # the shortest requests bound both ways
        s["isl"], s["osl"] = max(1, int(r.isl * r.length_range_ratio)), max(1, int(r.osl * r.length_range_ratio))
    s["ideal"] = True
    return predicted_value(r, estimate(Scenario(**s)))


def test_no_published_measurement_beats_the_ideal_bound():
    rows = public_rows()
    assert len(rows) >= 300
    bad, checked = [], 0
    for r in rows:
        if r.pp > 1 or r.dp > 1 or r.lengths == "unstated":  # layouts the model prices as something else
            continue
        try:
            bound = bound_for_public_row(r)
        except CapacityError:
            continue
        checked += 1
        if r.metric in THROUGHPUT and r.value > bound * (1 + 1e-9):
            bad.append(f"{r.row_id} {r.model} {r.gpu}x{r.num_gpus} {r.load} {r.metric}: {r.value:.4g} > bound {bound:.4g}")
        if r.metric in LATENCY and r.value < bound * (1 - 1e-9):
            bad.append(f"{r.row_id} {r.model} {r.gpu}x{r.num_gpus} {r.load} {r.metric}: {r.value:.4g} < bound {bound:.4g}")
    assert checked >= 300
    assert bad == [], f"{len(bad)} of {checked} published points beat --ideal:\n" + "\n".join(bad[:40])


@pytest.mark.parametrize("load", ["sync", "concurrency:64", "burst:1000", "rate:5"])
def test_ideal_uses_all_memory_after_weights(load):
    real = estimate(Scenario(load=load))
    bound = estimate(Scenario(load=load, ideal=True))
    assert bound.kv_capacity_tokens > real.kv_capacity_tokens
    assert bound.requests_per_s >= real.requests_per_s
    assert bound.ttft_s <= real.ttft_s and bound.itl_s <= real.itl_s
    assert "bound" in bound.regime
