"""Resume, for real: a `validate sweep` subprocess against the fault-injecting stub server on 127.0.0.1,
SIGKILLed mid-point, its files torn the way a kill mid-write leaves them, then the same command again.

What each test breaks: a point whose requests all got HTTP 500 (then the server is healthy again); a
torn last line of points.jsonl; a torn last line of requests.jsonl; a hung server (the request
timeout); Ctrl-C during `sweep`; two rates that share a label.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import default_sigint
from validate.cli import main
from validate.engines.launcher import free_port
from validate.profiles import LoadOptions, LoadPoint, plan, request_timeout_s
from validate.results import PointResult
from validate.stub_server import StubOptions, StubThread

# The stub server's thread stops with streams still open (hung or killed clients): asyncio complains
# about the closed loop when those coroutines are collected. That is the stub, not what is tested here.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def sweep_args(url: str, out: Path, profile: str, num_requests: int = 4, osl: int = 4, *extra: str) -> list[str]:
    return [sys.executable, "-m", "validate.cli", "sweep", "--base-url", url, "--model", "stub", "--isl", "8",
            "--osl", str(osl), "--profile", profile, "--num-requests", str(num_requests), "--warmup", "0",
            "--out", str(out), *extra]


def run(args: list[str], timeout_s: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, env=ENV, cwd=REPO, timeout=timeout_s)


def wait_for(condition, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def lines(path: Path) -> list[str]:
    return [line for line in path.read_text().split("\n") if line.strip()] if path.exists() else []


def loads(out: Path) -> list[str]:
    return [json.loads(line)["load"] for line in lines(out / "points.jsonl")]


def warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning:")]


def assert_no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr, result.stderr


def kill_during_second_point(args: list[str], out: Path) -> None:
    """Start the sweep, SIGKILL it once the first point is stored (so the second one is in progress)."""
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV, cwd=REPO)
    try:
        wait_for(lambda: len(lines(out / "points.jsonl")) >= 1 or proc.poll() is not None, 120, "the first point")
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
    assert loads(out) == ["concurrency:1"], "the kill came after the second point was stored"


# A slow stub: 10 output tokens at 0.1 s each, so a request takes ~1 s and the 8-request second point ~4 s.
SLOW = StubOptions(token_delay_s=0.1)
PROFILE = "concurrency:1,2"


def test_a_point_that_completed_nothing_is_measured_again(tmp_path: Path):
    """Every request of the sync and burst points gets HTTP 500: the run says so (exit 2) and keeps them as
    a record; the same command against the healthy server measures both again and finishes the sweep."""
    port, out = free_port(), tmp_path / "out"
    args = sweep_args(f"http://127.0.0.1:{port}", out, "sweep", 4, 4, "--burst-size", "4", "--sweep-rates", "1")
    with StubThread(port, StubOptions(status=500)):
        first = run(args)
    assert first.returncode == 2 and first.stderr.strip().splitlines()[-1].startswith(
        "ValidateError: sweep needs completed sync and burst points"), first.stderr
    assert loads(out) == ["sync", "burst:4"]
    assert all(json.loads(line)["completed"] == 0 for line in lines(out / "points.jsonl"))
    with StubThread(port, StubOptions()):
        second = run(args)
    assert second.returncode == 0, second.stderr
    assert_no_traceback(second)
    found = warnings(second.stderr)
    assert len(found) == 2 and all("completed none of its 4 requests" in w and "HTTP 500" in w for w in found)
    points = [PointResult.model_validate_json(line) for line in lines(out / "points.jsonl")]
    assert [p.load for p in points][:2] == ["sync", "burst:4"] and len(points) == 3
    assert all(p.completed == 4 and p.failed == 0 for p in points)
    requests = [json.loads(line) for line in lines(out / "requests.jsonl")]
    assert len(requests) == 12 and all(r["error"] is None for r in requests)


def test_a_point_of_http_500s_in_a_fixed_profile_exits_2_and_is_retried(tmp_path: Path):
    port, out = free_port(), tmp_path / "out"
    args = sweep_args(f"http://127.0.0.1:{port}", out, "sync", 3)
    with StubThread(port, StubOptions(status=500)):
        first = run(args)
    last = first.stderr.strip().splitlines()[-1]
    assert first.returncode == 2 and last.startswith("PointFailedError: load point sync completed none"), first.stderr
    with StubThread(port, StubOptions()):
        second = run(args)
    assert second.returncode == 0 and loads(out) == ["sync"], second.stderr
    assert json.loads(lines(out / "points.jsonl")[0])["completed"] == 3


def test_torn_last_line_of_points_is_dropped_not_appended_to(tmp_path: Path):
    """Killed mid-point, then a half-written point line (what a kill inside the write leaves): the resume
    warns once, cuts the fragment, measures the missing point and appends it on a line of its own."""
    port, out = free_port(), tmp_path / "out"
    args = sweep_args(f"http://127.0.0.1:{port}", out, PROFILE, 8, 10)
    with StubThread(port, SLOW):
        kill_during_second_point(args, out)
        stored = lines(out / "points.jsonl")[0]
        fragment = stored.replace('"concurrency:1"', '"concurrency:2"')[: len(stored) // 2]
        with open(out / "points.jsonl", "a") as f:
            f.write(fragment)  # no newline: torn
        resumed = run(args)
        assert resumed.returncode == 0, resumed.stderr
        assert_no_traceback(resumed)
        (warning,) = warnings(resumed.stderr)
        assert "torn last line 2 of" in warning and "points.jsonl" in warning
        assert loads(out) == ["concurrency:1", "concurrency:2"]  # every line parses: nothing glued on
        assert lines(out / "points.jsonl")[0] == stored
        again = run(args)  # everything stored: nothing to warn about, nothing measured
    assert again.returncode == 0 and warnings(again.stderr) == [] and "kept from an earlier run" in again.stderr
    assert loads(out) == ["concurrency:1", "concurrency:2"]


def test_torn_first_point_is_measured_again(tmp_path: Path):
    """The only stored point cut in half (killed while writing it): it is dropped and measured again."""
    port, out = free_port(), tmp_path / "out"
    args = sweep_args(f"http://127.0.0.1:{port}", out, PROFILE, 8, 10)
    with StubThread(port, SLOW):
        kill_during_second_point(args, out)
        path = out / "points.jsonl"
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        resumed = run(args)
    assert resumed.returncode == 0, resumed.stderr
    assert len(warnings(resumed.stderr)) == 1 and loads(out) == ["concurrency:1", "concurrency:2"]
    requests = [json.loads(line) for line in lines(out / "requests.jsonl")]
    assert [r["load"] for r in requests] == ["concurrency:1"] * 8 + ["concurrency:2"] * 8  # the orphans went


def test_torn_last_line_of_requests_is_dropped(tmp_path: Path):
    """Killed mid-point, then requests.jsonl's last line cut in half: the resume warns and goes on (it used
    to end in a traceback)."""
    port, out = free_port(), tmp_path / "out"
    args = sweep_args(f"http://127.0.0.1:{port}", out, PROFILE, 8, 10)
    with StubThread(port, SLOW):
        kill_during_second_point(args, out)
        path = out / "requests.jsonl"
        assert len(lines(path)) == 8
        path.write_bytes(path.read_bytes()[:-40])
        resumed = run(args)
    assert resumed.returncode == 0, resumed.stderr
    assert_no_traceback(resumed)
    (warning,) = warnings(resumed.stderr)
    assert "torn last line 8 of" in warning and "requests.jsonl" in warning
    requests = [json.loads(line) for line in lines(path)]
    assert [r["load"] for r in requests] == ["concurrency:1"] * 7 + ["concurrency:2"] * 8
    assert loads(out) == ["concurrency:1", "concurrency:2"]


def test_a_hung_server_costs_the_request_timeout_not_half_an_hour(tmp_path: Path):
    """The stub streams one token every 0.5 s, so a 50-token request would take 25 s; with a 2 s timeout
    (start to end of the stream, not between bytes) each request is cut at 2 s and recorded as failed."""
    port, out = free_port(), tmp_path / "out"
    args = sweep_args(f"http://127.0.0.1:{port}", out, "sync", 2, 50, "--request-timeout-s", "2")
    with StubThread(port, StubOptions(token_delay_s=0.5)):
        t0 = time.monotonic()
        result = run(args)
        took_s = time.monotonic() - t0
    assert result.returncode == 2 and result.stderr.strip().splitlines()[-1].startswith(
        "PointFailedError: load point sync completed none of its requests (Timeout: no complete response within "
        "the request timeout of 2 s (after"), result.stderr
    assert took_s < 60, took_s


def test_default_request_timeout_follows_the_load():
    options = LoadOptions(num_requests=100)
    assert request_timeout_s(LoadPoint(kind="sync"), options, 1024 + 128) == pytest.approx(61.152)
    assert request_timeout_s(LoadPoint(kind="burst", value=1000), options, 1152) == pytest.approx(1212)
    assert request_timeout_s(LoadPoint(kind="concurrency", value=64), options, 1152) == pytest.approx(60 + 64 * 1.152)
    capped = LoadOptions(num_requests=100, max_concurrency=8)
    assert request_timeout_s(LoadPoint(kind="rate", value=5.0), capped, 1000) == pytest.approx(68)
    timed = LoadOptions(num_requests=None, duration_s=10)
    assert request_timeout_s(LoadPoint(kind="rate", value=2.0), timed, 1000) == pytest.approx(80)


def test_ctrl_c_during_sweep_does_not_claim_an_engine(tmp_path: Path):
    port, out = free_port(), tmp_path / "out"
    args = sweep_args(f"http://127.0.0.1:{port}", out, PROFILE, 8, 10)
    with StubThread(port, SLOW):
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV,
                                cwd=REPO, preexec_fn=default_sigint)
        try:
            wait_for(lambda: len(lines(out / "points.jsonl")) >= 1 or proc.poll() is not None, 120, "a point")
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=60)
        finally:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == f"Interrupted: stopped; finished points are kept in {out}"
    assert loads(out) == ["concurrency:1"]


def test_rates_that_share_a_label_are_refused(tmp_path: Path, capsys):
    code = main(["sweep", "--base-url", "http://127.0.0.1:9", "--model", "m", "--isl", "8", "--osl", "8",
                 "--profile", "rate:1.0000001,1.0000002", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0] == ("UsageError: --profile rate:1.0000001,1.0000002: 1.0000001 and 1.0000002 are the same load point rate:1 "
                      "(labels keep 6 significant digits); give distinct values")


def test_sweep_rates_that_would_share_a_label_are_refused():
    def point(load: str, rps: float) -> PointResult:
        return PointResult(load=load, completed=10, failed=0, duration_s=1.0, requests_per_s=rps,
                           output_tokens_per_s=0.0, total_tokens_per_s=0.0)
    done = {"sync": point("sync", 10.0), "burst:8": point("burst:8", 10.0000001)}
    with pytest.raises(Exception, match="not distinct to 6 significant digits"):
        list(plan("sweep", LoadOptions(num_requests=8, sweep_rates=3), done))
