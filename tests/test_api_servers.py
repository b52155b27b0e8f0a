"""vLLM's --api-server-count: the large-batch host floor is mostly the API server's (sitting 28), so more API
servers lower it to the engine core's share; the flag reads and writes through the engine's flag table."""

from __future__ import annotations

import pytest

from capacity.engines import engine_profile, get
from capacity.errors import WorkloadError
from capacity.estimate import Scenario, calibration_for, estimate, plan_for
from capacity.model.steptime import host_token_s

C256 = dict(isl=128, osl=128, load="concurrency:256", num_requests=512)


def test_the_flag_is_read_and_written_by_the_engine_object():
    flags = get("vllm").flags
    assert flags.scenario(["--api-server-count", "2"]) == {"api_server_count": 2}
    assert flags.sets("api_server_count", 4)
    assert not get("sglang").flags.sets("api_server_count", 2)


@pytest.mark.parametrize("n,scale", [(1, 1.0), (2, 0.65), (3, 0.65), (8, 0.65)])
def test_the_host_floor_falls_to_the_engine_cores_share(n, scale):
    profile = engine_profile("vllm", api_server_count=n)
    assert profile.host_floor_scale == scale
    s = Scenario(**C256, api_server_count=n)
    one = Scenario(**C256)
    plan, plan1 = plan_for(s), plan_for(one)
    eff = calibration_for(one, plan1).efficiency
    assert host_token_s(plan.costs, eff) == pytest.approx(host_token_s(plan1.costs, eff) * profile.host_floor_scale)


def test_more_api_servers_never_slow_a_point_down():
    itl = [estimate(Scenario(**C256, api_server_count=n)).itl_s for n in (1, 2, 4)]
    assert itl[0] > itl[1] >= itl[2]


def test_an_engine_without_the_flag_refuses_it():
    with pytest.raises(WorkloadError, match="api-server-count"):
        plan_for(Scenario(**C256, engine="sglang", api_server_count=2))


def test_a_host_bound_answer_says_what_more_api_servers_do():
    note = next(n for n in estimate(Scenario(**C256)).notes if "host-bound" in n)
    assert "--api-server-count" in note and "card.json api_server_decode" in note
    small = Scenario(model="Qwen/Qwen3-0.6B", **C256, api_server_count=2)  # host-bound with two API servers too
    note = next(n for n in estimate(small).notes if "host-bound" in n)
    assert "not more API servers" in note and "card.json host_bound_decode" not in note  # one-API-server spread
