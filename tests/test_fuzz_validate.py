"""Fuzz the validator's input boundaries with seeded generators (no network, same inputs every run).

- `validate import` on files derived from tests/fixtures/vllm-bench-serve-llama8b-c16.json (summary and
  --save-detailed shapes), on hand-built guidellm reports and on the real fixtures of the other importers
  (AIPerf summaries and per-record lines, genai-perf, llm-d Benchmark Reports as JSON and YAML, InferenceX
  rows): values swapped for wrong types, NaN, Infinity, negative or 400-digit numbers, keys dropped,
  per-request lists of unequal length, then sometimes truncated, byte-flipped or nested thousands deep.
- The results readers (points.jsonl, requests.jsonl, metadata.json, scenario.json, facts.json: what a
  resume and `validate compare` read) on mutated copies of tests/fixtures/measurements/, and `validate
  compare` and `validate export` (each format) themselves on a share of them.
- `validate sweep` load flags with junk values (against a port where nothing listens).

Every input must end in exit 0, or exit 2 with exactly one stderr line `Type: message` and no traceback
(library readers: a ValidateError whose message is one line), within 2 s. Imports that succeed must
store only finite, non-negative numbers (the stored folder is read back through its strict models).
Most inputs run in-process through the CLI's `main(argv)`; a few run as real subprocesses.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from validate.cli import main
from validate.compare import load_run
from validate.engines.launcher import free_port
from validate.errors import ValidateError
from validate.results import ResultsDir, RunMetadata
from validate.runner import stored_points

REPO = Path(__file__).resolve().parents[1]
VLLM_FIXTURE = REPO / "tests" / "fixtures" / "vllm-bench-serve-llama8b-c16.json"
RUNS = sorted(p.parent for p in (REPO / "tests" / "fixtures" / "measurements").rglob("points.jsonl"))
LIMIT_S = 2.0

FIXTURES = REPO / "tests" / "fixtures"
AIPERF_SUMMARIES = [FIXTURES / "aiperf" / "run1" / "profile_export_aiperf.json",
                    FIXTURES / "aiperf" / "v0.10-concurrency2" / "profile_export_aiperf.json"]
AIPERF_RECORDS = FIXTURES / "aiperf" / "run1" / "profile_export.jsonl"
GENAI_PERF = FIXTURES / "genai-perf" / "profile_export_genai_perf.json"
BR_EXAMPLE = FIXTURES / "llm-d" / "br_v0_2_1_example.yaml"
INFERENCEX = REPO / "data" / "public" / "raw" / "inferencex-fixture-sample.jsonl"

# How many generated inputs each part runs (7,210 in all, plus the subprocesses).
IMPORT_CASES = {"vllm-summary": 900, "vllm-detailed": 700, "guidellm": 900, "bytes": 300, "aiperf-summary": 500,
                "aiperf-records": 400, "genai-perf": 400, "benchmark-report": 600, "inferencex": 400}
READER_CASES = 1450
COMPARE_CASES = 100
EXPORT_CASES = 120
FLAG_CASES = 200

JUNK: list[Any] = [None, True, False, 0, -1, -2.5, -1e300, 1e308, math.inf, -math.inf, math.nan, 10**400, -(10**30),
                   2**63, "", "12", "x", "1e3", "Infinity", "NaN", "\u00ff\x00", [], {}, [1, "a"], {"a": 1}, [[[]]],
                   -0.0, 5e-324]


class Hang(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float, what: str) -> Iterator[None]:
    """Fail (not wait) when one input takes longer than `seconds` of wall time."""
    def expired(*_: object) -> None:
        raise Hang(f"{what} took more than {seconds} s")
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def cli(argv: list[str], what: str, limit_s: float = LIMIT_S) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with time_limit(limit_s, what), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:  # argparse --help and the like
            code = int(exit_.code or 0)
    return code, out.getvalue(), err.getvalue()


def assert_contract(code: int, stderr: str, what: str) -> None:
    assert "Traceback" not in stderr, f"{what}: {stderr}"
    if code == 2:
        lines = stderr.strip().splitlines()
        assert len(lines) == 1, f"{what}: not one line: {stderr!r}"
        kind = lines[0].split(":", 1)[0]
        assert kind.endswith("Error") and " " not in kind, f"{what}: {lines[0]!r}"
    else:
        assert code == 0, f"{what}: exit {code}: {stderr}"


# ---------------------------------------------------------------- mutations


def paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside nested dicts and lists (lists sampled: first, last)."""
    found = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            found += paths(v, (*prefix, k))
    elif isinstance(obj, list) and obj:
        for i in {0, len(obj) - 1}:
            found += paths(obj[i], (*prefix, i))
    return found


