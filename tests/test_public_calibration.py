"""Public-data calibrations: the committed plan (data/public/calibration-plan.toml) names what each fit trains on,
the shipped calibrations are exactly what that plan fits, and no row a fit saw is ever scored as held out."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from capacity.calibration import find_calibration, shipped_calibrations
from validate.public.build import load_rows
from validate.public.common import ROWS_PATH
from validate.public.fit import PLAN_PATH, fit_one, fitted_row_ids, load_plan, training_rows

ROOT = Path(__file__).resolve().parents[1]
PLAN = load_plan()
ROWS = load_rows(ROWS_PATH)


def test_every_fit_of_the_plan_ships_with_exactly_its_training_rows():
    shipped = shipped_calibrations()
    train = training_rows(PLAN, ROWS)
    for spec in PLAN:
        cal = shipped[(spec.engine, spec.gpu, spec.precision)]
        assert cal.fitted_on == sorted(r.row_id for r in train[spec.key()]), spec.key()
        assert "data/public" in cal.source and cal.held_out == []
        assert len(cal.fitted_on) >= 2 * len(spec.free)


def test_the_split_holds_out_by_model_and_by_source():
    fitted = {r.row_id for group in training_rows(PLAN, ROWS).values() for r in group}
    used = [r for r in ROWS if r.row_id in fitted]
    held = [r for r in ROWS if r.engine == "trtllm" and r.row_id not in fitted]
    assert {r.model for r in used} <= {m for s in PLAN for m in s.train_models}
    assert {r.source_id for r in used} <= {src for s in PLAN for src in s.train_sources}
    assert {r.model for r in held} - {r.model for r in used}  # whole models never seen
    assert {r.source_id for r in held} - {r.source_id for r in used}  # whole sources never seen
    assert all(r.pp == 1 for r in used)


def test_scoring_leaves_the_fitted_rows_out():
    sys.path.insert(0, str(ROOT / "scripts"))
    import score_public as sp

    fitted = fitted_row_ids(PLAN, ROWS)
    scored = sp.score([r for r in ROWS if r.row_id in fitted][:5] + [r for r in ROWS if r.row_id not in fitted][:5])
    assert [s.fitted for s in scored] == [True] * 5 + [False] * 5
    doc = (ROOT / "docs/public-corpus.md").read_text()
    assert f"{len(fitted)} rows trained a public calibration (not scored here)" in doc
    scores = (ROOT / "data/public/scores.csv").read_text().splitlines()
    marked = {line.split(",")[0] for line in scores[1:] if line.endswith(",yes")}
    assert marked == fitted


def test_the_smallest_fit_regenerates_from_the_plan():
    spec = min(PLAN, key=lambda s: len(training_rows([s], ROWS)[s.key()]))
    cal = fit_one(spec, ROWS)
    shipped = shipped_calibrations()[(spec.engine, spec.gpu, spec.precision)]
    for name in spec.free:
        assert getattr(cal.efficiency, name) == pytest.approx(getattr(shipped.efficiency, name), rel=1e-6, abs=1e-12), name
    # An optimiser's result agrees to ~1e-10 across machines (BLAS, libm), not bit for bit: compare to 1e-6.
    assert cal.residuals.keys() == shipped.residuals.keys()
    for metric, stats in cal.residuals.items():
        assert stats.model_dump() == pytest.approx(shipped.residuals[metric].model_dump(), rel=1e-6, abs=1e-9), metric


def test_lookup_prefers_the_same_gpu_then_its_nearest():
    assert find_calibration("trtllm", "b200", "mxfp4").gpu == "b200"  # the other FP4 format of the same GPU
    assert find_calibration("trtllm", "b300", "nvfp4").gpu == "b200"
    assert "extrapolation" in find_calibration("trtllm", "b300", "nvfp4").extrapolated
    assert find_calibration("trtllm", "l40s", "fp8").gpu == "h200-sxm"
    assert find_calibration("vllm", "b200", "nvfp4").gpu == "h200-sxm"  # vLLM: measured here only


@pytest.mark.parametrize("text, field", [
    ("[defaults]\nengine = 'trtllm'\n[[fit]]\ngpu = 'b200'\n", "precision"),
    ("[defaults]\n[[fit]]\nengine='trtllm'\ngpu='b200'\nprecision='nvfp4'\nstart='x'\ntrain_sources=['a']\n"
     "train_models=['m']\nfree=['warp_speed']\n", "free"),
    ("not toml [", "cannot read"),
])
def test_a_bad_plan_is_one_line_exit_2(tmp_path, text, field):
    plan = tmp_path / "plan.toml"
    plan.write_text(text)
    p = subprocess.run([sys.executable, "-m", "validate.cli", "calibrate", "--public-plan", str(plan),
                        "--out-dir", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and str(plan) in lines[0] and field in lines[0] and "Traceback" not in p.stderr
    assert not list(tmp_path.glob("*.json"))


def test_the_plan_file_is_the_committed_one():
    assert PLAN_PATH == ROOT / "data/public/calibration-plan.toml"
    assert json.loads(json.dumps([s.model_dump() for s in PLAN]))  # plain data
