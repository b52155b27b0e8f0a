"""The --out folder: append-as-you-go, torn lines, orphan requests, resume checks; and the importers."""

from __future__ import annotations

import json
import math

import pytest

from validate.errors import ImportFormatError, ResultsError
from validate.importers import import_file
from validate.results import PointResult, RequestRecord, ResultsDir, RunMetadata
from validate.runner import pending_points, stored_points
from validate.profiles import LoadOptions

REQUIRED_KEYS = {"load", "completed", "failed", "duration_s", "requests_per_s", "output_tokens_per_s",
                 "total_tokens_per_s", "mean_ttft_s", "median_ttft_s", "p90_ttft_s", "p99_ttft_s", "mean_itl_s",
                 "median_itl_s", "p90_itl_s", "p99_itl_s", "mean_e2e_latency_s"}


def point(load: str, rps: float = 5.0) -> PointResult:
    return PointResult(load=load, completed=10, failed=0, duration_s=2.0, requests_per_s=rps,
                       output_tokens_per_s=50.0, total_tokens_per_s=100.0)


def metadata(**workload) -> RunMetadata:
    return RunMetadata(validate_command=["validate"], started_at="2026-01-01T00:00:00+00:00", host="h",
                       workload={"isl": 64, "osl": 16, "length_dist": "fixed", **workload})


def test_points_have_the_required_keys(tmp_path):
    results = ResultsDir(tmp_path)
    results.append_point(point("sync"))
    line = json.loads((tmp_path / "points.jsonl").read_text())
    assert REQUIRED_KEYS <= set(line)


def test_torn_last_line_is_ignored(tmp_path):
    results = ResultsDir(tmp_path)
    results.append_point(point("sync"))
    with open(tmp_path / "points.jsonl", "a") as f:
        f.write('{"load": "burst:8", "compl')
    assert [p.load for p in results.points()] == ["sync"]


def test_resume_keeps_points_and_drops_orphan_requests(tmp_path):
    results = ResultsDir(tmp_path)
    results.write_metadata(metadata())
    results.append_point(point("sync"))
    rec = dict(index=0, start_s=0.0, end_s=1.0)
    results.append_requests([RequestRecord(load="sync", **rec), RequestRecord(load="burst:8", **rec)])
    done = stored_points(results, metadata())
    assert list(done) == ["sync"] and [r.load for r in results.requests()] == ["sync"]
    options = LoadOptions(num_requests=8, sweep_rates=2)
    assert pending_points("sync", options, done) is False
    assert pending_points("sweep", options, done) is True


def test_resume_refuses_another_workload(tmp_path):
    results = ResultsDir(tmp_path)
    results.write_metadata(metadata())
    results.append_point(point("sync"))
    with pytest.raises(ResultsError, match="isl 64 there, 128 now"):
        stored_points(results, metadata(isl=128))


def test_import_rejects_unknown_json(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"hello": 1}')
    with pytest.raises(ImportFormatError):
        import_file(path, ["validate", "import"])


# A report in the shape of guidellm's GenerativeBenchmarksReport (v0.4+: metrics.<name>.successful with
# mean/median/percentiles; strategy under args.strategy), two benchmarks: synchronous and constant rate.
GUIDELLM = {"benchmarks": [
    {"args": {"strategy": {"type_": "synchronous"}}, "duration": 10.0,
     "request_totals": {"successful": 20, "errored": 1, "incomplete": 0, "total": 21},
     "metrics": {"requests_per_second": {"successful": {"mean": 2.0}},
                 "output_tokens_per_second": {"successful": {"mean": 256.0}},
                 "tokens_per_second": {"successful": {"mean": 512.0}},
                 "time_to_first_token_ms": {"successful": {"mean": 40.0, "median": 38.0,
                                                           "percentiles": {"p90": 50.0, "p99": 70.0}}},
                 "inter_token_latency_ms": {"successful": {"mean": 3.0, "median": 2.9,
                                                           "percentiles": {"p90": 3.5, "p99": 4.0}}},
                 "request_latency": {"successful": {"mean": 0.43, "median": 0.42,
                                                    "percentiles": {"p90": 0.5, "p99": 0.6}}},
                 "prompt_token_count": {"successful": {"mean": 128.0}},
                 "output_token_count": {"successful": {"mean": 128.0}}}},
    {"args": {"strategy": {"type_": "constant", "rate": 4.5}}, "duration": 10.0,
     "request_totals": {"successful": 45, "errored": 0},
     "metrics": {"requests_per_second": {"successful": {"mean": 4.4}}}},
]}


def test_guidellm_import(tmp_path):
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps(GUIDELLM))
    points, requests, meta = import_file(path, ["validate", "import", str(path)])
    assert [p.load for p in points] == ["sync", "rate:4.5"] and requests == []
    sync = points[0]
    assert (sync.completed, sync.failed, sync.requests_per_s) == (20, 1, 2.0)
    assert sync.mean_ttft_s == pytest.approx(0.040) and sync.p90_ttft_s == pytest.approx(0.050)
    assert sync.mean_itl_s == pytest.approx(0.003) and sync.mean_tpot_s == pytest.approx(0.003)
    assert sync.p99_e2e_latency_s == pytest.approx(0.6) and sync.isl == 128
    assert REQUIRED_KEYS <= set(sync.model_dump()) and sync.source == "guidellm"
    assert meta.workload["isl"] == 128