def get(obj: Any, path: tuple) -> Any:
    for part in path:
        obj = obj[part]
    return obj


def scaled(value: int | float, digits: int) -> int | float:
    if isinstance(value, int):
        return value * 10**digits
    try:
        return value * 10.0**digits
    except OverflowError:
        return math.inf


def mutate(rng: random.Random, doc: Any, rounds: int = 3) -> Any:
    doc = copy.deepcopy(doc)
    for _ in range(rng.randint(1, rounds)):
        candidates = paths(doc)
        path = rng.choice(candidates)
        if not path:
            doc = rng.choice(JUNK) if rng.random() < 0.3 else doc
            continue
        parent, key = get(doc, path[:-1]), path[-1]
        op = rng.random()
        if op < 0.6:
            parent[key] = rng.choice(JUNK)
        elif op < 0.75 and isinstance(parent, dict):
            del parent[key]
        elif op < 0.85 and isinstance(parent, list):
            parent.pop(key) if rng.random() < 0.5 else parent.append(copy.deepcopy(parent[key]))
        elif op < 0.93 and isinstance(parent[key], (int, float)) and not isinstance(parent[key], bool):
            parent[key] = -parent[key] if rng.random() < 0.5 else scaled(parent[key], rng.randint(3, 400))
        else:
            parent[key] = [parent[key]] if rng.random() < 0.5 else {"value": parent[key]}
    return doc


def dumps(rng: random.Random, doc: Any) -> bytes:
    try:
        text = json.dumps(doc, allow_nan=True)
    except (ValueError, OverflowError):
        text = "{}"
    return text.encode()


def damage(rng: random.Random, data: bytes) -> bytes:
    """Byte-level faults: truncation, flipped bytes, binary, a BOM, nesting far too deep."""
    op = rng.random()
    if op < 0.35 and data:
        return data[: rng.randrange(len(data))]
    if op < 0.6 and data:
        b = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if op < 0.7:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 64)))
    if op < 0.8:
        return b"\xef\xbb\xbf" + data
    if op < 0.9:
        depth = rng.choice([50, 5_000, 100_000])
        return (b'{"benchmarks": ' if rng.random() < 0.5 else b"") + b"[" * depth + b"]" * depth
    return rng.choice([b"", b"null", b"[]", b"0", b'"x"', b"NaN", b"Infinity", b"{}"])


def vllm_detailed(rng: random.Random) -> dict:
    base = json.loads(VLLM_FIXTURE.read_text())
    n = rng.randint(1, 12)
    base.update(num_prompts=n, completed=n, total_input_tokens=1024 * n, total_output_tokens=128 * n,
                ttfts=[0.03 + 0.001 * i for i in range(n)], latencies=[1.1 + 0.01 * i for i in range(n)],
                itls=[[0.008] * 127 for _ in range(n)], input_lens=[1024] * n, output_lens=[128] * n,
                errors=[""] * n, start_times=[100.0 + 0.5 * i for i in range(n)])
    if rng.random() < 0.3:  # lists of unequal length
        key = rng.choice(["ttfts", "latencies", "itls", "input_lens", "output_lens", "errors", "start_times"])
        base[key] = base[key][:-1] if rng.random() < 0.7 else base[key] + base[key][:1]
    return base


