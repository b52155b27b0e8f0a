"""Plan once, predict many: `plan_for` is calibration-independent and `predict` prices a plan; the calibration fit
plans each sample once; `capacity sweep` rows are `capacity estimate` answers (issue 15)."""

import glob
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import validate.calibrate as calibrate_module
from capacity.calibration import Calibration, find_calibration
from capacity.estimate import Scenario, estimate, plan_for, predict, predicted_metrics
from validate.compare import load_run

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data/measurements/h200/vllm-0.26.0"

SCENARIOS = [
    Scenario(),
    Scenario(model="Qwen/Qwen3-30B-A3B", load="burst:500", isl=512, osl=256, max_num_seqs=512, max_cudagraph_tokens=1024),
    Scenario(model="meta-llama/Llama-3.3-70B-Instruct", gpu="b200", precision="nvfp4", tp=2, num_gpus=4,
             load="rate:3", kv_precision="fp8"),
    Scenario(model="google/gemma-3-27b-it", load="concurrency:16", max_model_len=8192, gpu_memory_utilization=0.8),
]


@pytest.mark.parametrize("s", SCENARIOS, ids=lambda s: f"{s.model}-{s.load}")
def test_predict_on_a_plan_is_the_estimate(s):
    plan = plan_for(s)
    cal = find_calibration(s.engine, plan.gpu.id, plan.weight_format)
    assert predict(plan, cal, s) == estimate(s)
    e = estimate(s)
    fast = predicted_metrics(plan, cal, s)
    assert fast["ttft_s"] == e.ttft_s and fast["itl_s"] == e.itl_s and fast["requests_per_s"] == e.requests_per_s
    assert fast["output_tokens_per_s"] == e.output_tokens_per_s


def test_one_plan_serves_many_calibrations():
    s = SCENARIOS[1]
    plan = plan_for(s)
    slow = Calibration(efficiency=Calibration().efficiency.model_copy(update={"weight_bandwidth": 0.4}))
    fast = Calibration(efficiency=Calibration().efficiency.model_copy(update={"weight_bandwidth": 0.9}))
    assert predicted_metrics(plan, slow, s)["itl_s"] > predicted_metrics(plan, fast, s)["itl_s"]
    assert plan_for(s) == plan  # predicting did not change the plan


def test_calibration_fit_plans_each_sample_once(monkeypatch):
    runs = sorted(str(Path(p).parent) for p in glob.glob(str(DATA / "sitting-1/*/*/points.jsonl")))[:2]
    data = calibrate_module.samples([load_run(d) for d in runs])
    assert len(data) >= 4
    calls = []
    real = calibrate_module.plan_for
    monkeypatch.setattr(calibrate_module, "plan_for", lambda s: calls.append(s) or real(s))
    calibrate_module.fit(data, only=("matmul", "weight_bandwidth"))
    assert calls == []  # every evaluation of the fit reuses the samples' plans
    assert all(d.plan is not None for d in data)


GRID = dict(models=["meta-llama/Llama-3.1-8B", "Qwen/Qwen3-30B-A3B"], gpus=["h200-sxm", "h100-sxm"],
            precisions=["bf16", "fp8"], isls=[128, 2048], osls=[128, 1024], load_kind="concurrency",
            load_values=[1, 64, 512], tps=[1, 2])
OPTIONS = {"max_num_seqs": 256, "max_cudagraph_tokens": 1024, "gpu_memory_utilization": 0.85, "max_model_len": 8192,
           "expert_parallel": True}
COLUMNS = ("ttft_s", "itl_s", "e2e_latency_s", "requests_per_s", "output_tokens_per_s", "total_tokens_per_s",
           "kv_capacity_tokens", "max_concurrent_requests", "usd_per_million_output_tokens")


@pytest.mark.parametrize("options", [{}, OPTIONS], ids=["defaults", "engine-limits"])
def test_sweep_rows_equal_estimates(options):
    from capacity.sweep import sweep_grid

    df = sweep_grid(**GRID, options=options)
    assert len(df) == 2 * 2 * 2 * 2 * 2 * 3 * 2 and df["fits"].all()
    for _, row in df.iterrows():
        e = estimate(Scenario(model=row["model"], gpu=row["gpu"], precision=row["precision"], tp=row["tp"],
                              num_gpus=row["tp"], isl=int(row["isl"]), osl=int(row["osl"]),
                              load=f"concurrency:{int(row['load_value'])}", method="closed-form", **options))
        for col in COLUMNS:
            assert row[col] == pytest.approx(getattr(e, col), rel=1e-9), (col, dict(row))


def test_sweep_cli_passes_the_engine_limits(tmp_path):
    out = tmp_path / "grid.csv"
    cmd = [sys.executable, "-m", "capacity.cli", "sweep", "--model", "meta-llama/Llama-3.1-8B", "--isl", "1024",
           "--osl", "128", "--load-kind", "concurrency", "--load-values", "512", "--out", str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    base = pd.read_csv(out)
    subprocess.run(cmd + ["--max-num-seqs", "64", "--max-cudagraph-tokens", "1024"], check=True, capture_output=True)
    limited = pd.read_csv(out)
    e = estimate(Scenario(isl=1024, osl=128, load="concurrency:512", max_num_seqs=64, max_cudagraph_tokens=1024,
                          method="closed-form"))
    assert limited["itl_s"].iloc[0] == pytest.approx(e.itl_s, rel=1e-6)
    assert not np.isclose(limited["itl_s"].iloc[0], base["itl_s"].iloc[0])


@pytest.mark.parametrize("load", ["sync", "concurrency:64", "burst:500", "rate:5", "rate:500"])
def test_one_prediction_prices_each_step_once(monkeypatch, load):
    """Every calibrated step the estimate prices (the load model's and the host-bound note's) is priced once: a
    second evaluation of the same step would be work done twice. (The two roofline questions of capacity/model/bounds.py
    use the ideal efficiencies, a different pricing, and are not counted.)"""
    import capacity.model.steptime as st
    import capacity.loadmodel.workload as wl

    es = sys.modules["capacity.estimate"]  # the package's `estimate` attribute is the function, not the module

    seen: dict[tuple, int] = {}
    real = st.step_parts

    def counting(c, eff, decodes, ctx, prefill=0.0, keys=0.0, ideal=False, *a, **k):
        if not ideal:
            key = tuple(np.asarray(x, dtype=float).round(6).tobytes() for x in (decodes, ctx, prefill, keys))
            seen[key] = seen.get(key, 0) + 1
        return real(c, eff, decodes, ctx, prefill, keys, ideal, *a, **k)

    for module in (st, wl, es):
        monkeypatch.setattr(module, "step_parts", counting, raising=False)
    estimate(Scenario(load=load, isl=1024, osl=128))
    assert seen and max(seen.values()) == 1, sorted(seen.values())[-3:]
