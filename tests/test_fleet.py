"""`validate fleet` for real: a local Ray on this machine, the tiny CPU vLLM model, and the stub server.

The fleet runs four configurations two at a time: one real vLLM job (tests/assets/tiny-llama), one vLLM job with an
engine flag vLLM refuses (fails to start), and two jobs whose "engine interpreter" is tests/assets/stub-engine/python
(validate.stub_server on the port of the vLLM command line). The stub jobs are there because the CPU build of vLLM
needs 25-60 s to start on this 2-core machine and the fleet, its resume check and the separate `validate run`s it is
compared with would start it six more times; every other part of `validate run` (launcher, client, resume, results)
runs unchanged in them, and the worker kill is done in one of them.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from validate.cli import main
from validate.fleet.guided import candidates, grid, pick, scores
from validate.fleet.jobs import expand
from validate.fleet.plan import load_plan
from validate.fleet.store import FleetIndex, IndexRecord

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "assets" / "tiny-llama"
STUB_PYTHON = REPO / "tests" / "assets" / "stub-engine" / "python"
BAD_FLAG = "--no-such-flag-for-vllm"
TIMINGS = ("started_at", "engine_ready_after_s", "base_url")
PORT = re.compile(r"127\.0\.0\.1:\d+")

ray = pytest.importorskip("ray")


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "RAY_USAGE_STATS_ENABLED": "0"}


def fleet(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "validate.cli", "fleet", *args], env=env(), cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_for(condition, timeout_s: float, what: str, proc: subprocess.Popen | None = None):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if found := condition():
            return found
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"fleet exited ({proc.returncode}) before {what}: {err[-3000:]}")
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def write_plan(path: Path, vllm_python: str) -> Path:
    path.write_text(f"""