def guidellm(rng: random.Random) -> dict:
    def dist(scale: float) -> dict:
        return {"successful": {"mean": 1.0 * scale, "median": 0.9 * scale,
                               "percentiles": {"p50": 0.9 * scale, "p90": 1.5 * scale, "p99": 2.0 * scale}}}
    strategies = [{"type_": "synchronous"}, {"type_": "concurrent", "streams": 8}, {"type_": "throughput"},
                  {"type_": "constant", "rate": 4.5}, {"type": "poisson", "rate": [2.0, 3.0]}]
    benchmarks = []
    for _ in range(rng.randint(1, 4)):
        where = rng.choice(["args", "config", "top"])
        strategy = copy.deepcopy(rng.choice(strategies))
        b: dict = {"duration": 10.0, "request_totals": {"successful": 20, "errored": 1, "incomplete": 0, "total": 21},
                   "metrics": {"requests_per_second": dist(2.0), "output_tokens_per_second": dist(256.0),
                               "tokens_per_second": dist(512.0), "time_to_first_token_ms": dist(40.0),
                               "inter_token_latency_ms": dist(3.0), "request_latency": dist(0.43),
                               "prompt_token_count": dist(128.0), "output_token_count": dist(128.0),
                               "request_concurrency": dist(1.0)}}
        if where == "top":
            b["strategy"] = strategy
        else:
            b[where] = {"strategy": strategy}
        benchmarks.append(b)
    return {"benchmarks": benchmarks, "metadata": {"guidellm_version": "0.4.0"}}


def benchmark_reports() -> list[dict]:
    """An llm-d example report and one this package exports (from a committed run)."""
    import yaml

    from validate.export import benchmark_report

    folder = ResultsDir(RUNS[0])
    exported = benchmark_report(folder.points()[0], 0, folder.read_metadata())
    return [yaml.safe_load(BR_EXAMPLE.read_text()), exported]


def other_importers(kind: str, rng: random.Random, sources: dict[str, Any]) -> tuple[bytes, str]:
    """(file content, file name) of one mutated real file of the newer importers."""
    if kind == "aiperf-summary":
        doc = rng.choice(sources["aiperf"])
        return dumps(rng, mutate(rng, doc) if rng.random() < 0.9 else doc), "profile_export_aiperf.json"
    if kind == "aiperf-records":
        return jsonl_mutation(rng, sources["records"]), "profile_export.jsonl"
    if kind == "genai-perf":
        doc = sources["genai"]
        return dumps(rng, mutate(rng, doc) if rng.random() < 0.9 else doc), "profile_export_genai_perf.json"
    if kind == "benchmark-report":
        doc = rng.choice(sources["reports"])
        return dumps(rng, mutate(rng, doc) if rng.random() < 0.9 else doc), rng.choice(["report.json", "report.yaml"])
    return jsonl_mutation(rng, sources["inferencex"]), "rows.jsonl"


def import_inputs() -> Iterator[tuple[str, bytes, str]]:
    fixture = json.loads(VLLM_FIXTURE.read_text())
    sources = {"aiperf": [json.loads(p.read_text()) for p in AIPERF_SUMMARIES],
               "records": "\n".join(AIPERF_RECORDS.read_text().splitlines()[:20]),
               "genai": json.loads(GENAI_PERF.read_text()), "reports": benchmark_reports(),
               "inferencex": "\n".join(line for line in INFERENCEX.read_text().splitlines() if line.startswith("{"))}
    for kind, count in IMPORT_CASES.items():
        rng = random.Random(f"import-{kind}")
        for i in range(count):
            name = "report.json"
            if kind == "vllm-summary":
                data = dumps(rng, mutate(rng, fixture))
            elif kind == "vllm-detailed":
                doc = vllm_detailed(rng)
                data = dumps(rng, mutate(rng, doc, 2) if rng.random() < 0.8 else doc)
            elif kind == "guidellm":
                doc = guidellm(rng)
                data = dumps(rng, mutate(rng, doc) if rng.random() < 0.9 else doc)
            elif kind == "bytes":
                source = fixture if rng.random() < 0.5 else guidellm(rng)
                data = damage(rng, dumps(rng, source))
            else:
                data, name = other_importers(kind, rng, sources)
            yield f"{kind}-{i}", data, name


