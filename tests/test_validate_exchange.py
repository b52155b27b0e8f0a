"""Import of other tools' files (real ones, tests/fixtures/<tool>/SOURCE.md) and export as llm-d Benchmark
Reports (checked against the published JSON Schema), CSV and parquet; round trips."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from datetime import datetime
from pathlib import Path

import jsonschema
import pytest

from validate.cli import main
from validate.errors import ImportFormatError
from validate.export import benchmark_report, point_rows
from validate.importers import import_file, import_files, import_runs
from validate.results import PointResult, ResultsDir, RunMetadata

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "fixtures"
AIPERF_OLD = FIX / "aiperf" / "run1" / "profile_export_aiperf.json"
AIPERF_RECORDS = FIX / "aiperf" / "run1" / "profile_export.jsonl"
AIPERF_NEW = FIX / "aiperf" / "v0.10-concurrency2" / "profile_export_aiperf.json"
GENAI_PERF = FIX / "genai-perf" / "profile_export_genai_perf.json"
GUIDELLM_V2 = FIX / "guidellm" / "benchmarks_v2.json"
BR_EXAMPLE = FIX / "llm-d" / "br_v0_2_1_example.yaml"
BR_V02_EXAMPLE = FIX / "llm-d" / "br_v0_2_example.yaml"
INFERENCEX = REPO / "data" / "public" / "raw" / "inferencex-fixture-sample.jsonl"
VLLM = FIX / "vllm-bench-serve-llama8b-c16.json"
MEASURED = sorted(p.parent for p in (FIX / "measurements").rglob("points.jsonl"))
SCHEMAS = {v: json.loads((FIX / "llm-d" / f"br_v{v.replace('.', '_')}_json_schema.json").read_text())
           for v in ("0.2", "0.2.1")}
FIXTURES = [AIPERF_OLD, AIPERF_RECORDS, AIPERF_NEW, GENAI_PERF, GUIDELLM_V2, BR_EXAMPLE, BR_V02_EXAMPLE, INFERENCEX,
            VLLM]


def cli(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    return code, err.getvalue()


def test_aiperf_summary_of_the_early_layout():
    (p,), requests, meta = import_file(AIPERF_OLD, ["x"])
    assert (p.load, p.completed, p.failed, requests) == ("concurrency:100", 89, 11, [])
    assert p.mean_ttft_s == pytest.approx(2343.219436988764e-3, rel=1e-12)
    assert p.p90_ttft_s == pytest.approx(3796.9311679999996e-3, rel=1e-12)
    assert p.mean_itl_s == pytest.approx(27.755153106189347e-3)  # inter_chunk_latency: the chunk gaps
    assert p.mean_tpot_s == pytest.approx(27.763065454471807e-3)  # inter_token_latency: (e2e - TTFT) / (n - 1)
    assert p.duration_s == pytest.approx(9.317788951) and p.requests_per_s == pytest.approx(9.551622221540914)
    assert (p.total_input_tokens, p.total_output_tokens, p.isl) == (48950, 21624, 550.0)
    assert meta.model_id == "openai/gpt-oss-20b" and p.source == "aiperf"


def test_aiperf_summary_of_the_current_layout():
    (p,), _, meta = import_file(AIPERF_NEW, ["x"])
    assert (p.load, p.completed, p.failed, p.warmup_requests) == ("concurrency:2", 96, 0, 16)
    assert p.mean_e2e_latency_s == pytest.approx(2.61775843253125) and p.median_ttft_s == pytest.approx(0.1364860965)
    assert p.total_tokens_per_s == pytest.approx(2454.2643011558785)
    assert meta.model_id == "qwen3.6-nvfp4" and meta.workload["aiperf_version"] == "0.10.0"


def test_aiperf_records_recompute_what_the_summary_says():
    """The per-record file of the same run, summarized with this package's definitions, gives AIPerf's numbers."""
    (records,), requests, _ = import_file(AIPERF_RECORDS, ["x"])
    (summary,), _, _ = import_file(AIPERF_OLD, ["x"])
    assert len(requests) == 100 and sum(not r.ok for r in requests) == 11
    assert (records.load, records.completed, records.failed) == (summary.load, 89, 11)
    for key in ("mean_ttft_s", "median_ttft_s", "p90_ttft_s", "p99_ttft_s", "mean_e2e_latency_s", "p99_e2e_latency_s",
                "mean_itl_s", "p99_itl_s", "mean_tpot_s", "isl", "osl", "requests_per_s", "duration_s"):
        assert getattr(records, key) == pytest.approx(getattr(summary, key), rel=1e-6), key


def test_aiperf_records_need_their_summary_beside_them(tmp_path):
    lone = tmp_path / "profile_export.jsonl"
    lone.write_bytes(AIPERF_RECORDS.read_bytes())
    with pytest.raises(ImportFormatError, match="profile_export_aiperf.json beside it"):
        import_file(lone, ["x"])


GENAI_RPS = 17.222547659562533  # the fixture summary's request_throughput.avg


def genai_perf_run(folder: Path, requests: int = 200, load: dict | None = None) -> Path:
    """The real genai-perf summary with a per-request export beside it, as perf_analyzer writes one (synthetic:
    `requests` requests of the summary's load whose first send to last response spans count / throughput,
    genai-perf's benchmark duration). Returns the summary's path."""
    folder.mkdir(parents=True, exist_ok=True)
    summary = folder / "profile_export_genai_perf.json"
    summary.write_bytes(GENAI_PERF.read_bytes())
    span_ns = round(requests / GENAI_RPS * 1e9)
    sends = [i * (span_ns // 2) // requests for i in range(requests)]
    rows = [{"timestamp": t, "request_inputs": {"text_input": "synthetic"},
             "response_timestamps": [t + 184_000_000, span_ns if i == requests - 1 else t + 5_767_000_000],
             "response_outputs": [{"text_output": "a"}, {"text_output": "b"}]} for i, t in enumerate(sends)]
    export = {"experiments": [{"experiment": load or {"mode": "concurrency", "value": 100}, "requests": rows,
                               "window_boundaries": [0, span_ns]}],
              "version": "synthetic", "service_kind": "triton", "endpoint": ""}
    (folder / "profile_export.json").write_text(json.dumps(export))
    return summary


def test_genai_perf_summary_without_counts_is_refused(tmp_path):
    """The real file has no request_count and no export beside it: how many requests completed is unknown,
    so no point is stored (never one claiming 0 requests)."""
    with pytest.raises(ImportFormatError, match=r"request_count: expected the number of requests .* "
                                                "profile_export.json beside the file"):
        import_file(GENAI_PERF, ["x"])
    code, stderr = cli(["import", str(GENAI_PERF), "--out", str(tmp_path / "g")])
    assert code == 2 and stderr.startswith(f"ImportFormatError: {GENAI_PERF}: request_count: expected")
    assert len(stderr.strip().splitlines()) == 1 and not (tmp_path / "g" / "points.jsonl").exists()


def test_genai_perf_counts_the_requests_of_its_export(tmp_path):
    summary = genai_perf_run(tmp_path / "run")
    (p,), _, meta = import_file(summary, ["x"])
    assert p.load == "concurrency:100" and p.requests_per_s == pytest.approx(GENAI_RPS)
    assert (p.completed, p.failed) == (200, 0) and p.duration_s == pytest.approx(200 / GENAI_RPS)
    assert p.mean_ttft_s == pytest.approx(0.18463779366666665) and p.mean_tpot_s == pytest.approx(2.1767344516666665e-3)
    assert p.mean_itl_s == p.mean_tpot_s and p.osl == 2565.855 and meta.engine == "tensorrtllm"
    assert meta.workload["request_count_from"] == str(tmp_path / "run" / "profile_export.json")
    code, stderr = cli(["import", str(summary), "--out", str(tmp_path / "g")])
    assert code == 0 and stderr.strip().splitlines() == [f"points: {tmp_path / 'g' / 'points.jsonl'}"]
    assert [q.completed for q in ResultsDir(tmp_path / "g").points()] == [200]


def test_genai_perf_export_given_too_is_not_imported_twice(tmp_path):
    summary = genai_perf_run(tmp_path / "run")
    export = summary.with_name("profile_export.json")
    code, stderr = cli(["import", str(export), "--out", str(tmp_path / "alone")])
    assert code == 2 and stderr.startswith(f"ImportFormatError: {export}: perf_analyzer's per-request export")
    code, _ = cli(["import", str(summary), str(export), "--out", str(tmp_path / "both")])
    assert code == 0 and [q.completed for q in ResultsDir(tmp_path / "both").points()] == [200]


def test_aiperf_summary_given_with_its_records_is_not_imported_twice(tmp_path):
    code, _ = cli(["import", str(AIPERF_OLD), str(AIPERF_RECORDS), "--out", str(tmp_path / "o")])
    (p,) = ResultsDir(tmp_path / "o").points()
    assert code == 0 and p.source == "aiperf-records" and (p.completed, p.failed) == (89, 11)


@pytest.mark.parametrize("make, expected", [
    (lambda doc, _: doc.update(request_count={"unit": "count", "avg": 199}),
     "request_count.avg: expected 200 (the requests of"),
    (lambda _, export: export["experiments"][0]["experiment"].update(value=64),
     "experiments: expected one experiment of concurrency:100"),
    (lambda _, export: export["experiments"][0]["requests"].extend(export["experiments"][0]["requests"]),
     "400 requests over"),  # more than the summary's throughput allows in their span: another run's export
    (lambda _, export: export["experiments"][0]["requests"][3].update(timestamp=-1),
     "experiments.0.requests.3.timestamp: Input should be greater than or equal to 0"),
])
def test_genai_perf_export_that_disagrees_is_one_line(tmp_path, make, expected):
    summary = genai_perf_run(tmp_path / "run")
    doc, export = json.loads(summary.read_text()), json.loads(summary.with_name("profile_export.json").read_text())
    make(doc, export)
    summary.write_text(json.dumps(doc))
    summary.with_name("profile_export.json").write_text(json.dumps(export))
    code, stderr = cli(["import", str(summary), "--out", str(tmp_path / "o")])
    assert code == 2 and stderr.startswith("ImportFormatError: ") and expected in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1


def test_genai_perf_with_a_count_has_a_duration(tmp_path):
    doc = json.loads(GENAI_PERF.read_text())
    doc["request_count"] = {"unit": "count", "avg": 200}
    path = tmp_path / "profile_export_genai_perf.json"
    path.write_text(json.dumps(doc))
    (p,), _, meta = import_file(path, ["x"])
    assert p.completed == 200 and p.duration_s == pytest.approx(200 / GENAI_RPS)
    assert meta.workload["request_count_from"] == "request_count"
    doc["request_count"]["avg"] = 0
    path.write_text(json.dumps(doc))
    with pytest.raises(ImportFormatError, match="request_count.avg: expected at least one request"):
        import_file(path, ["x"])


def test_guidellm_report_of_the_current_cli():
    points, _, meta = import_file(GUIDELLM_V2, ["x"])
    assert [p.load for p in points] == ["rate:2", "rate:4"]
    assert points[0].mean_ttft_s == pytest.approx(11.481165885925293e-3)
    assert points[0].mean_tpot_s == pytest.approx(1.1508464813232422e-3)  # inter_token_latency_ms, not TPOT_ms
    assert meta.model_id == "e2e-mock-model" and meta.workload["guidellm_report_version"] == 2


@pytest.mark.parametrize("path", [BR_EXAMPLE, BR_V02_EXAMPLE])
def test_benchmark_report_examples(path):
    (p,), _, meta = import_file(path, ["x"])
    assert p.load == "rate:10" and (p.completed, p.failed) == (500, 0)
    assert p.mean_ttft_s == pytest.approx(0.0368578234128654) and p.p99_ttft_s == pytest.approx(0.05029489721637218)
    assert meta.model_id == "Qwen/Qwen3-0.6B" and meta.gpu_name == "NVIDIA-H100-80GB-HBM3" and meta.gpu_count == 8
    assert meta.started_at == "2025-11-05T18:00:42Z"  # a string, as in the JSON form


def test_inferencex_rows_become_one_folder_per_configuration(tmp_path):
    runs = import_runs(INFERENCEX, ["x"])
    assert len(runs) == len({r.folder for r in runs}) > 1
    run = next(r for r in runs if r.metadata.gpu_id == "mi355x" and "1024x1024" in r.folder)
    p = next(p for p in run.points if p.load == "concurrency:8")
    # the row: conc 8, mean_e2el 11.639..., mean_ttft 0.2117..., mean_tpot 0.01230..., 156.39 tok/s/GPU at TP 4
    assert p.requests_per_s == pytest.approx(8 / 11.63910910245031)
    assert p.osl == pytest.approx(1 + (11.63910910245031 - 0.2117364545702003) / 0.012309139977781141)
    assert p.output_tokens_per_s == pytest.approx(156.38895895867492 * 4)
    assert run.scenario == {"model": "deepseek-ai/DeepSeek-R1", "gpu": "mi355x", "engine": "sglang",
                            "precision": "mxfp4", "engine_argv": ["--tensor-parallel-size", "4"]}
    code, _ = cli(["import", str(INFERENCEX), "--out", str(tmp_path / "ix")])
    assert code == 0 and len(list((tmp_path / "ix").glob("*/scenario.json"))) == len(runs)


def test_vllm_bench_sweep_with_one_random_seed_warns(tmp_path):
    base = json.loads(VLLM.read_text())
    files = []
    for c in (16, 32):
        path = tmp_path / f"c{c}.json"
        path.write_text(json.dumps({**base, "max_concurrency": c}))
        files.append(str(path))
    code, stderr = cli(["import", *files, "--out", str(tmp_path / "sweep")])
    lines = stderr.strip().splitlines()
    assert code == 0 and sum("resent cached prompts" in line for line in lines) == 1, stderr
    meta = ResultsDir(tmp_path / "sweep").read_metadata()
    assert meta.workload["prefix_cache_reuse"]["suspected"] is True
    assert [p.load for p in ResultsDir(tmp_path / "sweep").points()] == ["concurrency:16", "concurrency:32"]


@pytest.mark.parametrize("extra", [{"seed": "1"}, {"dataset_name": "sharegpt"}])
def test_vllm_bench_sweep_with_other_seeds_or_data_does_not_warn(tmp_path, extra):
    base = json.loads(VLLM.read_text())
    (tmp_path / "a.json").write_text(json.dumps(base))
    (tmp_path / "b.json").write_text(json.dumps({**base, "max_concurrency": 32, **extra}))
    if "dataset_name" in extra:
        (tmp_path / "a.json").write_text(json.dumps({**base, **extra}))
    runs, warnings = import_files([tmp_path / "a.json", tmp_path / "b.json"], ["x"])
    assert warnings == [] and "prefix_cache_reuse" not in runs[0].metadata.workload


def test_one_folder_refuses_two_points_of_one_load(tmp_path):
    code, stderr = cli(["import", str(VLLM), str(VLLM), "--out", str(tmp_path / "x")])
    assert code == 2 and stderr.startswith("ImportFormatError: ") and "also in" in stderr


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.parent.name + "/" + p.name)
def test_every_importer_round_trips_its_fixture(tmp_path, path):
    """Imported, stored and read back unchanged; exported as Benchmark Reports and imported again: the same points.
    The genai-perf summary comes with a per-request export beside it (alone it is refused: no request count)."""
    if path == GENAI_PERF:
        path = genai_perf_run(tmp_path / "genai-perf")
    code, _ = cli(["import", str(path), "--out", str(tmp_path / "in")])
    assert code == 0
    expected = [run.points for run in import_runs(path, ["x"])]
    folders = sorted(p.parent for p in (tmp_path / "in").rglob("points.jsonl"))
    stored = {str(f): ResultsDir(f).points() for f in folders}
    assert sorted(json.dumps([p.model_dump() for p in v]) for v in stored.values()) == sorted(
        json.dumps([p.model_dump() for p in v]) for v in expected)
    for folder in folders[:3]:
        out = tmp_path / f"br-{folder.name}.json"
        assert cli(["export", str(folder), "--format", "benchmark-report", "--out", str(out)])[0] == 0
        reports = sorted(tmp_path.glob(f"br-{folder.name}*.json"))
        back = tmp_path / f"back-{folder.name}"
        assert cli(["import", *map(str, reports), "--out", str(back)])[0] == 0
        assert [p.model_dump() for p in ResultsDir(back).points()] == [p.model_dump() for p in stored[str(folder)]]


def _valid(report: dict) -> None:
    for version, schema in SCHEMAS.items():
        jsonschema.Draft202012Validator(schema).validate(report)
    start = report["run"].get("time", {}).get("start")
    if start:
        datetime.fromisoformat(start)


@pytest.mark.parametrize("run", MEASURED, ids=lambda p: p.name)
def test_export_validates_against_the_published_schema(tmp_path, run):
    out = tmp_path / "report.json"
    code, stderr = cli(["export", str(run), "--format", "benchmark-report", "--out", str(out)])
    points = ResultsDir(run).points()
    paths = sorted(tmp_path.glob("report_*.json")) if len(points) > 1 else [out]
    assert code == 0 and len(paths) == len(points) and stderr.splitlines() == [str(p) for p in paths]
    for path in paths:
        report = json.loads(path.read_text())
        _valid(report)
        assert report["version"] == "0.2.1"
        engine = report["scenario"]["stack"][0]["standardized"]
        assert engine["model"]["name"] == "meta-llama/Llama-3.1-8B"
    first = json.loads(paths[0].read_text())["results"]["request_performance"]["aggregate"]
    assert first["latency"]["time_to_first_token"]["mean"] == points[0].mean_ttft_s
    assert first["throughput"]["request_rate"] == {"units": "queries/s", "mean": points[0].requests_per_s}


def test_export_carries_telemetry_as_observability():
    point = PointResult(load="concurrency:8", completed=10, failed=0, duration_s=2.0, requests_per_s=5.0,
                        output_tokens_per_s=50.0, total_tokens_per_s=100.0, mean_ttft_s=0.1,
                        engine_telemetry={"samples": 3, "mean_running": 7.5, "max_running": 8, "preemptions": 2,
                                          "prefix_cache_hit_rate": 0.25},
                        gpu_telemetry={"source": "nvml", "gpu_indices": [0], "samples": 3, "mean_power_w": 512.0,
                                       "max_power_w": 640.0, "mean_utilization": 0.9})
    meta = RunMetadata(validate_command=["validate"], started_at="2026-01-01T00:00:00+00:00", host="h",
                       workload={"isl": 64, "osl": 16, "length_dist": "uniform:0.5"})
    report = benchmark_report(point, 0, meta)
    _valid(report)
    aggregate = report["results"]["observability"]["components"][0]["aggregate"]
    assert aggregate["running_requests"] == {"units": "count", "mean": 7.5, "max": 8}
    assert aggregate["cache_hit_rate"] == {"units": "percent", "mean": 25.0}
    assert aggregate["power_consumption"] == {"units": "Watts", "mean": 512.0, "max": 640.0}
    lengths = report["scenario"]["load"]["standardized"]["input_seq_len"]
    assert lengths == {"distribution": "uniform", "value": 64, "min": 32, "max": 96}


def test_an_edited_report_does_not_keep_its_stale_exact_point(tmp_path):
    (point,), _, meta = import_file(AIPERF_OLD, ["x"])
    report = benchmark_report(point, 0, meta)
    report["results"]["request_performance"]["aggregate"]["latency"]["time_to_first_token"]["mean"] = 9.0
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    with pytest.raises(ImportFormatError, match="native.config.point.mean_ttft_s: expected 9.0"):
        import_file(path, ["x"])


def test_csv_and_parquet_hold_every_point_with_its_metadata(tmp_path):
    dirs = [str(d) for d in MEASURED]
    assert cli(["export", *dirs, "--format", "csv", "--out", str(tmp_path / "p.csv")])[0] == 0
    rows = list(csv.DictReader(open(tmp_path / "p.csv")))
    points = [p for d in MEASURED for p in ResultsDir(d).points()]
    assert len(rows) == len(points) == len(point_rows(dirs))
    assert {"run_dir", "run_model_id", "run_gpu_id", "run_engine_argv", "run_workload_isl", "load",
            "mean_ttft_s", "p99_itl_s", "requests_per_s"} <= set(rows[0])
    assert float(rows[0]["mean_ttft_s"]) == points[0].mean_ttft_s
    pq = pytest.importorskip("pyarrow.parquet")
    assert cli(["export", *dirs, "--format", "parquet", "--out", str(tmp_path / "p.parquet")])[0] == 0
    table = pq.read_table(tmp_path / "p.parquet").to_pylist()
    assert [r["load"] for r in table] == [p.load for p in points]
    assert table[0]["mean_ttft_s"] == points[0].mean_ttft_s and table[0]["run_gpu_id"] == "h200-sxm"


@pytest.mark.parametrize("make, expected", [
    (lambda d: d["records"]["ttft"].update(unit="furlongs"), "records.ttft.unit: Input should be"),
    (lambda d: d["records"]["request_count"].update(avg=89.5), "records.request_count.avg: expected a whole number"),
    (lambda d: d["input_config"].pop("loadgen"), "input_config: expected loadgen.concurrency"),
])
def test_malformed_aiperf_summary_is_one_line(tmp_path, make, expected):
    doc = json.loads(AIPERF_OLD.read_text())
    make(doc)
    path = tmp_path / "profile_export_aiperf.json"
    path.write_text(json.dumps(doc))
    code, stderr = cli(["import", str(path), "--out", str(tmp_path / "o")])
    assert code == 2 and stderr.startswith(f"ImportFormatError: {path}") and expected in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1


def test_malformed_record_names_its_line(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "profile_export_aiperf.json").write_bytes(AIPERF_OLD.read_bytes())
    lines = AIPERF_RECORDS.read_text().splitlines()
    lines[14] = lines[14].replace('"ttft":{"value":', '"ttft":{"value":-')
    (folder / "profile_export.jsonl").write_text("\n".join(lines) + "\n")
    code, stderr = cli(["import", str(folder / "profile_export.jsonl"), "--out", str(tmp_path / "o")])
    assert code == 2 and stderr.startswith(f"ImportFormatError: {folder / 'profile_export.jsonl'}:15: metrics.ttft")


def test_malformed_inferencex_row_names_its_line(tmp_path):
    lines = INFERENCEX.read_text().splitlines()
    number = next(i for i, line in enumerate(lines) if line.startswith("{"))
    lines[number] = lines[number].replace('"conc":', '"conc":-', 1)
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ImportFormatError, match=rf"^{path}:{number + 1}: conc: Input should be greater than or equal"):
        import_runs(path, ["x"])


def test_the_app_reads_uploaded_reports_of_the_new_tools(tmp_path):
    from appkit.measured import runs_from_uploads

    (point,), _, meta = import_file(AIPERF_NEW, ["x"])
    report = json.dumps(benchmark_report(point, 0, meta)).encode()
    genai = genai_perf_run(tmp_path / "genai-perf")
    export = genai.with_name("profile_export.json")
    files = [("profile_export_aiperf.json", AIPERF_NEW.read_bytes()), ("report.json", report),
             (genai.name, genai.read_bytes()), (export.name, export.read_bytes())]
    runs, errors = runs_from_uploads(files, {"gpu": "h200-sxm", "model": "Qwen/Qwen3-8B"})
    assert errors == [] and len(runs) == 3
    assert [p.completed for p in runs[2].run.points] == [200]


def test_an_imported_aiperf_run_is_compared_once_gpu_and_model_are_named(tmp_path):
    out = tmp_path / "aiperf"
    code, _ = cli(["import", str(AIPERF_NEW), "--out", str(out), "--gpu", "h200-sxm", "--model", "Qwen/Qwen3-8B"])
    meta = ResultsDir(out).read_metadata()
    assert code == 0 and (meta.gpu_id, meta.model_id) == ("h200-sxm", "Qwen/Qwen3-8B")
    from validate.compare import compare_dirs

    df = compare_dirs([out])
    row = df[df["mode"] == "calibrated"].iloc[0]
    assert row["load"] == "concurrency:2" and row["measured_ttft_s"] == pytest.approx(0.15426432382291665)


def test_export_summarizes_the_telemetry_series_while_the_point_ran(tmp_path):
    folder = ResultsDir(tmp_path / "run")
    folder.write_metadata(RunMetadata(validate_command=["validate"], started_at="2026-01-01T00:00:00+00:00", host="h",
                                      model_id="m", workload={"isl": 64, "osl": 16}))
    folder.append_point(PointResult(load="concurrency:4", completed=8, failed=0, duration_s=3.0, requests_per_s=2.0,
                                    output_tokens_per_s=32.0, total_tokens_per_s=160.0, mean_ttft_s=0.05))
    series = {"load": "concurrency:4", "t_s": [-1.0, 0.0, 1.0, 2.0, 3.0, 4.0],
              "columns": {"kv_usage": [0.0, 0.1, 0.5, 0.9, None, 0.0], "running": [0, 4, 4, 4, 2, 0]}}
    (folder.path / "telemetry.jsonl").write_text(json.dumps(series) + "\n")
    out = tmp_path / "report.json"
    assert cli(["export", str(folder.path), "--format", "benchmark-report", "--out", str(out)])[0] == 0
    report = json.loads(out.read_text())
    _valid(report)
    component = report["results"]["observability"]["components"][0]
    kv, running = component["aggregate"]["kv_cache_usage"], component["aggregate"]["running_requests"]
    assert (kv["units"], kv["mean"], kv["max"]) == ("percent", pytest.approx(50.0), pytest.approx(90.0))  # 0 <= t <= 3 s
    assert (running["mean"], running["min"]) == (3.5, 2.0)
    assert component["raw_data_path"] == str(folder.path / "telemetry.jsonl")


def test_a_run_compares_the_same_after_a_trip_through_benchmark_reports(tmp_path):
    from validate.compare import compare_dirs

    run = MEASURED[0]
    out = tmp_path / "r.json"
    assert cli(["export", str(run), "--format", "benchmark-report", "--out", str(out)])[0] == 0
    reports = sorted(tmp_path.glob("r*.json"))
    assert cli(["import", *map(str, reports), "--out", str(tmp_path / "back")])[0] == 0
    meta, back = ResultsDir(run).read_metadata(), ResultsDir(tmp_path / "back").read_metadata()
    assert (back.engine_argv, back.model_id, back.gpu_id) == (meta.engine_argv, meta.model_id, meta.gpu_id)
    cols = ["load", "mode", "predicted_ttft_s", "predicted_itl_s", "predicted_requests_per_s", "measured_ttft_s"]
    before, after = compare_dirs([run])[cols], compare_dirs([tmp_path / "back"])[cols]
    assert before.to_dict("records") == after.to_dict("records")