devices = "cpu"
served_model_name = "stub"        # the stub serves only this name; vLLM serves any
startup_timeout_s = 300
[env]
LLMCAP_STUB_PYTHON = "{sys.executable}"
LLMCAP_STUB_TOKEN_DELAY_S = "0.1"
VLLM_CPU_KVCACHE_SPACE = "1"
HF_HUB_OFFLINE = "1"
TRANSFORMERS_OFFLINE = "1"
[axes]
model = ["{TINY}"]
engine_python = ["{STUB_PYTHON}", "{vllm_python}"]
engine_args = [["--enforce-eager"], ["--enforce-eager", "{BAD_FLAG}"]]
max_num_seqs = [4, 8]
max_model_len = [512]
shape = [{{ isl = 16, osl = 8 }}]
[[exclude]]
engine_python = "{STUB_PYTHON}"
engine_args = ["--enforce-eager", "{BAD_FLAG}"]
[[exclude]]
engine_python = "{vllm_python}"
max_num_seqs = 8
[load]
profile = "concurrency:1,2,3"
num_requests = 4
warmup = 1
""")
    return path


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# what depends on timing: gauges sampled once a second, and the engine's own latency means (its clock, not a count)
SAMPLED = ("samples", "mean_running", "max_running", "mean_waiting", "max_waiting", "max_kv_usage",
           "kv_full_fraction", "engine_mean_ttft_s", "engine_mean_queue_s", "engine_mean_prefill_s")


def comparable(folder: Path, indices: bool = True) -> dict:
    """A job folder without what differs between two runs of one command: times, ports, the --out path (and the
    request indices, which restart after a resume in `validate run` itself)."""
    def untimed(record: dict) -> dict:
        record = json.loads(PORT.sub("127.0.0.1:PORT", json.dumps(record)))  # each run's engine has its own port
        if record.get("engine_telemetry"):  # gauges sampled once a second depend on timing; the counters do not
            record["engine_telemetry"] = {k: v for k, v in record["engine_telemetry"].items() if k not in SAMPLED}
        return {k: v for k, v in record.items()
                if not (k.endswith("_s") or k.endswith("_per_s")
                        or k in ("mean_concurrency", "itls_s", "host_telemetry"))}  # CPU per second: timing

    meta = json.loads((folder / "metadata.json").read_text())
    for key in TIMINGS:
        meta.pop(key, None)
    command = meta.pop("validate_command")
    meta["validate_command"] = command[:command.index("--out")] + command[command.index("--out") + 2:]
    argv = meta.pop("engine_argv")
    meta["engine_argv"] = argv[:argv.index("--port")] + argv[argv.index("--port") + 2:]
    if meta.get("engine_facts"):
        meta["engine_facts"].pop("lines", None)  # "Model loading took ... seconds"
        meta["engine_facts"].pop("weights_bytes", None)
    meta = json.loads(PORT.sub("127.0.0.1:PORT", json.dumps(meta)))
    return {"files": sorted(p.name for p in folder.iterdir()), "metadata": meta,
            "points": [untimed(p) for p in lines(folder / "points.jsonl")],
            "requests": sorted((r["load"], r["index"] if indices else 0, r["output_tokens"], r["error"] is None)
                               for r in lines(folder / "requests.jsonl"))}


def states(index: FleetIndex) -> dict[str, list[tuple[str, int]]]:
    out: dict[str, list[tuple[str, int]]] = {}
    for r in index.records():
        out.setdefault(r.job_id, []).append((r.state, r.attempt))
    return out


@pytest.fixture(scope="module")
def fleet_run(vllm_python: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One fleet of four jobs, with a Ray worker killed in the middle of a stub job; then a rerun."""
    root = tmp_path_factory.mktemp("fleet")
    plan_path = write_plan(root / "plan.toml", vllm_python)
    jobs = {("stub" if j.config["engine_python"] == str(STUB_PYTHON) else
             "bad" if BAD_FLAG in j.config["engine_args"] else "vllm") + (str(j.config["max_num_seqs"])): j
            for j in expand(load_plan(plan_path))}
    assert sorted(jobs) == ["bad4", "stub4", "stub8", "vllm4"]
    out = root / "out"
    index = FleetIndex(out)
    proc = fleet(str(plan_path), "--out", str(out), "--max-parallel", "2", "--retries", "1")
    # The separate `validate run`s each job folder is compared with, started now so that their engine start-up
    # overlaps the fleet's (the CPU vLLM start dominates both).
    separate = {name: (root / "separate" / name, subprocess.Popen(
        [sys.executable, "-m", "validate.cli", *jobs[name].argv, "--out", str(root / "separate" / name)],
        env={**env(), **load_plan(plan_path).env}, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)) for name in ("vllm4", "stub4", "stub8")}
    victim = jobs["stub4"].job_id
    points_file = index.job_folder(victim) / "points.jsonl"
    running = wait_for(lambda: next((r for r in index.records() if r.job_id == victim and r.state == "running"),
                                    None), 180, "the stub job to run", proc)
    wait_for(lambda: points_file.exists() and points_file.read_text().count("\n") >= 1, 60,
             "the stub job's first point", proc)
    before_kill = points_file.read_text().splitlines()
    assert len(before_kill) < 3 and not any(r.job_id == victim and r.state == "done" for r in index.records())
    os.kill(running.pid, signal.SIGKILL)  # the Ray worker running that job, mid-job
    try:
        stdout, stderr = proc.communicate(timeout=420)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    first_states = states(index)
    folders = {name: index.job_folder(j.job_id) for name, j in jobs.items()}
    snapshot = {name: (f / "points.jsonl").read_bytes() for name, f in folders.items() if (f / "points.jsonl").exists()}
    rerun = fleet(str(plan_path), "--out", str(out), "--max-parallel", "2", "--retries", "1")
    rerun_out, rerun_err = rerun.communicate(timeout=120)
    separate_runs = {name: (folder, run.communicate(timeout=300)[1], run.returncode)
                     for name, (folder, run) in separate.items()}
    return dict(separate=separate_runs, root=root, out=out, index=index, jobs=jobs, rc=proc.returncode, stderr=stderr,
                before_kill=before_kill, states=first_states, folders=folders, snapshot=snapshot,
                rerun_rc=rerun.returncode, rerun_err=rerun_err)


@pytest.mark.vllm
def test_every_point_lands_and_the_bad_engine_fails_alone(fleet_run):
    assert fleet_run["rc"] == 1, fleet_run["stderr"]  # one failed job
    for name in ("stub4", "stub8", "vllm4"):
        points = lines(fleet_run["folders"][name] / "points.jsonl")
        assert [p["load"] for p in points] == ["concurrency:1", "concurrency:2", "concurrency:3"], name
        assert all(p["completed"] == 4 and p["failed"] == 0 for p in points), name
        requests = lines(fleet_run["folders"][name] / "requests.jsonl")
        keys = [(r["load"], r["index"]) for r in requests]
        assert len(keys) == len(set(keys)) == 3 * 4, name  # 4 measured per point (warm-ups are not stored), none twice
        assert fleet_run["states"][fleet_run["jobs"][name].job_id][-1] == ("done", fleet_run["states"][
            fleet_run["jobs"][name].job_id][-1][1]), name
    bad = fleet_run["jobs"]["bad4"].job_id
    # vLLM refused its command line (exit code 2 before ready): failed at once, not retried
    assert [s for s, _ in fleet_run["states"][bad]] == ["queued", "running", "failed"]
    failed = [r for r in fleet_run["index"].records() if r.job_id == bad and r.state == "failed"][0]
    assert failed.error.startswith("EngineStartError: vllm exited with code 2 before it was ready"), failed.error
    assert failed.error.endswith(f"unrecognized arguments: {BAD_FLAG}"), failed.error
    assert failed.log_tail[-1] == failed.error
    assert f"failed {bad}: EngineStartError" in fleet_run["stderr"]


