"""Workload, load profiles and point metrics, checked against hand calculations."""

from __future__ import annotations

import numpy as np
import pytest

from validate.errors import UsageError, ValidateError
from validate.metrics import summarize
from validate.profiles import LoadOptions, LoadPoint, parse_profile, plan, sweep_rates_per_s
from validate.results import PointResult, RequestRecord
from validate.workload import LengthDist, PromptMaker, Workload, parse_length_dist, read_length_pairs


def test_prompts_have_exact_length_unique_prefixes_and_no_special_ids():
    workload = Workload(isl=64, osl=16, vocab_size=1000, special_ids=[0, 1, 2, 999])
    maker = PromptMaker(workload, salt=7)
    specs = [maker.next() for _ in range(500)]
    assert all(len(s.prompt_ids) == 64 and s.output_tokens == 16 for s in specs)
    assert len({tuple(s.prompt_ids[:3]) for s in specs}) == 500
    ids = np.concatenate([s.prompt_ids for s in specs])
    assert ids.min() >= 3 and ids.max() <= 998


def test_prompts_are_seeded_apart_from_the_salt():
    a = PromptMaker(Workload(isl=32, osl=4, seed=3), salt=1).next().prompt_ids
    b = PromptMaker(Workload(isl=32, osl=4, seed=3), salt=2).next().prompt_ids
    assert a[3:] == b[3:] and a[0] != b[0]


def test_uniform_lengths_stay_in_range_like_random_range_ratio():
    maker = PromptMaker(Workload(isl=100, osl=50, length_dist=LengthDist(kind="uniform", ratio=0.2)))
    lengths = [maker.lengths() for _ in range(2000)]
    isl = [i for i, _ in lengths]
    assert min(isl) >= 80 and max(isl) <= 120 and 95 < np.mean(isl) < 105
    assert maker.max_total_tokens() == 120 + 60


def test_normal_lengths_have_the_asked_spread():
    maker = PromptMaker(Workload(isl=1000, osl=100, length_dist=LengthDist(kind="normal", ratio=0.1), seed=1))
    isl = np.array([maker.lengths()[0] for _ in range(4000)])
    assert abs(isl.mean() - 1000) < 10 and abs(isl.std() - 100) < 10


def test_length_pairs_file(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("input,output\n# from ShareGPT\n10, 20\n30 40\n")
    assert read_length_pairs(str(path)) == [(10, 20), (30, 40)]
    maker = PromptMaker(Workload(isl=1, osl=1, length_dist=parse_length_dist(f"file:{path}")))
    assert {maker.lengths() for _ in range(50)} == {(10, 20), (30, 40)}
    assert maker.max_total_tokens() == 70


@pytest.mark.parametrize("text", ["uniform", "uniform:1.5", "normal:x", "zipf:1", "file:/no/such/file"])
def test_bad_length_dist(text):
    with pytest.raises(UsageError):
        parse_length_dist(text)


def test_profiles_parse():
    assert parse_profile("sweep") == "sweep"
    labels = [p.label for p in parse_profile("concurrency:1,4,16")]
    assert labels == ["concurrency:1", "concurrency:4", "concurrency:16"]
    assert [p.label for p in parse_profile("rate:2.5")] == ["rate:2.5"]
    assert parse_profile("burst:64")[0] == LoadPoint(kind="burst", value=64)


@pytest.mark.parametrize("text", ["concurrency", "burst:0", "burst:2.5", "rate:-1", "sync:3", "poisson:2"])
def test_bad_profiles(text):
    with pytest.raises(UsageError):
        parse_profile(text)


def point(load: str, rps: float) -> PointResult:
    return PointResult(load=load, completed=10, failed=0, duration_s=1.0, requests_per_s=rps,
                       output_tokens_per_s=0.0, total_tokens_per_s=0.0)


def test_sweep_rates_lie_strictly_between_sync_and_burst():
    assert sweep_rates_per_s(point("sync", 2.0), point("burst:64", 14.0), 5) == pytest.approx([4, 6, 8, 10, 12])


def test_sweep_plan_reads_stored_points():
    options = LoadOptions(num_requests=8, burst_size=64, sweep_rates=2)
    done = {"sync": point("sync", 10.0), "burst:64": point("burst:64", 40.0)}
    assert [p.label for p in plan("sweep", options, done)] == ["sync", "burst:64", "rate:20", "rate:30"]


def test_sweep_without_completed_requests_is_a_clear_error():
    with pytest.raises(ValidateError, match="sweep needs completed sync and burst"):
        sweep_rates_per_s(point("sync", 0.0), point("burst:8", 5.0), 3)


def record(i: int, start: float, ttft: float, gaps: list[float], ok: bool = True) -> RequestRecord:
    e2e = ttft + sum(gaps)
    return RequestRecord(load="x", index=i, start_s=start, end_s=start + e2e, ttft_s=ttft if ok else None,
                         e2e_latency_s=e2e if ok else None, itls_s=gaps if ok else [], input_tokens=100 if ok else 0,
                         output_tokens=len(gaps) + 1 if ok else 0, error=None if ok else "HTTP 500: boom")


def test_summary_against_hand_calculation():
    records = [record(0, 0.0, 0.1, [0.01, 0.03]), record(1, 0.5, 0.3, [0.02, 0.02]),
               record(2, 0.2, 0.0, [], ok=False)]
    s = summarize("x", records, max_concurrency=2)
    # duration = last end (0.5 + 0.34) - first start (0.0)
    assert s.duration_s == pytest.approx(0.84)
    assert s.completed == 2 and s.failed == 1 and s.errors == ["HTTP 500: boom"]
    assert s.requests_per_s == pytest.approx(2 / 0.84)
    assert s.output_tokens_per_s == pytest.approx(6 / 0.84)
    assert s.total_tokens_per_s == pytest.approx(206 / 0.84)
    assert s.mean_ttft_s == pytest.approx(0.2) and s.median_ttft_s == pytest.approx(0.2)
    assert s.mean_itl_s == pytest.approx(0.02) and s.p99_itl_s == pytest.approx(0.0297)
    assert s.mean_tpot_s == pytest.approx(0.02)  # (e2e - ttft) / (3 - 1) for both
    assert s.mean_e2e_latency_s == pytest.approx((0.14 + 0.34) / 2)
    assert s.mean_concurrency == pytest.approx(0.48 / 0.84)
    assert s.isl == 100 and s.osl == 3


def test_summary_of_nothing_completed():
    s = summarize("x", [record(0, 0.0, 0.0, [], ok=False)])
    assert s.completed == 0 and s.requests_per_s == 0.0 and s.mean_ttft_s is None and s.mean_itl_s is None
