"""Measurement campaign on a GPU machine: for each engine configuration, start the server once,
run every (shape, load) point with `validate sweep`, stop it; pack the results as they complete.

Runs where this repo is not installed (the lent H200): PYTHONPATH=<site>:. python3 scripts/device/campaign.py
SPEC.json OUTDIR [--budget-s S]. The spec lists configs: {"model", "precision", "engine_args", "shapes": [[isl, osl]],
"points": ["sync:N", "concurrency:C:N", "burst:N", "rates:K:SECONDS", "warmburst:N", "warmprate:R:N:P", "prate:R:N",
"crate:R:N", "grate:R:N:K"] (validate/spec_points.py),
"warmup_rounds": F}, optionally a shape's own point list as a third element ([isl, osl, ["sync:3"]]) instead of "points",
and a fourth element {"dir": FOLDER, "sweep_args": [...]} for a workload of its own (e.g. ["--length-dist", "uniform:0.5"]:
it gets its own results folder, default ISLxOSL); prate/crate/grate are Poisson / constant / gamma (shape K) arrivals at R
requests/s, N requests,
"name" (the result folder; default MODEL-PRECISION), "draft_model" (a catalog id: its folder is prepared beside the
model's and replaces {draft_dir} in engine_args, e.g. a --speculative-config draft_model method), "engine" (vllm | sglang | transformers), "engine_env" (extra
environment for the server, e.g. {"PYTHONPATH": "/tmp/site-sglang:/tmp/site"}) and "random_checkpoint": true
(write random safetensors weights first, for engines without a dummy load format), "host_probe": true (record where the
server's threads run and how fast each CPU is: scripts/device/hostprobe.py; a shape's options may then carry "host":
{"pin": "fast" | "slow" | "none", "spin": "sibling" | "other" | "none"}, run before its points). A point that would not finish
inside the time budget is skipped (its name goes to skipped.txt); everything finished is in OUTDIR/campaign.tar.gz.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from validate.engines import build_command, dialect, installed_version, parse_facts  # noqa: E402
from validate.spec_points import parse_point  # noqa: E402
from validate.engines.config import EngineConfig  # noqa: E402
from validate.engines.launcher import EngineProcess  # noqa: E402
from validate.modeldir import catalog_file_stem, prepare_model_dir  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hostprobe  # noqa: E402

WORK = Path("/tmp/campaign")  # replaced by --work
PORT = 8000
NAME = "campaign"
T0 = time.monotonic()


def elapsed() -> float:
    return time.monotonic() - T0


def pack(out: Path) -> None:
    """Re-pack everything measured so far (small files only: per-request ITL lists are summarized)."""
    tmp = out / f"{NAME}.tar.gz.tmp"
    with tarfile.open(tmp, "w:gz") as tar:
        for path in sorted(WORK.rglob("*")):
            if (path.is_file() and path.name != "requests.jsonl" and path.stat().st_size < 8_000_000
                    and not {"triton-cache", "inductor-cache"} & set(path.relative_to(WORK).parts)):
                tar.add(path, arcname=str(path.relative_to(WORK)))
    tmp.replace(out / f"{NAME}.tar.gz")


def summarize_requests(point_dir: Path) -> None:
    src = point_dir / "requests.jsonl"
    if not src.exists():
        return
    rows = ["load,index,start_s,ttft_s,e2e_latency_s,mean_itl_s,max_itl_s,input_tokens,output_tokens,error"]
    for line in src.read_text().splitlines():
        r = json.loads(line)
        itls = r.get("itls_s") or []
        mean = sum(itls) / len(itls) if itls else ""
        rows.append(",".join(str(x) for x in (r["load"], r["index"], r["start_s"], r.get("ttft_s"), r.get("e2e_latency_s"),
                                              mean, max(itls) if itls else "", r.get("input_tokens"),
                                              r.get("output_tokens"), json.dumps(r.get("error") or ""))))
    (point_dir / "requests.csv").write_text("\n".join(rows) + "\n")


def run_point(base: list[str], out_dir: Path, profile: str, num_requests: int, warmup: int, log) -> int:
    argv = base + ["--profile", profile, "--num-requests", str(num_requests), "--warmup", str(warmup),
                   "--out", str(out_dir)]
    log.write(f"[{elapsed():.0f}s] {' '.join(argv)}\n")
    log.flush()
    rc = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT).returncode
    log.write(f"[{elapsed():.0f}s] rc={rc}\n")
    return rc


def measured(out_dir: Path) -> dict[str, dict]:
    path = out_dir / "points.jsonl"
    if not path.exists():
        return {}
    pts = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return {p["load"]: p for p in pts}


def jit_counts(root: Path) -> dict[str, int]:
    """Kernels compiled so far by this server: entries of its own Triton cache and files of its own Inductor cache
    (both set per configuration in run_config). A count that grows during a measured point means the engine compiled
    kernels while it was being timed."""
    triton, inductor = root / "triton-cache", root / "inductor-cache"
    return {"triton-cache": sum(1 for _ in triton.iterdir()) if triton.exists() else 0,
            "inductor-cache": sum(1 for f in inductor.rglob("*") if f.is_file()) if inductor.exists() else 0}


SEEN_KERNELS: dict[Path, set[str]] = {}


def new_kernels(root: Path) -> list[str]:
    """Names of the kernels in Triton cache entries that appeared since the last call (an entry holds KERNEL.json)."""
    seen = SEEN_KERNELS.setdefault(root, set())
    triton = root / "triton-cache"
    fresh = sorted(d for d in (x.name for x in triton.iterdir()) if d not in seen) if triton.exists() else []
    seen.update(fresh)
    return sorted({j.stem for d in fresh for j in (triton / d).glob("*.json") if not j.stem.startswith("__")})


def note_jit(root: Path, label: str) -> int:
    """Append the kernel counts (and the new kernels' names) after a step; returns the Triton count."""
    counts = jit_counts(root)
    with open(root / "jit.jsonl", "a") as f:
        f.write(json.dumps({"after": label, "elapsed_s": round(elapsed(), 1), **counts,
                            "new_kernels": new_kernels(root)}) + "\n")
    return counts["triton-cache"]


def profiler_dir(args: list[str]) -> Path | None:
    """The trace folder the spec gave the engine (`--profiler-config '{"profiler": "torch", "torch_profiler_dir": ...}'`)."""
    if "--profiler-config" not in args:
        return None
    return Path(json.loads(args[args.index("--profiler-config") + 1])["torch_profiler_dir"])


def profiled_point(base_url: str, traces: Path, into: Path, run, log) -> None:
    """Run a point between the engine's /start_profile and /stop_profile, then summarize the worker traces it
    wrote (scripts/device/trace_summary.py) into INTO/trace-summary.json; the raw traces are packed if small."""
    before = set(traces.rglob("*")) if traces.exists() else set()
    for verb in ("start_profile", None, "stop_profile"):
        if verb is None:
            run()
            continue
        try:
            urllib.request.urlopen(urllib.request.Request(f"{base_url}/{verb}", method="POST"), timeout=300).read()
        except OSError as exc:
            log.write(f"[{elapsed():.0f}s] {verb} failed: {exc}\n")
            return
    fresh = sorted(f for f in set(traces.rglob("*")) - before if f.is_file())
    into.mkdir(parents=True, exist_ok=True)
    log.write(f"[{elapsed():.0f}s] traces: {' '.join(f'{f.name} {f.stat().st_size}' for f in fresh)}\n")
    if fresh:
        subprocess.run([sys.executable, str(Path(__file__).with_name("trace_summary.py")),
                        *(str(f) for f in fresh if ".json" in f.name),
                        "--out", str(into / "trace-summary.json")], stdout=log, stderr=subprocess.STDOUT)
        for f in fresh:
            if f.stat().st_size < 6_000_000:
                (into / f.name).write_bytes(f.read_bytes())


def write_random_checkpoint(folder: str, log) -> None:
    """Random bf16 weights in safetensors beside config.json (built on the GPU, then saved)."""
    code = ("import sys, torch, transformers as t; c = t.AutoConfig.from_pretrained(sys.argv[1]); "
            "torch.set_default_device('cuda'); m = t.AutoModelForCausalLM.from_config(c, dtype=torch.bfloat16); "
            "m.save_pretrained(sys.argv[1] + '/weights')")
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", code, folder], stdout=log, stderr=subprocess.STDOUT, check=True)
    for f in Path(folder, "weights").iterdir():
        if f.suffix in (".safetensors", ".json") and f.name not in ("config.json", "generation_config.json"):
            f.replace(Path(folder) / f.name)
    log.write(f"[{elapsed():.0f}s] random checkpoint written in {time.monotonic() - t0:.0f} s\n")


def write_facts(root: Path, engine_name: str, log_text: str, version: str | None) -> None:
    """The engine's startup facts; the version from its package where the log does not print it."""
    facts = parse_facts(engine_name, log_text)
    facts.version = facts.version or version
    (root / "facts.json").write_text(facts.model_dump_json(indent=1))


def sampled_point(engine_pid: int | None, d: Path, label: str, condition: dict, run) -> None:
    """Run a point; with a host probe, sample the server's threads while it runs and append what they did (and each
    CPU's speed just after) to d/host.jsonl."""
    if engine_pid is None:
        run()
        return
    avoid = {condition["main_cpu"]} if "main_cpu" in condition else set()
    with hostprobe.ThreadSampler(engine_pid, avoid=avoid) as sampler:
        run()
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "host.jsonl", "a") as f:
        f.write(json.dumps({"load": label, "condition": condition, **sampler.summary(),
                            "loop_s_after": hostprobe.speed_map()}) + "\n")