@pytest.mark.vllm
def test_a_killed_worker_is_retried_and_keeps_its_points(fleet_run):
    victim = fleet_run["jobs"]["stub4"].job_id
    history = fleet_run["states"][victim]
    assert [s for s, _ in history] == ["queued", "running", "retrying", "running", "done"], history
    retry = [r for r in fleet_run["index"].records() if r.job_id == victim and r.state == "retrying"][0]
    assert retry.error.startswith("Ray worker lost"), retry.error
    final = (fleet_run["folders"]["stub4"] / "points.jsonl").read_text().splitlines()
    assert final[:len(fleet_run["before_kill"])] == fleet_run["before_kill"]  # measured once, kept as written
    assert len(final) == 3


@pytest.mark.vllm
def test_each_job_folder_is_what_validate_run_writes(fleet_run):
    queued = {r.job_id: r.argv for r in fleet_run["index"].records() if r.state == "queued"}
    for name, (folder, stderr, returncode) in fleet_run["separate"].items():
        assert queued[fleet_run["jobs"][name].job_id] == fleet_run["jobs"][name].argv
        assert returncode == 0, stderr[-2000:]
        indices = name != "stub4"  # the killed job resumed: its later points count requests from 1 again
        assert comparable(fleet_run["folders"][name], indices) == comparable(folder, indices), name


@pytest.mark.vllm
def test_a_rerun_measures_nothing_twice(fleet_run):
    assert fleet_run["rerun_rc"] == 1, fleet_run["rerun_err"]  # the failed job stays failed
    assert "Traceback" not in fleet_run["rerun_err"]
    assert states(fleet_run["index"]) == fleet_run["states"]  # no new state: nothing queued, nothing run
    for name, data in fleet_run["snapshot"].items():
        assert (fleet_run["folders"][name] / "points.jsonl").read_bytes() == data, name