def test_import_never_tracebacks(tmp_path: Path):
    seen = {0: 0, 2: 0}
    summary = AIPERF_SUMMARIES[0].read_bytes()
    for name, data, filename in import_inputs():
        case = tmp_path / name
        case.mkdir()
        path = case / filename
        path.write_bytes(data)
        if filename == "profile_export.jsonl":  # the per-record file reads its load from the summary beside it
            (case / "profile_export_aiperf.json").write_bytes(summary)
        out = tmp_path / f"out-{name}"
        code, _, stderr = cli(["import", str(path), "--out", str(out)], f"import {name}")
        assert_contract(code, stderr, f"import {name} ({data[:300]!r})")
        seen[code] += 1
        if code == 0:  # what was stored reads back through the strict models: finite and non-negative
            folders = [p.parent for p in out.rglob("points.jsonl")]  # InferenceX rows: one folder per configuration
            assert folders, f"import {name}: nothing stored"
            for folder in map(ResultsDir, folders):
                assert folder.points() and folder.read_metadata() is not None
                folder.requests()
        else:
            assert str(path) in stderr, stderr
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(case)
    assert seen[0] > 100 and seen[2] > 500, seen  # both outcomes are exercised


# ---------------------------------------------------------------- results folders and compare

SCENARIO = {"model": "meta-llama/Llama-3.1-8B", "gpu": "h200-sxm", "precision": "bf16", "kv_precision": "bf16",
            "engine": "vllm", "engine_argv": ["python", "-m", "vllm.entrypoints.cli.main", "serve", "/m",
                                              "--tensor-parallel-size", "1", "--max-num-seqs", "256"]}
FACTS = {"engine": "vllm", "version": "0.26.0", "kv_cache_tokens": 814368, "kv_cache_bytes": 120087285596}
REQUEST = {"load": "sync", "index": 0, "start_s": 0.0, "end_s": 1.2, "ttft_s": 0.03, "e2e_latency_s": 1.2,
           "itls_s": [0.009] * 4, "num_chunks": 5, "input_tokens": 1024, "output_tokens": 5,
           "requested_input_tokens": 1024, "requested_output_tokens": 5, "error": None}


def jsonl_mutation(rng: random.Random, text: str) -> bytes:
    lines = [line for line in text.splitlines() if line.strip()]
    i = rng.randrange(len(lines))
    op = rng.random()
    if op < 0.5:
        lines[i] = json.dumps(mutate(rng, json.loads(lines[i]), 2), allow_nan=True)
    elif op < 0.7:
        lines[i] = lines[i][: rng.randrange(len(lines[i]))]
    elif op < 0.8:
        lines.insert(i, rng.choice(["null", "[]", "1", '"x"', "{}", "{", "\x00\xff"]))
    else:
        return damage(rng, "\n".join(lines).encode())
    return ("\n".join(lines) + ("\n" if rng.random() < 0.7 else "")).encode()


