"""The measured-here calibration policy is data (data/measurements/h200/calibration-plan.toml): executing it gives
the shipped calibrations exactly, and a bad plan is a one-line exit 2."""

import subprocess
import sys

import pytest

from capacity.calibration import shipped_calibrations
from validate.calibration_plan import PLAN_PATH, fitted_run, load_measured_plan, run_dirs, run_measured_plan
from validate.compare import load_run


def test_the_plan_names_real_runs_and_holds_shapes_out():
    plan = load_measured_plan()
    for f in plan.fit:
        dirs = run_dirs(PLAN_PATH, f)
        fitted = [d for d in dirs if fitted_run(PLAN_PATH, f, d)]
        assert fitted, f.name
        if f.sittings != "all":
            assert len(fitted) < len(dirs)  # later sittings are scored, never fitted
            for run in f.runs:
                assert any(run in d for d in fitted), run


def test_executing_the_plan_gives_the_shipped_calibrations():
    cals, reports = run_measured_plan(out_dir=None)
    shipped = shipped_calibrations()
    for name, cal in cals.items():
        ship = shipped[(cal.engine, cal.gpu, cal.precision)]
        for k in type(cal.efficiency).model_fields:
            assert getattr(cal.efficiency, k) == pytest.approx(getattr(ship.efficiency, k), rel=1e-6, abs=1e-12), (name, k)
        assert cal.residuals.keys() == ship.residuals.keys()
        for k, r in cal.residuals.items():
            assert r.log_ratio_q05 == pytest.approx(ship.residuals[k].log_ratio_q05, abs=1e-6), (name, k)
            assert r.log_ratio_q95 == pytest.approx(ship.residuals[k].log_ratio_q95, abs=1e-6), (name, k)
        assert (cal.fitted_on, cal.held_out, cal.source, cal.notes) == (ship.fitted_on, ship.held_out, ship.source, ship.notes)
        fit = load_measured_plan().named(name)
        if fit.loads is None:
            assert reports[name]["held_out"], name
        else:  # a fit of some load kinds only: it trains on those, and its model's other runs are scored
            assert all(label.split()[-1].split(":")[0] in fit.loads for label in cal.fitted_on), name
            model = {label.split()[0] for label in cal.fitted_on}
            assert any(not fitted_run(PLAN_PATH, fit, d) and load_run(d).scenario["model"] in model
                       for d in run_dirs(PLAN_PATH, fit)), name


