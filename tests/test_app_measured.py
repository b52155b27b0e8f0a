"""The Measured tab's telemetry and the app's uploads of every format `validate import` reads.

Telemetry: the committed H200 runs of sittings 9 and 10 (data/measurements/h200/vllm-0.26.0/sitting-9, -10) carry
the engine's counters and the GPUs' power per point; the synthetic fixture runs (tests/fixtures/measurements) were
written before there were counters. Uploads: the real files of tests/fixtures/ (AIPerf, genai-perf, llm-d) and the
InferenceX rows the public corpus reads, through validate.importers as the CLI reads them; a file it refuses shows
the CLI's one-line error. Through Streamlit's AppTest (in-process, as tests/test_app_page.py) and, for what the
page draws, a real headless Chromium against `streamlit run app.py` (as tests/test_app_browser.py): waits for
states, not for time.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
from pathlib import Path

import pandas as pd
import pytest
import app_driver  # tests/app_driver.py
from app_driver import custom_shape, open_tab, rerun  # noqa: F401
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # appkit/ beside app.py (until it is packaged)

from appkit import measured  # noqa: E402
from capacity import Scenario  # noqa: E402
from validate.cli import main  # noqa: E402
from validate.compare import load_run  # noqa: E402
from validate.importers import import_runs  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
H200 = ROOT / "data" / "measurements" / "h200" / "vllm-0.26.0"
SITTING_9, SITTING_10 = H200 / "sitting-9", H200 / "sitting-10"
PREFIX_RUN = SITTING_9 / "Llama-3.1-8B-bf16-prefix-s9" / "2048x128-prefix90"
AIPERF = FIXTURES / "aiperf" / "run1"
GENAI_PERF = FIXTURES / "genai-perf" / "profile_export_genai_perf.json"
BR_YAML = FIXTURES / "llm-d" / "br_v0_2_1_example.yaml"
INFERENCEX = ROOT / "data" / "public" / "raw" / "inferencex-fixture-sample.jsonl"
SIDEBAR = {"model": "meta-llama/Llama-3.1-8B", "gpu": "h200-sxm", "tp": 1, "precision": "bf16",
           "kv_precision": "bf16", "engine": "vllm"}
CHROMIUM = Path("/usr/bin/chromium")


def cli_error(path: Path, tmp_path: Path) -> str:
    """What `validate import FILE` prints on stderr, with the file's name for its path (as the app names it)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert main(["import", str(path), "--out", str(tmp_path / "cli-out")]) == 2
    return err.getvalue().strip().replace(f"{path.parent}/", "")


# ---------------------------------------------------------------- telemetry per point (pure)

def test_telemetry_columns_of_a_point_with_counters_and_of_an_old_one():
    point = next(p for p in load_run(PREFIX_RUN).points if p.load == "concurrency:16")
    cols = measured.telemetry_columns(point)
    assert cols["engine_counters"] == point.engine_telemetry.describe()
    assert "prefix-cache hit rate" in cols["engine_counters"] and "running up to" in cols["engine_counters"]
    assert cols["gpu_mean_power_w"] == point.gpu_telemetry.mean_power_w > 0
    assert cols["gpu_joules_per_output_token"] == point.gpu_telemetry.joules_per_output_token > 0
    old = load_run(next((FIXTURES / "measurements").rglob("points.jsonl")).parent).points[0]
    assert measured.telemetry_columns(old) == {"engine_counters": "no counters recorded", "gpu_mean_power_w": None,
                                               "gpu_joules_per_output_token": None, "telemetry_note": ""}


def test_predicted_rows_carry_each_points_own_telemetry():
    """Sitting 10's points (counters and power) beside the synthetic fixture runs (none): each row its own."""
    new, errors = measured.load_corpus(SITTING_10)
    old, more_errors = measured.load_corpus(FIXTURES / "measurements")
    runs = [*new, *old]
    assert not errors + more_errors and new and old
    table = measured.runs_table(runs)
    rows = measured.predict_points(runs, table, Scenario())
    assert len(rows) == len(table)
    for _, row in rows.iterrows():
        point = next(p for p in next(r for r in runs if r.source == row["source"]).run.points if p.load == row["load"])
        if point.engine_telemetry is None:
            assert row["engine_counters"] == "no counters recorded" and pd.isna(row["gpu_mean_power_w"])
        else:
            assert row["engine_counters"] == point.engine_telemetry.describe()
            assert row["gpu_mean_power_w"] == point.gpu_telemetry.mean_power_w
    assert (rows["engine_counters"] == "no counters recorded").sum() == sum(len(r.run.points) for r in old)


# ---------------------------------------------------------------- uploads through validate.importers (pure)