def results_folder(rng: random.Random, root: Path, keep_points: int | None = None, damaged: bool = True) -> Path:
    """A copy of one committed run (points and metadata) with requests, scenario.json and facts.json beside
    it, one or more of its files mutated."""
    source = rng.choice(RUNS)
    run = root / "run"
    run.mkdir(parents=True)
    points = [line for line in (source / "points.jsonl").read_text().splitlines() if line.strip()]
    if keep_points:
        points = points[:keep_points]
    files: dict[str, bytes] = {
        "points.jsonl": ("\n".join(points) + "\n").encode(),
        "metadata.json": (source / "metadata.json").read_bytes(),
        "requests.jsonl": "".join(json.dumps({**REQUEST, "index": i}) + "\n" for i in range(3)).encode()}
    if rng.random() < 0.5:
        files["scenario.json"] = json.dumps(SCENARIO).encode()
    if rng.random() < 0.5:
        files["facts.json"] = json.dumps(FACTS).encode()
    for name in rng.sample(sorted(files), rng.randint(1, 2)) if damaged else []:
        if name.endswith(".jsonl"):
            files[name] = jsonl_mutation(rng, files[name].decode())
        elif rng.random() < 0.75:
            files[name] = dumps(rng, mutate(rng, json.loads(files[name])))
        else:
            files[name] = damage(rng, files[name])
    for name, data in files.items():
        (run / name).write_bytes(data)
    return run


def one_line_validate_error(call: Callable[[], Any], what: str) -> None:
    try:
        with time_limit(LIMIT_S, what):
            call()
    except ValidateError as err:
        assert "\n" not in str(err) and str(err).strip(), f"{what}: {err!r}"


def test_results_readers_never_traceback(tmp_path: Path):
    rng = random.Random("readers")
    metadata = RunMetadata(validate_command=["validate"], started_at="2026-01-01T00:00:00Z", host="h",
                           workload={"isl": 1024, "osl": 128, "length_dist": "fixed"})
    for i in range(READER_CASES):
        root = tmp_path / f"case-{i}"
        run = results_folder(rng, root)
        folder = ResultsDir(run)
        what = f"readers case {i}: " + ", ".join(f"{p.name}={p.read_bytes()[:200]!r}" for p in sorted(run.iterdir()))
        one_line_validate_error(folder.points, what)
        one_line_validate_error(folder.requests, what)
        one_line_validate_error(folder.read_metadata, what)
        one_line_validate_error(lambda: load_run(run), what)
        one_line_validate_error(lambda: stored_points(folder, metadata, warn=lambda _: None), what)
        shutil.rmtree(root)


def test_compare_never_tracebacks(tmp_path: Path):
    cli(["compare", str(RUNS[0])], "compare warm-up", limit_s=120)  # imports the capacity model once
    rng = random.Random("compare")
    seen = {0: 0, 2: 0}
    for i in range(COMPARE_CASES):
        run = results_folder(rng, tmp_path / f"case-{i}", keep_points=2)
        code, _, stderr = cli(["compare", str(run)], f"compare case {i}")
        assert_contract(code, stderr, f"compare case {i}: " + ", ".join(
            f"{p.name}={p.read_bytes()[:300]!r}" for p in sorted(run.iterdir())))
        seen[code] += 1
        shutil.rmtree(run.parent)
    assert seen[0] >= 5 and seen[2] >= 20, seen


def test_export_never_tracebacks(tmp_path: Path):
    """`validate export` in each format on mutated copies of the committed runs: exit 0 or one line."""
    rng = random.Random("export")
    seen = {0: 0, 2: 0}
    for i in range(EXPORT_CASES):
        run = results_folder(rng, tmp_path / f"case-{i}")
        for fmt in ("benchmark-report", "csv", "parquet"):
            out = tmp_path / f"case-{i}" / f"export.{fmt}"
            code, _, stderr = cli(["export", str(run), "--format", fmt, "--out", str(out)], f"export {i} {fmt}")
            assert_contract(code, stderr, f"export case {i} {fmt}: " + ", ".join(
                f"{p.name}={p.read_bytes()[:300]!r}" for p in sorted(run.iterdir())))
            seen[code] += 1
        shutil.rmtree(run.parent)
    assert seen[0] >= 30 and seen[2] >= 30, seen


# ---------------------------------------------------------------- load flags