@pytest.mark.parametrize("text, field", [
    ("holdout_shapes = ['1x1']\n[[fit]]\nname='a'\nengine='vllm'\ngpu='h200-sxm'\nprecision='bf16'\ndata='x'\n"
     "sittings='all'\nsource=''\nnotes=''\nstart='b'\n", "start"),
    ("holdout_shapes = ['1x1']\n[[fit]]\nname='a'\nengine='vllm'\ngpu='h200-sxm'\nprecision='bf16'\ndata='x'\n"
     "sittings='all'\nsource=''\nnotes=''\nfree=['warp']\n", "free"),
    ("holdout_shapes = ['1x1']\n[[fit]]\nname='a'\nengine='vllm'\ngpu='h200-sxm'\nprecision='bf16'\ndata='x'\n"
     "sittings='all'\nsource=''\nnotes=''\nloads=['poisson']\n", "loads"),
    ("holdout_shapes = ['1x1']\n[[fit]]\nname='a'\nengine='vllm'\ngpu='h200-sxm'\nprecision='bf16'\ndata='x'\n"
     "sittings='all'\nsource=''\nnotes=''\nfront_end='guess'\n", "front_end"),
    ("holdout_shapes = ['1x1']\n[[fit]]\nname='a'\nengine='vllm'\ngpu='h200-sxm'\nprecision='bf16'\ndata='x'\n"
     "sittings='all'\nsource=''\nnotes=''\n[[constant]]\nname='warp_s'\nengine='vllm'\nprecision='bf16'\n"
     "data='x'\nruns=['sitting-1/a']\nscript=''\nsource=''\n", "constant.0.name"),
    ("holdout_shapes = []\n", "holdout_shapes"),
    ("[[[", "cannot read"),
])
def test_a_bad_plan_is_one_line_exit_2(tmp_path, text, field):
    plan = tmp_path / "plan.toml"
    plan.write_text(text)
    p = subprocess.run([sys.executable, "-m", "validate.cli", "calibrate", "--plan", str(plan), "--out-dir",
                        str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and str(plan) in lines[0] and field in lines[0] and "Traceback" not in p.stderr
    assert not list(tmp_path.glob("*.json"))


def test_a_plan_can_fit_some_shapes_of_a_run_and_score_the_rest():
    """runs may name sitting-N/server/ISLxOSL: sitting 19's BF16 lone-prompt ladder is fitted, its closed loops and
    Poisson points (other shapes of the same server) are scored."""
    from validate.calibration_plan import PLAN_PATH, fitted_run, load_measured_plan, run_dirs
    f = load_measured_plan(PLAN_PATH).named("vllm-bf16")
    s19 = [d for d in run_dirs(PLAN_PATH, f) if "sitting-19/Qwen3-8B-bf16-ladder-s19" in d]
    fitted = {d.rsplit("/", 1)[1] for d in s19 if fitted_run(PLAN_PATH, f, d)}
    assert fitted == {"128x16", "512x16", "1024x16", "2048x16", "4096x16"}
    assert {d.rsplit("/", 1)[1] for d in s19} - fitted == {"1024x256", "1024x128-uniform0.5"}


def test_a_counted_front_end_without_lone_requests_is_one_line_exit_2(tmp_path):
    """front_end = "counters" on fitted runs with no lone request carrying the engine's prefill counters (sitting 1
    recorded none): the plan says so in one line naming the fit, instead of fitting a front end from nothing."""
    plan = tmp_path / "plan.toml"
    data = PLAN_PATH.parent / "vllm-0.26.0"
    plan.write_text(f"holdout_shapes = ['512x512']\n[[fit]]\nname='a'\nengine='vllm'\ngpu='h200-sxm'\n"
                    f"precision='bf16'\ndata='{data}'\nsittings=['sitting-1']\nsource=''\nnotes=''\n"
                    f"front_end='counters'\n")
    p = subprocess.run([sys.executable, "-m", "validate.cli", "calibrate", "--plan", str(plan), "--out-dir",
                        str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "fit a" in lines[0] and "counters" in lines[0] and "Traceback" not in p.stderr
    assert not list(tmp_path.glob("*.json"))


def test_points_that_set_a_constant_are_fitted_not_held_out():
    """A [[constant]] of the plan (a parameter set by a script from named points) trains on exactly those points:
    trains_on counts them, so no held-out table scores them; the same server's other shapes stay held out."""
    from validate.calibration_plan import trains_on
    plan = load_measured_plan()
    const = next(c for c in plan.constant if c.name == "eager_mla_layer_overhead_s")
    server = run_dirs(PLAN_PATH, plan.named("vllm-bf16"))
    ladder = [d for d in server if "DeepSeek-V2-Lite-bf16-eager-ladder-s14b" in d]
    set_it = {d.rsplit("/", 1)[1] for d in ladder if trains_on(PLAN_PATH, d, "vllm", "bf16", 1, "sync", plan)}
    assert set_it == {r.rsplit("/", 1)[1] for r in const.runs} == {"768x16", "1024x16", "2048x16", "4096x16"}
    assert {d.rsplit("/", 1)[1] for d in ladder} - set_it == {"384x16"}
    assert not any(trains_on(PLAN_PATH, d, "vllm", "fp8", 1, "sync", plan) for d in ladder)  # another precision


def test_the_shipped_mla_launch_constant_is_what_its_script_sets():
    """capacity/calibration.py's eager_mla_layer_overhead_s is scripts/mla_eager.py's value on the points the plan
    names (a drifted default, or points that moved, fail here)."""
    import importlib.util
    import math
    from pathlib import Path

    import numpy as np

    from capacity.calibration import Efficiency
    path = Path(__file__).resolve().parents[1] / "scripts" / "mla_eager.py"
    spec = importlib.util.spec_from_file_location("mla_eager", path)
    mla = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mla)
    fit = [(s, m) for _, s, m, fitted in mla.lone_prompts() if fitted]
    assert len(fit) == 4
    loss = [sum(math.log(mla.ttft_with(s, v) / m) ** 2 for s, m in fit) for v in mla.GRID_S]
    assert Efficiency().eager_mla_layer_overhead_s == pytest.approx(float(mla.GRID_S[int(np.argmin(loss))]), abs=1e-9)