def test_inferencex_rows_upload_as_one_run_per_configuration():
    runs, errors = measured.runs_from_uploads([(INFERENCEX.name, INFERENCEX.read_bytes())], SIDEBAR)
    imported = import_runs(INFERENCEX, ["x"])
    assert errors == [] and len(runs) == len(imported) > 1
    for run, expected in zip(runs, imported):
        assert run.source == f"{INFERENCEX.name} · {expected.folder}"
        assert run.run.points == expected.points
        assert {k: run.run.scenario[k] for k in ("model", "gpu", "engine", "precision")} == {
            k: expected.scenario[k] for k in ("model", "gpu", "engine", "precision")}  # the rows', not the sidebar's


def test_aiperf_records_upload_with_their_summary():
    records = (AIPERF / "profile_export.jsonl").read_bytes()
    summary = (AIPERF / "profile_export_aiperf.json").read_bytes()
    runs, errors = measured.runs_from_uploads([("profile_export.jsonl", records),
                                               ("profile_export_aiperf.json", summary)], SIDEBAR)
    assert errors == [] and len(runs) == 1  # the summary is read beside the records, not imported again
    (point,) = runs[0].run.points
    assert (point.source, point.completed, point.failed) == ("aiperf-records", 89, 11)
    assert point == import_runs(AIPERF / "profile_export.jsonl", ["x"])[0].points[0]


@pytest.mark.parametrize("name, data", [
    ("profile_export.jsonl", (AIPERF / "profile_export.jsonl").read_bytes()),  # without its summary
    (GENAI_PERF.name, GENAI_PERF.read_bytes()),  # no request_count, no export beside it
    ("rows.jsonl", INFERENCEX.read_bytes().replace(b'"conc":', b'"conc":-', 1)),
    ("report.json", b'{"a": 1}'),
    ("report.json", b'{"hidden_size": 4096, '),
])
def test_a_file_the_importers_refuse_is_the_clis_one_line(tmp_path, name, data):
    path = tmp_path / "cli" / name
    path.parent.mkdir()
    path.write_bytes(data)
    runs, errors = measured.runs_from_uploads([(name, data)], SIDEBAR)
    assert runs == [] and errors == [cli_error(path, tmp_path)]
    assert errors[0].startswith(f"ImportFormatError: {name}") and "\n" not in errors[0]


def test_llm_d_yaml_and_a_bad_file_beside_good_ones():
    files = [(BR_YAML.name, BR_YAML.read_bytes()), ("report.json", b"[]"),
             ("profile_export_aiperf.json", (AIPERF / "profile_export_aiperf.json").read_bytes())]
    runs, errors = measured.runs_from_uploads(files, SIDEBAR)
    assert [r.source for r in runs] == [BR_YAML.name, "profile_export_aiperf.json"]
    assert len(errors) == 1 and errors[0].startswith("ImportFormatError: report.json: expected a JSON object")


# ---------------------------------------------------------------- the Measured tab (AppTest)

def run_app(corpus: Path, monkeypatch) -> AppTest:
    """The page with `corpus` as its measured corpus."""
    monkeypatch.setenv("LLMCAP_MEASUREMENTS_DIR", str(corpus))
    return app_driver.run_app(timeout_s=120)


def test_measured_tab_shows_the_counters_and_power_of_each_point(monkeypatch):
    """Sitting 9's Llama-3.1-8B prefix runs (2,048 → 128, shared prefix 0, 50 and 90 %): beside the table of
    measured against predicted, a table of what the engine counted (its prefix-cache hit rate among them) and
    what the GPU drew, point by point."""
    at = open_tab(custom_shape(run_app(SITTING_9, monkeypatch), 2048, 128), "Measured vs predicted")
    assert not at.error, [e.value for e in at.error]
    compared, recorded = (d.value for d in at.dataframe)
    runs, _ = measured.load_corpus(SITTING_9)
    expected = {(r.source, p.load): p for r in runs if r.source.startswith("Llama-3.1-8B-bf16-prefix-s9")
                for p in r.run.points}
    assert len(compared) == len(recorded) == len(expected) == 9
    assert list(recorded[["source", "load"]].itertuples(index=False)) == list(
        compared[["source", "load"]].itertuples(index=False))
    assert list(recorded.columns) == ["origin", "source", "load", "engine_counters", "gpu_mean_power_w",
                                      "gpu_joules_per_output_token"]  # no point lacks a part: no note column
    for _, row in recorded.iterrows():
        point = expected[(row["source"], row["load"])]
        assert row["engine_counters"] == point.engine_telemetry.describe()
        assert row["gpu_mean_power_w"] == pytest.approx(point.gpu_telemetry.mean_power_w)
        assert row["gpu_joules_per_output_token"] == pytest.approx(point.gpu_telemetry.joules_per_output_token)
    rates = {r.split("prefix-cache hit rate ")[1].split(";")[0] for r in recorded["engine_counters"]}
    assert {"0%", "50%"} <= rates
    assert any("9 of 9 points have it" in m.value for m in at.markdown)