FLAG_VALUES = ["0", "-1", "1", "8", "1e400", "nan", "inf", "-inf", "", "x", "10" * 40, "2.5", "1,2", "sweep",
               "burst:0", "rate:1e-300", "rate:1e300", "concurrency:99999999999", "uniform:0.5", "normal:nan",
               "file:/etc/hostname", "uniform:-1", "rate:nan", "rate:inf", "burst:1e9", "sync", "burst:5",
               "rate:1e-320", "normal:1e300", "rate:1.0000001,1.0000002", "concurrency:4,4"]
LOAD_FLAGS = ["--isl", "--osl", "--profile", "--num-requests", "--duration-s", "--warmup", "--burst-size",
              "--sweep-rates", "--arrivals", "--max-concurrency", "--length-dist", "--seed", "--request-timeout-s"]


def test_sweep_flags_never_traceback(tmp_path: Path):
    """Load flags of `validate sweep` with junk values, against a port where nothing listens: every input is
    refused on one line (a bad flag, or no server), none is a traceback."""
    rng = random.Random("flags")
    url = f"http://127.0.0.1:{free_port()}"
    for i in range(FLAG_CASES):
        flags = {"--isl": "8", "--osl": "8"}
        for flag in rng.sample(LOAD_FLAGS, rng.randint(1, 4)):
            flags[flag] = rng.choice(FLAG_VALUES)
        argv = ["sweep", "--base-url", url, "--model", "m", "--out", str(tmp_path / "out"),
                *[part for pair in flags.items() for part in pair]]
        code, _, stderr = cli(argv, f"flags {argv}")
        assert code == 2, f"{argv}: {stderr}"
        assert_contract(code, stderr, f"flags {argv}")


# ---------------------------------------------------------------- a few real subprocesses


def subprocess_cases(tmp_path: Path) -> list[tuple[str, list[str]]]:
    rng = random.Random("subprocess")
    cases = []
    fixture = json.loads(VLLM_FIXTURE.read_text())
    for name, doc in (("duration-string", {**fixture, "duration": "14"}), ("benchmarks-number", {"benchmarks": 7}),
                      ("lists-unequal", {**vllm_detailed(random.Random(1)), "ttfts": [0.1]})):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(doc))
        cases.append((name, ["import", str(path), "--out", str(tmp_path / f"out-{name}")]))
    aiperf = json.loads(AIPERF_SUMMARIES[1].read_text())
    aiperf["time_to_first_token"]["unit"] = "fortnights"
    path = tmp_path / "profile_export_aiperf.json"
    path.write_text(json.dumps(aiperf))
    cases.append(("aiperf-unit", ["import", str(path), "--out", str(tmp_path / "out-aiperf-unit")]))
    run = results_folder(rng, tmp_path / "compare-0", keep_points=2)
    cases.append(("compare-0", ["compare", str(run)]))
    tp = results_folder(random.Random(0), tmp_path / "tp-x", keep_points=2, damaged=False)
    (tp / "scenario.json").write_text(json.dumps({**SCENARIO, "engine_argv": ["serve", "--tensor-parallel-size", "x"]}))
    cases.append(("tp-x", ["compare", str(tp)]))
    return cases


@pytest.mark.parametrize("index", range(6))
def test_real_subprocess_keeps_the_contract(tmp_path: Path, index: int):
    name, argv = subprocess_cases(tmp_path)[index]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    t0 = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "validate.cli", *argv], capture_output=True, text=True, env=env,
                            cwd=REPO, timeout=120)
    assert_contract(result.returncode, result.stderr, f"{name}: {argv}")
    if name in ("duration-string", "benchmarks-number", "lists-unequal", "aiperf-unit", "tp-x"):
        assert result.returncode == 2, result.stderr
    if name == "aiperf-unit":
        assert "time_to_first_token.unit: Input should be" in result.stderr
    if name == "tp-x":
        assert "scenario.json: engine_argv: --tensor-parallel-size: expected a number" in result.stderr
    assert time.monotonic() - t0 < 120
