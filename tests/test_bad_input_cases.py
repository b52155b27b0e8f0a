"""Bad inputs a fuzzing pass found ending in a traceback, a hang or exit 0 (2026-12-04): each is now one stderr line
naming the file or flag, exit 2, before any work is done. Real subprocesses of both command lines; results folders
are copies of a committed measurement with one thing broken."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUN = REPO / "data/measurements/h200/vllm-0.26.0/sitting-1/Llama-3.1-8B-bf16/1024x128"
CAL = REPO / "capacity/calibrations/vllm--h200-sxm--bf16.json"


def one_line_exit_2(args: list[str], *names: str, timeout: float = 120) -> str:
    p = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout, cwd=REPO)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr[-2000:]
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


def validate(*args) -> list[str]:
    return ["-m", "validate.cli", *map(str, args)]


def capacity(*args) -> list[str]:
    return ["-m", "capacity.cli", *map(str, args)]


@pytest.fixture
def run_copy(tmp_path) -> Path:
    server = tmp_path / RUN.parent.name
    dst = server / RUN.name
    shutil.copytree(RUN, dst)
    for f in RUN.parent.iterdir():  # the server's own files (scenario.json, facts.json): what compare plans from
        if f.is_file():
            shutil.copy(f, server / f.name)
    return dst


@pytest.mark.parametrize("text, field", [("", "cannot read the requests"),
                                         ("load,index,start_s\nsync,0,0.0\n", "missing columns"),
                                         ("load,index,start_s,mean_itl_s,error\nrate:7.777,0,x,0.1,\n", "start_s")])
def test_compare_names_a_bad_requests_csv(run_copy, text, field):
    (run_copy / "requests.csv").write_text(text)
    one_line_exit_2(validate("compare", run_copy), str(run_copy / "requests.csv"), field)


def test_compare_reads_a_load_label_no_shape_reads(run_copy):
    """An imported run's label ('bogus:3') is no load shape's: compare prices what it can, no traceback."""
    lines = (run_copy / "points.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["load"] = "bogus:3"
    (run_copy / "points.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    p = subprocess.run([sys.executable, *validate("compare", run_copy)], capture_output=True, text=True, timeout=300,
                       cwd=REPO)
    assert "Traceback" not in p.stderr and p.returncode == 0, p.stderr[-2000:]


@pytest.mark.parametrize("args, names", [
    (["compare", RUN, "--report", "{tmp}"], ["--report", "is a folder"]),
    (["compare", RUN, "--report", "{tmp}/no/such/r.md"], ["--report", "does not exist"]),
    (["export", "--format", "csv", "--out", "{tmp}", RUN], ["--out", "is a folder"]),
    (["export", "--format", "benchmark-report", "--out", "{tmp}", RUN], ["--out", "is a folder"]),
    (["calibrate", "--public-plan", REPO / "data/public/calibration-plan.toml", "--out-dir", CAL], ["--out-dir", "is a file"]),
    (["sweep", "--isl", 8, "--osl", 8, "--duration-s", "inf", "--out", "{tmp}/r"], ["--duration-s"]),
    (["sweep", "--isl", 8, "--osl", 8, "--sweep-rates", 100000, "--out", "{tmp}/r"], ["--sweep-rates"]),
    (["sweep", "--isl", 8, "--osl", 8, "--num-requests", 0, "--out", "{tmp}/r"], ["--num-requests"]),
    (["run", "--model", "x", "--isl", 8, "--osl", 8, "--startup-timeout-s", "nan", "--out", "{tmp}/r"], ["--startup-timeout-s"]),
])
def test_validate_refuses_before_it_starts(tmp_path, args, names):
    one_line_exit_2(validate(*[str(a).format(tmp=tmp_path) for a in args]), *names)


def test_a_length_file_with_an_absurd_length_is_refused(tmp_path):
    f = tmp_path / "lengths.txt"
    f.write_text("99999999999 10\n")
    one_line_exit_2(validate("sweep", "--model", "x", "--isl", 8, "--osl", 8, "--length-dist", f"file:{f}", "--out", tmp_path / "r",
                             "--base-url", "http://127.0.0.1:9"), str(f))
    f.write_bytes(b"\xf7\xfe\x00binary")
    one_line_exit_2(validate("sweep", "--model", "x", "--isl", 8, "--osl", 8, "--length-dist", f"file:{f}", "--out", tmp_path / "r",
                             "--base-url", "http://127.0.0.1:9"), str(f))


def test_fleet_plans_too_large_or_not_text_are_refused(tmp_path):
    huge = tmp_path / "huge.toml"
    huge.write_text('[axes]\nmodel = ["m"]\nmax_num_seqs = [' + ", ".join(map(str, range(1, 2001))) + "]\n"
                    'max_model_len = [' + ", ".join(map(str, range(1, 1001))) + "]\n"
                    "[[axes.shape]]\nisl = 8\nosl = 8\n")
    one_line_exit_2(validate("fleet", huge, "--dry-run"), str(huge), "2,000,000 configurations", timeout=60)
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xf7\xfe\x00")
    one_line_exit_2(validate("fleet", binary, "--dry-run"), str(binary), "cannot read", timeout=60)
    bad = tmp_path / "gmu.toml"
    bad.write_text('[axes]\nmodel = ["m"]\ngpu_memory_utilization = [2.0]\n[[axes.shape]]\nisl = 8\nosl = 8\n')
    one_line_exit_2(validate("fleet", bad, "--dry-run"), "axes.gpu_memory_utilization", timeout=60)


def test_capacity_sweep_refuses_unknown_ids_instead_of_writing_error_rows(tmp_path):
    out = tmp_path / "grid.csv"
    one_line_exit_2(capacity("sweep", "--gpu", "h200-sxm,nope", "--out", out), "--gpu", "nope")
    one_line_exit_2(capacity("sweep", "--model", "meta-llama/Llama-3.1-8B,nope", "--out", out), "--model", "nope")
    one_line_exit_2(capacity("sweep", "--out", tmp_path), "--out", "is a folder")
    assert not out.exists()


@pytest.mark.parametrize("row, field", [("0,inf,10", "input_tokens"), ("0,100,1e8", "output_tokens"),
                                        ("-inf,100,10", "send_s"), ("0,1.5,10", "input_tokens")])
def test_a_trace_row_out_of_range_is_named(tmp_path, row, field):
    f = tmp_path / "trace.csv"
    f.write_text(f"send_s,input_tokens,output_tokens\n0,100,10\n{row}\n")
    one_line_exit_2(capacity("simulate", "--trace", f), str(f), "row 3", field)


def test_requests_longer_than_the_context_are_refused():
    one_line_exit_2(capacity("estimate", "--isl", 200000, "--osl", 10), "max_position_embeddings", "131,072")
    one_line_exit_2(capacity("estimate", "--isl", 1024, "--max-model-len", 100), "max_model_len")


@pytest.mark.parametrize("change, field", [({"matmul": 1e-300}, "matmul"), ({"host_token_s": 1e9}, "host_token_s")])
def test_a_calibration_file_with_unphysical_factors_is_refused(tmp_path, change, field):
    data = json.loads(CAL.read_text())
    data["efficiency"].update(change)
    f = tmp_path / "cal.json"
    f.write_text(json.dumps(data))
    one_line_exit_2(capacity("estimate", "--calibration", f), str(f), field)


def test_a_calibration_file_with_an_inverted_interval_is_refused(tmp_path):
    data = json.loads(CAL.read_text())
    r = data["residuals"]["ttft_s"]
    r["log_ratio_q05"], r["log_ratio_q95"] = 0.5, -0.5
    f = tmp_path / "cal.json"
    f.write_text(json.dumps(data))
    one_line_exit_2(capacity("estimate", "--calibration", f), str(f), "log_ratio_q05")


def test_a_degenerate_gamma_shape_is_refused():
    one_line_exit_2(capacity("simulate", "--arrivals", "gamma", "--gamma-shape", "1e-300", "--load", "rate:5"),
                    "--gamma-shape")


@pytest.mark.parametrize("args, names", [
    (["estimate", "--spec-draft-model", "meta-llama/Llama-3.1-8B"], ["--spec-draft-model", "--spec-draft-tokens"]),
    (["estimate", "--spec-acceptance", "0.5"], ["--spec-acceptance", "above 0"]),
    (["estimate", "--spec-draft-cost", "0.2"], ["--spec-draft-cost"]),
    (["estimate", "--expert-parallel", "--tp", "2"], ["--expert-parallel", "no experts"]),
    (["size", "--num-gpus", "4", "--target-rps", "5"], ["--num-gpus", "--tps"]),
    (["simulate", "--load", "concurrency:10000000"], ["concurrency:10,000,000", "--num-requests", "1,000,000"]),
    (["estimate", "--load", "concurrency:10000000", "--method", "simulate"], ["--num-requests"]),
])
def test_a_flag_that_would_be_ignored_or_overflow_is_refused(args, names):
    """Each used to be accepted and dropped (drafter without drafts, EP on a dense model, size's GPU count), or to
    name an internal field the user never typed (the simulator's request count)."""
    one_line_exit_2(capacity(*args), *names)


def test_tp_alone_means_one_replica_of_tp_gpus():
    p = subprocess.run([sys.executable, *capacity("estimate", "--tp", 2, "--json")], capture_output=True, text=True,
                       timeout=120, cwd=REPO)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout)
    assert out["num_gpus"] == 2 and out["tp"] == 2 and out["replicas"] == 1