def test_measured_tab_says_no_counters_for_old_points(monkeypatch):
    at = open_tab(run_app(FIXTURES / "measurements", monkeypatch), "Measured vs predicted")
    assert len(at.dataframe) == 1 and len(at.dataframe[0].value) == 6  # the comparison alone
    assert any("no counters recorded for these points" in c.value for c in at.caption)


def test_inferencex_and_aiperf_uploads_reach_the_explorer(monkeypatch):
    at = open_tab(run_app(FIXTURES / "measurements", monkeypatch), "Measured vs predicted")
    at.sidebar.file_uploader[0].set_value([
        (INFERENCEX.name, INFERENCEX.read_bytes(), "application/octet-stream"),
        ("profile_export.jsonl", (AIPERF / "profile_export.jsonl").read_bytes(), "application/octet-stream"),
        ("profile_export_aiperf.json", (AIPERF / "profile_export_aiperf.json").read_bytes(), "application/json")])
    rerun(at)
    assert not at.error, [e.value for e in at.error]
    open_tab(at, "Explorer")
    at.selectbox(key="ex_ttft").set_value("any")
    rerun(at)
    models = set(at.dataframe[0].value["model"])
    assert {"deepseek-ai/DeepSeek-R1", "openai/gpt-oss-20b"} <= models  # InferenceX's rows, AIPerf's records


def test_a_refused_upload_is_one_error_line_without_a_traceback(monkeypatch, tmp_path):
    at = open_tab(run_app(FIXTURES / "measurements", monkeypatch), "Measured vs predicted")
    at.sidebar.file_uploader[0].set_value((GENAI_PERF.name, GENAI_PERF.read_bytes(), "application/json"))
    rerun(at)
    assert [e.value for e in at.error] == [cli_error(GENAI_PERF, tmp_path)]
    assert len(at.dataframe[0].value) == 6  # the project's points are still there
    assert not at.exception


# ---------------------------------------------------------------- in a real browser

_spec = importlib.util.spec_from_file_location("screenshot_app", ROOT / "scripts" / "screenshot_app.py")
shots = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(shots)


@pytest.fixture(scope="module")
def page():
    with shots.streamlit_server({"LLMCAP_MEASUREMENTS_DIR": str(SITTING_9)}) as url, shots.chromium_page() as p:
        p.goto(url)
        shots.wait_idle(p, 60_000)
        yield p


def grid_text(page, text: str, timeout_ms: float = 60_000) -> None:
    """Wait until a cell of a table on the page holds `text`. Streamlit's data grid draws on a canvas and keeps the
    cells in view in a hidden accessible table beside it: the cell is attached there, the table itself visible."""
    cell = page.locator('[role="gridcell"]').filter(has_text=text)
    table = page.locator('[data-testid="stDataFrame"]').filter(has=cell)
    table.locator(cell).first.wait_for(state="attached", timeout=timeout_ms)
    assert table.first.is_visible()


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's Chromium at /usr/bin/chromium (`make browser`)")
def test_the_page_shows_counters_and_the_clis_error_line(page, tmp_path):
    sidebar = page.locator('[data-testid="stSidebar"]')
    app_driver.choose(page, "Request shape", "custom")
    for label, value in (("Input tokens", "2048"), ("Output tokens", "128")):
        field = sidebar.get_by_label(label, exact=True)
        field.wait_for(timeout=20_000)
        field.fill(value)
        field.press("Enter")
        shots.wait_idle(page)
    shots.open_tab(page, "Measured vs predicted")
    page.wait_for_function("() => document.querySelectorAll('[data-testid=\"stDataFrame\"]').length === 2",
                           timeout=60_000)  # measured against predicted, and what the engine and GPUs recorded
    grid_text(page, "prefix-cache hit rate 50%")
    (tmp_path / "up").mkdir()
    bad, rows = tmp_path / "up" / GENAI_PERF.name, tmp_path / "up" / "rows.jsonl"  # a short name shows whole
    bad.write_bytes(GENAI_PERF.read_bytes())
    rows.write_bytes(INFERENCEX.read_bytes())
    sidebar.locator('[data-testid="stFileUploaderDropzoneInput"]').last.set_input_files([str(bad), str(rows)])
    page.get_by_text("rows.jsonl", exact=True).first.wait_for(timeout=20_000)
    errors = page.locator('[data-testid="stAlertContentError"] [data-testid="stMarkdownContainer"]')
    errors.first.wait_for(timeout=30_000)
    shots.wait_idle(page)
    assert [e.strip() for e in errors.all_inner_texts()] == [cli_error(GENAI_PERF, tmp_path)]  # rows: no error
    grid_text(page, "prefix-cache hit rate 50%")
    assert "Traceback" not in page.content()