# ---- issue 14: every malformed input is one line naming the file and the field (reproducers per class)
VLLM_FIXTURE = json.loads((__import__("pathlib").Path(__file__).parent / "fixtures"
                           / "vllm-bench-serve-llama8b-c16.json").read_text())
DETAILED = {**VLLM_FIXTURE, "num_prompts": 2, "completed": 2, "ttfts": [0.03, 0.04], "latencies": [1.0, 1.1],
            "itls": [[0.01] * 3, [0.01] * 3], "input_lens": [1024, 1024], "output_lens": [4, 4]}


@pytest.mark.parametrize("data, expected", [
    ({"request_throughput": 1, "completed": 1}, "duration: Field required; and 4 more"),
    ({**VLLM_FIXTURE, "duration": "14"}, "duration: Input should be a valid number (got '14')"),
    ({**VLLM_FIXTURE, "duration": math.inf}, "duration: Input should be a finite number (got inf)"),
    ({**VLLM_FIXTURE, "mean_ttft_ms": math.nan}, "mean_ttft_ms: Input should be a finite number (got nan)"),
    ({**VLLM_FIXTURE, "duration": -3.0}, "duration: Input should be greater than 0 (got -3.0)"),
    ({**VLLM_FIXTURE, "completed": -1}, "completed: Input should be greater than or equal to 0 (got -1)"),
    ({**VLLM_FIXTURE, "total_input_tokens": 10**400}, "total_input_tokens: Input should be less than or equal to"),
    ({**DETAILED, "latencies": [1.0]}, "ttfts/itls/latencies/input_lens/output_lens: expected one entry per request "
                                       "in each (got ttfts 2, itls 2, latencies 1, input_lens 2, output_lens 2)"),
    ({"benchmarks": 5}, "benchmarks: Input should be a valid list (got 5)"),
    ({"benchmarks": [{"args": {"strategy": {"type_": "concurrent"}}}]},
     "benchmarks.0.strategy.streams: expected a positive integer for a concurrent strategy"),
    ({"benchmarks": [{"duration": -1.0}]}, "benchmarks.0.duration: Input should be greater than or equal to 0"),
])
def test_malformed_import_is_one_line_naming_the_field(tmp_path, data, expected):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ImportFormatError) as err:
        import_file(path, ["validate", "import"])
    assert str(err.value).startswith(f"{path}: {expected}") and "\n" not in str(err.value)


def test_deeply_nested_import_is_refused(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"benchmarks": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ImportFormatError, match="nested too deeply"):
        import_file(path, ["validate", "import"])


def test_imported_detailed_lists_recompute_latencies(tmp_path):
    path = tmp_path / "detailed.json"
    path.write_text(json.dumps(DETAILED))
    (p,), requests, _ = import_file(path, ["validate", "import"])
    assert len(requests) == 2 and p.mean_ttft_s == pytest.approx(0.035) and p.mean_itl_s == pytest.approx(0.01)


def test_a_bad_line_before_the_last_is_an_error_naming_file_line_and_field(tmp_path):
    results = ResultsDir(tmp_path)
    results.append_point(point("sync"))
    with open(tmp_path / "points.jsonl", "ab") as f:
        f.write(b'{"load": "burst:8", "completed": "ten"}\n')
    results.append_point(point("burst:16"))
    with pytest.raises(ResultsError) as err:
        results.points()
    assert str(err.value).startswith(f"{tmp_path / 'points.jsonl'}:2: completed: Input should be a valid integer")


def test_torn_requests_line_is_cut_on_resume_and_appends_never_glue(tmp_path):
    results = ResultsDir(tmp_path)
    results.write_metadata(metadata())
    results.append_point(point("sync"))
    results.append_requests([RequestRecord(load="sync", index=i, start_s=0.0, end_s=1.0) for i in range(2)])
    with open(tmp_path / "requests.jsonl", "a") as f:
        f.write('{"load": "sync", "ind')
    warned: list[str] = []
    assert list(stored_points(results, metadata(), warn=warned.append)) == ["sync"]
    assert len(warned) == 1 and "torn last line 3 of" in warned[0]
    assert [r.index for r in results.requests()] == [0, 1]
    with open(tmp_path / "points.jsonl", "rb+") as f:  # a complete last line that lost its newline
        f.truncate(f.seek(0, 2) - 1)
    results.append_point(point("burst:8"))
    assert [p.load for p in results.points()] == ["sync", "burst:8"]


@pytest.mark.parametrize("content, expected", [
    (b'{"validate_command": ["valid', "Invalid JSON: EOF while parsing"),
    (b"null", "Input should be an object"),
    (b"[]", "Input should be an object"),
    (b"\xff\xfe\x00binary", "Invalid JSON"),
    (b'{"validate_command": "validate", "started_at": "x", "host": "h"}', "validate_command: Input should be a valid array"),
])
def test_malformed_metadata_is_one_line(tmp_path, content, expected):
    (tmp_path / "metadata.json").write_bytes(content)
    with pytest.raises(ResultsError) as err:
        ResultsDir(tmp_path).read_metadata()
    assert str(err.value).startswith(f"{tmp_path / 'metadata.json'}: {expected}") and "\n" not in str(err.value)