def run_config(cfg: dict, out: Path, budget_s: float, skipped: list[str]) -> None:
    slug = cfg.get("name") or f"{cfg['model'].split('/')[-1]}-{cfg.get('precision', 'bf16')}"
    engine_name = cfg.get("engine", "vllm")
    root = WORK / slug
    root.mkdir(parents=True, exist_ok=True)
    info = prepare_model_dir(cfg["model"], WORK.parent / "models" / slug)
    log = open(root / "campaign.log", "a")
    if cfg.get("random_checkpoint"):
        write_random_checkpoint(info.path, log)
    args = list(cfg.get("engine_args", []))
    if cfg.get("draft_model"):  # a draft model's folder, named like its catalog file ({draft_dir} in engine_args)
        draft = prepare_model_dir(cfg["draft_model"], WORK.parent / "models" / catalog_file_stem(cfg["draft_model"]))
        args = [a.replace("{draft_dir}", draft.path) for a in args]
    ec = EngineConfig(model_dir=info.path, served_model_name=slug, quantization="fp8" if cfg.get("precision") == "fp8" else None,
                      extra_args=args, engine_python=sys.executable, port=PORT)
    cmd = build_command(engine_name, ec, root)
    jit_env = {"TRITON_CACHE_DIR": str(root / "triton-cache"), "TORCHINDUCTOR_CACHE_DIR": str(root / "inductor-cache")}
    cmd = cmd.model_copy(update={"env": {**cmd.env, **jit_env, **cfg.get("engine_env", {})}})
    served = cmd.served_model_name or slug
    (root / "scenario.json").write_text(json.dumps({"model": cfg["model"], "gpu": cfg.get("gpu", "h200-sxm"),
                                                    "precision": cfg.get("precision", "bf16"),
                                                    "kv_precision": cfg.get("kv_precision", "bf16"),
                                                    "engine": engine_name, "engine_argv": cmd.argv}, indent=1))
    engine = EngineProcess(slug, cmd, ec.base_url, root / "server.log", startup_timeout_s=min(float(cfg.get("startup_timeout_s", 420)),
                                                               max(60.0, budget_s - elapsed() - 30)))
    engine.start()
    version = None
    try:
        engine.wait_ready()
        log.write(f"[{elapsed():.0f}s] ready after {engine.ready_after_s:.0f} s\n")
        version = installed_version(cmd)
        write_facts(root, engine_name, engine.log_text(), version)
        note_jit(root, "ready")
        pack(out)
        probe = None
        if cfg.get("host_probe"):  # where the engine's host work runs (scripts/device/hostprobe.py)
            probe = hostprobe.probe_at_ready(engine.pid)
            (root / "host-probe.json").write_text(json.dumps(probe, indent=1))
            log.write(f"[{elapsed():.0f}s] host probe: fast CPU {probe['fast']}, slow {probe['slow']}, "
                      f"siblings {probe['sibling']}, engine core pid {probe['engine_core_pid']}\n")
        base = [sys.executable, "-m", "validate.cli", "sweep", "--base-url", ec.base_url, "--model", served,
                "--model-config", info.path, "--gpu", cfg.get("gpu", "h200-sxm"), "--dialect", dialect(engine_name)]
        for isl, osl, *own in cfg["shapes"]:
            opts = own[1] if len(own) > 1 else {}
            d = root / opts.get("dir", f"{isl}x{osl}")
            sb = base + ["--isl", str(isl), "--osl", str(osl)] + list(opts.get("sweep_args", []))
            condition, spinner = ({}, None) if probe is None else hostprobe.apply_condition(
                engine.pid, probe, opts.get("host", {}))
            server = engine.pid if probe is not None else None
            try:
                for spec in (own[0] if own else cfg["points"]):
                    if elapsed() > budget_s:
                        skipped.append(f"{slug} {isl}x{osl} {spec}")
                        continue
                    pt = parse_point(spec)  # validate/spec_points.py: the one grammar (predict_spec.py reads it too)
                    if pt.kind == "rates":
                        pts = measured(d)
                        lo = pts.get("sync", {}).get("requests_per_s")
                        hi = next((p["requests_per_s"] for k, p in pts.items() if k.startswith("burst")), None)
                        if not lo or not hi:
                            skipped.append(f"{slug} {isl}x{osl} rates (no sync/burst)")
                            continue
                        for i in range(1, pt.count + 1):
                            rate = lo + (hi - lo) * i / (pt.count + 1)
                            if elapsed() > budget_s:
                                skipped.append(f"{slug} {isl}x{osl} rate:{rate:.3f}")
                                continue
                            run_point(sb, d, f"rate:{rate:.3f}", max(8, int(rate * pt.seconds)), 0, log)
                        continue
                    warm = (1 if pt.kind == "sync" else
                            int(pt.load.value * float(cfg.get("warmup_rounds", 0.25))) if pt.kind == "concurrency" else 0)
                    arrivals = ["--arrivals", pt.arrivals] if pt.load.kind == "rate" else []
                    if pt.arrivals == "gamma":
                        arrivals += ["--gamma-shape", repr(pt.gamma_shape)]
                    if pt.profiled:  # under the profiler: summarized, never a measurement
                        into = root / "profile" / d.name
                        traces = profiler_dir(args)
                        if traces is None:
                            skipped.append(f"{slug} {d.name} {spec} (no --profiler-config in engine_args)")
                            continue
                        profiled_point(ec.base_url, traces, into,
                                       lambda: run_point(sb, into, "sync", pt.num_requests, 1, log), log)
                        pack(out)
                        continue
                    folder = d if pt.recorded else root / "warmup" / d.name  # warm-ups are not recorded
                    count = jit_counts(root)["triton-cache"]
                    for i in range(pt.passes):  # warmprate: passes until one compiles nothing
                        if i and elapsed() > budget_s:
                            skipped.append(f"{slug} {d.name} {spec} pass {i + 1}")
                            break
                        into = folder / f"pass-{i + 1}" if pt.passes > 1 else folder  # a sweep folder resumes, never repeats
                        sampled_point(server if pt.recorded else None, d, pt.load.label, condition,
                                      lambda: run_point(sb + arrivals, into, pt.load.label,
                                                        pt.num_requests or int(pt.load.value), warm, log))
                        label = f"{d.name}/{pt.load.label}" if pt.recorded else f"warmup {d.name} {pt.load.label} pass {i + 1}"
                        count, before = note_jit(root, label), count
                        if count == before:
                            break
                    summarize_requests(d)
                    pack(out)
            finally:
                if spinner is not None:
                    spinner.stop()
    finally:
        engine.stop()
        write_facts(root, engine_name, engine.log_text(), version)
        log.close()
        pack(out)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("spec")
    p.add_argument("out")
    p.add_argument("--budget-s", type=float, default=540.0)
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--work", default="/tmp/campaign")
    p.add_argument("--name", default="campaign")
    a = p.parse_args()
    global WORK, PORT, NAME
    WORK, PORT, NAME = Path(a.work), a.port, a.name
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    skipped: list[str] = []
    for cfg in json.loads(Path(a.spec).read_text()):
        if elapsed() > a.budget_s - 120:
            skipped.append(f"{cfg['model']} {cfg.get('precision', 'bf16')}: whole config (no time to start)")
            continue
        try:
            run_config(cfg, out, a.budget_s, skipped)
        except Exception as exc:  # keep going with the next config; the log says what broke
            skipped.append(f"{cfg['model']}: {type(exc).__name__}: {exc}")
    (WORK / "skipped.txt").write_text("\n".join(skipped) + "\n")
    pack(out)
    print("skipped:", *skipped, sep="\n  ")


if __name__ == "__main__":
    main()
