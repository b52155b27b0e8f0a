"""A load shape is one object per half: the model's (capacity/loads/, one file per shape) and the validator's sender
(validate/loads/, one file per shape). This file adds a toy shape, 'staircase:N' (N requests sent 20 ms apart), with
both halves written here and nowhere else, and checks that every part that reads loads takes it: the grammar, the
closed forms, the step simulator, the ideal bound, the accuracy card's regimes, and a real `validate sweep` against
the stub HTTP server (validate.stub_server)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import numpy as np
import pytest

import capacity.loads as model_loads
import validate.loads as validate_loads
from capacity import Scenario, estimate
from capacity.card import regime
from capacity.errors import WorkloadError
from capacity.load import parse_load
from capacity.loads.base import LoadShape
from validate.cli import main
from validate.engines.launcher import free_port
from validate.stub_server import StubOptions, StubThread

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the stub's closed loop

GAP_S = 0.02


# ---------------------------------------------------------------- the model's half (one file in capacity/loads/)
@dataclass(frozen=True)
class Staircase(LoadShape):
    def requests(self, value, num_requests):
        return int(value)

    def send_times(self, value, n, rng, arrivals="constant", gamma_shape=1.0):
        return np.arange(n) * GAP_S

    def simulated_requests(self, value, num_requests):
        return int(value)

    def closed_form(self, ctx, isl, osl, value, num_requests):
        return ctx.open_loop(isl, osl, 1 / GAP_S, int(value))

    def throughput_cap(self, value, e2e_s):
        return 1 / GAP_S


STAIRCASE = Staircase(kind="staircase", title="N requests, one every 20 ms", regime="open arrivals", fit_sigma=0.06)


# ---------------------------------------------------------------- the validator's half (one file in validate/loads/)
async def send_staircase(value, options, more, send_one, count) -> None:
    tasks = []
    while more(len(tasks)):
        tasks.append(asyncio.create_task(send_one()))
        await asyncio.sleep(GAP_S)
    await asyncio.gather(*tasks)


@pytest.fixture
def staircase():
    model_loads.register(STAIRCASE)
    validate_loads.register("staircase", send_staircase)
    yield
    model_loads.unregister("staircase")
    validate_loads.unregister("staircase")


def test_the_grammar_takes_the_new_shape_and_its_rules(staircase):
    assert parse_load("staircase:3").label == "staircase:3"
    with pytest.raises(WorkloadError, match="whole number"):
        parse_load("staircase:2.5")
    with pytest.raises(WorkloadError):
        parse_load("spiral:3")  # not registered


def test_the_model_prices_it_through_the_shape(staircase):
    """20 requests 20 ms apart are 50 requests/s for 20 requests, in both load models and the bound."""
    same = dict(model="meta-llama/Llama-3.1-8B", isl=512, osl=64)
    for method in ("closed-form", "simulate"):
        toy = estimate(Scenario(**same, load="staircase:20", method=method))
        rate = estimate(Scenario(**same, load="rate:50", num_requests=20, method=method))
        assert toy.method == method
        assert toy.requests_per_s == pytest.approx(rate.requests_per_s, rel=1e-9), method
        assert toy.ttft_s == pytest.approx(rate.ttft_s, rel=1e-9), method
    bound = estimate(Scenario(**same, load="staircase:20", ideal=True))
    assert bound.requests_per_s <= 1 / GAP_S
    assert regime("staircase", 20) == "open arrivals"


def test_validate_sweeps_it_against_a_real_server(staircase, tmp_path, capsys):
    port = free_port()
    out = tmp_path / "run"
    with StubThread(port, StubOptions(token_delay_s=0.001)):
        rc = main(["sweep", "--base-url", f"http://127.0.0.1:{port}", "--model", "stub", "--isl", "8", "--osl", "4",
                   "--profile", "staircase:5", "--warmup", "0", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    point = json.loads((out / "points.jsonl").read_text().splitlines()[0])
    assert point["load"] == "staircase:5" and point["completed"] == 5
    starts = sorted(json.loads(line)["start_s"] for line in (out / "requests.jsonl").read_text().splitlines())
    assert len(starts) == 5 and min(np.diff(starts)) >= 0.8 * GAP_S  # sent on the staircase, not at once
