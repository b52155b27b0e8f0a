"""Expert parallelism: the step waits for the GPU that loads the most experts (capacity/model/steptime.py)."""

import math

import numpy as np

from capacity.estimate import Scenario, plan_for
from capacity.model.steptime import expected_max_of_normals, experts_read_per_gpu


def test_expected_maximum_of_normals():
    # tabulated order statistics of the standard normal: 2 -> 1/sqrt(pi), 4 -> 1.0294, 8 -> 1.4236
    assert expected_max_of_normals(1) == 0.0
    assert math.isclose(expected_max_of_normals(2), 1 / math.sqrt(math.pi), rel_tol=1e-4)
    assert math.isclose(expected_max_of_normals(4), 1.0294, abs_tol=1e-3)
    assert math.isclose(expected_max_of_normals(8), 1.4236, abs_tol=1e-3)


def test_the_busiest_gpu_reads_more_than_the_mean_and_never_more_than_it_holds():
    s = Scenario(model="deepseek-ai/DeepSeek-R1", gpu="h200-sxm", precision="fp8", tp=8, num_gpus=8,
                 expert_parallel=True, isl=1024, osl=1024)
    c = plan_for(s).costs
    assert c.ep == 8
    tokens = np.array([1.0, 4.0, 64.0, 4096.0])
    busiest, mean = experts_read_per_gpu(c, tokens), experts_read_per_gpu(c, tokens, straggler=False)
    assert np.all(busiest >= mean) and np.all(busiest <= c.experts_per_gpu + 1e-9)
    # 4 sequences: 32 of 256 experts touched, 4 per GPU on average; the busiest of 8 loads about 1.7x that
    assert 1.5 < busiest[1] / mean[1] < 1.9
    # a prefill of 4,096 tokens touches every expert: no imbalance left
    assert math.isclose(busiest[3], mean[3], rel_tol=1e-6)


def test_without_expert_parallelism_nothing_changes():
    c = plan_for(Scenario(model="Qwen/Qwen3-30B-A3B", gpu="h200-sxm")).costs
    tokens = np.array([1.0, 16.0, 512.0])
    assert np.allclose(experts_read_per_gpu(c, tokens), experts_read_per_gpu(c, tokens, straggler=False))
