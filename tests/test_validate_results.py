"""The --out folder: append-as-you-go, torn lines, orphan requests, resume checks; and the importers."""

from __future__ import annotations

import json

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