def test_plan_errors_name_file_and_field(tmp_path, capsys):
    plan = tmp_path / "plan.toml"
    plan.write_text('[axes]\nmodel = ["m"]\nshape = [{ isl = 8, osl = 8 }]\ntp = [0]\n')
    assert main(["fleet", str(plan), "--dry-run"]) == 2
    assert capsys.readouterr().err.strip() == f"PlanError: {plan}: axes.tp.0: Input should be greater than or equal to 1 (got 0)"
    plan.write_text('[axes]\nmodel = ["m"]\nshape = [{ isl = 8, osl = 8 }]\nmodels = ["x"]\n')
    assert main(["fleet", str(plan), "--dry-run"]) == 2
    assert capsys.readouterr().err.strip() == f"PlanError: {plan}: axes.models: Extra inputs are not permitted"
    plan.write_text('[axes]\nmodel = ["m"\n')
    assert main(["fleet", str(plan), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"PlanError: {plan}: not valid TOML:") and "\n" not in err
    yaml_plan = tmp_path / "plan.yaml"
    yaml_plan.write_text("axes:\n  model: [m]\n  shape: [{isl: 8, osl: 8}]\nexclude:\n  - {gpus: h100-sxm}\n")
    assert main(["fleet", str(yaml_plan), "--dry-run"]) == 2
    assert "exclude[0].gpus: not an axis" in capsys.readouterr().err


def test_gamma_arrivals_reach_the_jobs_and_a_stray_shape_is_refused(tmp_path, capsys):
    plan = tmp_path / "plan.toml"
    body = '[axes]\nmodel = ["m"]\nshape = [{ isl = 8, osl = 8 }]\n[load]\nprofile = "rate:2"\n'
    plan.write_text(body + 'arrivals = "gamma"\ngamma_shape = 0.5\n')
    argv = expand(load_plan(plan), tmp_path)[0].argv
    assert argv[argv.index("--arrivals") + 1] == "gamma" and argv[argv.index("--gamma-shape") + 1] == "0.5"
    plan.write_text(body + 'gamma_shape = 0.5\n')
    assert main(["fleet", str(plan), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert "gamma_shape 0.5 needs arrivals gamma" in err and "\n" not in err


def test_expansion_exclusions_and_stable_ids(tmp_path):
    cpu = expand(load_plan(REPO / "examples" / "fleet-cpu.toml"), REPO / "examples")
    assert [j.config["max_num_seqs"] for j in cpu] == [4, 8, 16]
    assert all(j.num_gpus == 0 and j.num_cpus == 1 and j.num_points == 3 for j in cpu)
    assert cpu[0].argv[cpu[0].argv.index("--model") + 1] == str(TINY)  # relative to the plan file
    gpu = expand(load_plan(REPO / "examples" / "fleet-h200.toml"))
    assert len(gpu) == 2 * 2 * 2 * 2 * 2 - 8 - 2  # Llama at TP 2 (8), Qwen3-32B BF16 TP 1 on H100 (2 shapes)
    tp2 = [j for j in gpu if j.config["tp"] == 2]
    assert all(j.num_gpus == 2 and set(j.resources.values()) == {2.0} for j in tp2)
    assert {k for j in gpu for k in j.resources} == {"H200", "H100"}
    reordered = tmp_path / "reordered.toml"  # the same configurations, axes listed in another order
    text = (REPO / "examples" / "fleet-h200.toml").read_text()
    reordered.write_text(text.replace('gpu = ["h200-sxm", "h100-sxm"]', 'gpu = ["h100-sxm", "h200-sxm"]'))
    assert sorted(j.job_id for j in expand(load_plan(reordered))) == sorted(j.job_id for j in gpu)
    assert len({j.job_id for j in gpu}) == len(gpu)


def test_guided_points_are_where_the_model_turns():
    plan = load_plan(REPO / "examples" / "fleet-h200.toml")
    job = expand(plan)[0]  # Llama-3.1-8B, H200, BF16, 1024/128
    kind, loads = candidates(plan)
    rows = scores(job, kind, loads)
    picked = pick(rows, 4)
    assert len(set(picked)) == 4 and set(picked) <= set(loads)
    best = max(rows, key=lambda r: r["score"])
    assert picked[0] == best["load"]
    assert best["near_knee"] > 0.5 or best["near_kv"] > 0.5  # the top pick sits at the knee or the KV limit
    assert grid(loads, 4) == [1, 8, 64, 512]
    assert pick(rows, 4) == picked  # deterministic: a rerun resumes the same points


BLOCK_RAY = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "ray":
            raise ImportError("blocked: ray")
sys.meta_path.insert(0, Block())
from validate.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_without_ray_one_line_and_the_rest_works(tmp_path):
    run = lambda *a: subprocess.run([sys.executable, "-c", BLOCK_RAY, *a], capture_output=True, text=True,  # noqa: E731
                                    env=env(), cwd=REPO, timeout=120)
    result = run("fleet", str(REPO / "examples" / "fleet-cpu.toml"), "--out", str(tmp_path / "f"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == ("UsageError: validate fleet needs Ray: pip install "
                                                      "'llm-capacity[fleet]' (or pip install ray)")
    assert run("fleet", str(REPO / "examples" / "fleet-cpu.toml"), "--dry-run").returncode == 0
    assert run("run", "--help").returncode == 0


def test_kuberay_manifest_declares_the_plans_gpu_kinds():
    """The manifest is not applied here (no cluster); this checks it parses and matches the H200 plan's resources."""
    yaml = pytest.importorskip("yaml")
    docs = list(yaml.safe_load_all((REPO / "examples" / "kuberay-raycluster.yaml").read_text()))
    cluster = next(d for d in docs if d["kind"] == "RayCluster")
    declared = {}
    for group in cluster["spec"]["workerGroupSpecs"]:
        resources = json.loads(group["rayStartParams"]["resources"].strip('"').replace('\\"', '"'))
        gpus = group["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]
        declared.update({kind: (count, gpus) for kind, count in resources.items()})
    plan = load_plan(REPO / "examples" / "fleet-h200.toml")
    assert set(declared) == set(plan.gpu_resources.values())
    assert all(count == gpus for count, gpus in declared.values())  # one custom resource per GPU of the kind


def test_index_cuts_a_torn_last_line(tmp_path):
    index = FleetIndex(tmp_path)
    assert index.open() == []
    index.append(IndexRecord(job_id="a", state="queued"))
    index.append(IndexRecord(job_id="a", state="running", attempt=1, pid=1, node="n"))
    with open(index.path, "ab") as f:
        f.write(b'{"job_id":"a","state":"do')  # a driver killed mid-write
    assert [r.state for r in index.records()] == ["queued", "running"]  # readers skip it
    warnings = index.open()
    assert len(warnings) == 1 and "torn last line" in warnings[0]
    assert index.path.read_text().count("\n") == 2 and index.path.read_text().endswith("\n")
    index.append(IndexRecord(job_id="a", state="retrying", attempt=1, error="Ray worker lost: ..."))
    history = index.histories()["a"]
    assert (history.last.state, history.attempts, history.failed_attempts) == ("retrying", 1, 1)
