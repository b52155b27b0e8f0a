"""One source of a run's random draws (capacity/loads/draws.py): validate's senders and the step simulator send the
same arrivals and lengths for a seed, and the committed Poisson runs' send times are the simulator's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import validate.loads.rate as rate_sender
from capacity.loadmodel.simulate import Traffic, _requests
from capacity.loads import shape
from capacity.loads.draws import arrivals_rng, gaps, span_rel_sd
from validate.compare import load_run, point_scenario
from validate.profiles import LoadOptions
from validate.workload import LengthDist, PromptMaker, Workload

REPO = Path(__file__).resolve().parents[1]
S20 = REPO / "data/measurements/h200/vllm-0.26.0/sitting-20/Llama-3.1-8B-bf16-poisson-s20/1024x128-uniform0.5"
S12 = REPO / "data/measurements/h200/vllm-0.26.0/sitting-12/Qwen3-30B-A3B-bf16-poisson-warm-s12/1024x128-uniform0.5"


@pytest.mark.parametrize("arrivals,k", [("poisson", 1.0), ("gamma", 0.5), ("gamma", 3.0)])
def test_gaps_drawn_in_blocks_are_the_single_draws(arrivals, k):
    whole = gaps(arrivals_rng(5), 0.1, 1000, arrivals, k)
    rng = arrivals_rng(5)
    blocks = np.concatenate([gaps(rng, 0.1, n, arrivals, k) for n in (1, 255, 256, 7, 481)])
    assert blocks.tolist() == whole.tolist()


class _Clock:
    """A virtual clock for the sender: sleeping lets the requests already created start, then advances it, so
    the schedule is read without waiting (the sender's loop only reads time.perf_counter and awaits
    asyncio.sleep)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.real_sleep = asyncio.sleep

    def perf_counter(self) -> float:
        return self.now

    async def sleep(self, s: float) -> None:
        await self.real_sleep(0)
        self.now += max(s, 0.0)


@pytest.mark.parametrize("arrivals", ["constant", "poisson", "gamma"])
def test_the_rate_sender_sends_the_simulators_arrivals(monkeypatch, arrivals):
    clock = _Clock()
    monkeypatch.setattr(rate_sender.time, "perf_counter", clock.perf_counter)
    monkeypatch.setattr(rate_sender.asyncio, "sleep", clock.sleep)
    sent: list[float] = []

    async def send_one() -> None:
        sent.append(clock.now)

    n = 700  # several of the sender's blocks
    options = LoadOptions(num_requests=n, arrivals=arrivals, gamma_shape=0.7, seed=11)
    asyncio.run(rate_sender.send(8.0, options, lambda k: k < n, send_one, n))
    _, _, send = _requests(Traffic(kind="rate", value=8.0, num_requests=n, arrivals=arrivals, gamma_shape=0.7, seed=11),
                           1024, 128)
    assert np.allclose(np.array(sent) - sent[0], send, rtol=0, atol=1e-9)


@pytest.mark.parametrize("dist", [LengthDist(kind="uniform", ratio=0.5), LengthDist(kind="normal", ratio=0.3)])
def test_each_load_point_sends_the_simulators_lengths(dist):
    """A point's measured requests get the lengths the simulator draws for the seed, whatever came before (another
    point, warm-up requests); the warm-ups draw from their own stream."""
    maker = PromptMaker(Workload(isl=1024, osl=128, length_dist=dist, seed=3))
    t = Traffic(kind="concurrency", value=16, num_requests=200, length_dist=dist.kind, length_ratio=dist.ratio, seed=3)
    I, O, _ = _requests(t, 1024, 128)
    warm_of = []
    for warmups in (0, 5, 2):  # three points of one sweep, one maker
        maker.start_point()
        warm = [maker.lengths(warmup=True) for _ in range(warmups)]
        got = [maker.lengths() for _ in range(200)]
        assert got == list(zip(I.tolist(), O.tolist()))
        assert not warmups or warm != got[:warmups]
        warm_of.append(warm)
    assert warm_of[1][:2] == warm_of[2]  # a point's warm-ups too do not depend on the points before it


def test_a_committed_poisson_run_was_sent_at_the_simulators_times():
    """Sitting 20's rate:10 point (seed 0, sent before the streams moved to capacity/loads/draws.py): its 300
    measured send times are the simulator's seed-0 arrivals, to the sender's timer jitter."""
    df = pd.read_csv(S20 / "requests.csv")
    d = df[df["load"] == "rate:10"].sort_values("start_s")
    send = shape("rate").send_times(10.0, len(d), arrivals_rng(0), "poisson")
    assert len(d) == 300
    assert np.abs(d["start_s"].to_numpy() - d["start_s"].iloc[0] - send).max() < 0.01


def test_a_points_own_arrivals_outrank_the_folders_latest_sweep():
    """Sitting 12's folder holds Poisson rate points and a later closed loop whose sweep wrote metadata.json
    (arrivals constant); the rate points carry their own record (added from the campaign log) and are priced as
    Poisson, the closed loop as the folder says."""
    run = load_run(S12)
    by = {p.load: p for p in run.points}
    assert run.scenario.get("arrivals", "constant") == "constant"
    assert point_scenario(run, by["rate:10"]).arrivals == "poisson"
    assert point_scenario(run, by["concurrency:64"]).arrivals == "constant"


@pytest.mark.parametrize("arrivals,k", [("poisson", 1.0), ("gamma", 0.5)])
def test_span_spread_between_seeds(arrivals, k):
    n = 200
    spans = np.array([gaps(arrivals_rng(s), 1.0, n - 1, arrivals, k).sum() for s in range(3000)])
    assert spans.std() / spans.mean() == pytest.approx(span_rel_sd(n, arrivals, k), rel=0.08)
    assert span_rel_sd(n, "constant") == 0.0 and span_rel_sd(1, "poisson") == 0.0
