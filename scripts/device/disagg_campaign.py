"""Issue 22 on a 2-GPU machine: two vLLM servers (one per GPU) behind scripts/device/disagg_proxy.py, then every point
of the spec with `validate sweep` against the proxy, as scripts/device/campaign.py does for one server (which cannot
express two servers and a proxy).

Spec (scripts/device/specs/h200x2-disagg.json): campaign.py's grammar plus "layout": "1p1d" (GPU 0 prefills, GPU 1
decodes, the KV moved by vLLM's KV connector) or "2agg" (two aggregated replicas, requests alternating), and
"connector": "auto" | "nixl" | "p2pnccl" (auto: NixlConnector when the `nixl` package imports, else P2pNcclConnector,
which needs only NCCL and pyzmq — the vLLM 0.26.0 wheel set in shared/tools/device-vllm ships no nixl).
Usage (run-disagg.sh sets the environment): python3 scripts/device/disagg_campaign.py SPEC OUTDIR --budget-s S
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import campaign  # noqa: E402  (run_point, summarize_requests, measured, pack, write_facts)
from validate.engines import build_command, installed_version  # noqa: E402
from validate.engines.config import EngineConfig  # noqa: E402
from validate.engines.launcher import EngineProcess  # noqa: E402
from validate.modeldir import prepare_model_dir  # noqa: E402

PROXY_PORT, PORTS = 8000, (8100, 8200)
KV_PORTS = (21001, 22001)  # P2pNcclConnector: each instance's KV listener
NIXL_SIDE_PORTS = (5600, 5601)


def connector_name(choice: str) -> str:
    if choice != "auto":
        return choice
    ok = subprocess.run([sys.executable, "-c", "import nixl"], capture_output=True).returncode == 0
    return "nixl" if ok else "p2pnccl"


def kv_args(connector: str, role: str, index: int) -> tuple[list[str], dict[str, str]]:
    """--kv-transfer-config for one instance (and its environment)."""
    if connector == "nixl":
        cfg = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
        return ["--kv-transfer-config", json.dumps(cfg)], {"VLLM_NIXL_SIDE_CHANNEL_PORT": str(NIXL_SIDE_PORTS[index]),
                                                           "UCX_NET_DEVICES": "all"}
    # the minimal form of vLLM's own P2pNcclConnector accuracy test (tests/v1/kv_connector): role and KV port only
    cfg = {"kv_connector": "P2pNcclConnector", "kv_role": "kv_producer" if role == "prefill" else "kv_consumer",
           "kv_port": KV_PORTS[index]}
    return ["--kv-transfer-config", json.dumps(cfg)], {}


def kv_host() -> str:
    """The address P2pNcclEngine binds its KV listener to (vLLM's get_ip), which the request ids must name."""
    r = subprocess.run([sys.executable, "-c", "from vllm.utils.network_utils import get_ip; print(get_ip())"],
                       capture_output=True, text=True)
    return r.stdout.strip() or "127.0.0.1"


def run_config(cfg: dict, out: Path, budget_s: float, skipped: list[str]) -> None:
    slug = cfg["name"]
    root = campaign.WORK / slug
    root.mkdir(parents=True, exist_ok=True)
    info = prepare_model_dir(cfg["model"], campaign.WORK.parent / "models" / slug)
    log = open(root / "campaign.log", "a")
    layout = cfg["layout"]
    connector = connector_name(cfg.get("connector", "auto")) if layout == "1p1d" else "none"
    log.write(f"[{campaign.elapsed():.0f}s] layout {layout}, connector {connector}\n")
    engines = []
    for i, role in enumerate(("prefill", "decode") if layout == "1p1d" else ("replica0", "replica1")):
        extra, env = kv_args(connector, role, i) if layout == "1p1d" else ([], {})
        ec = EngineConfig(model_dir=info.path, served_model_name=slug, extra_args=list(cfg.get("engine_args", [])) + extra,
                          engine_python=sys.executable, port=PORTS[i])
        cmd = build_command("vllm", ec, root)
        cmd = cmd.model_copy(update={"env": {**cmd.env, **env, "CUDA_VISIBLE_DEVICES": str(i)}})
        engines.append(EngineProcess(f"{slug}-{role}", cmd, ec.base_url, root / f"server-{role}.log",
                                     startup_timeout_s=min(600.0, max(60.0, budget_s - campaign.elapsed() - 30))))
    (root / "scenario.json").write_text(json.dumps({"model": cfg["model"], "gpu": cfg.get("gpu", "h200-sxm"),
                                                    "precision": cfg.get("precision", "bf16"), "layout": layout,
                                                    "connector": connector, "engine": "vllm",
                                                    "engine_argv": [e.command.argv for e in engines]}, indent=1))
    proxy = None
    try:
        for e in engines:  # both compile at once, one per GPU
            e.start()
        for e in engines:
            e.wait_ready()
            log.write(f"[{campaign.elapsed():.0f}s] {e.name} ready after {e.ready_after_s:.0f} s\n")
        mode = {"nixl": "nixl", "p2pnccl": "p2pnccl", "none": "rr"}[connector]
        host = kv_host() if mode == "p2pnccl" else "127.0.0.1"
        proxy = subprocess.Popen([sys.executable, str(Path(__file__).with_name("disagg_proxy.py")), "--mode", mode,
                                  "--port", str(PROXY_PORT), "--prefill", engines[0].base_url,
                                  "--decode", engines[1].base_url, "--prefill-kv", f"{host}:{KV_PORTS[0]}",
                                  "--decode-kv", f"{host}:{KV_PORTS[1]}", "--log", str(root / "proxy.jsonl")],
                                 stdout=log, stderr=subprocess.STDOUT)
        time.sleep(3)
        version = installed_version(engines[0].command)
        for e, role in zip(engines, ("0", "1")):  # each server's start-up facts (KV cache size, version)
            (root / role).mkdir(exist_ok=True)
            campaign.write_facts(root / role, "vllm", e.log_text(), version)
        campaign.pack(out)
        base = [sys.executable, "-m", "validate.cli", "sweep", "--base-url", f"http://127.0.0.1:{PROXY_PORT}",
                "--model", slug, "--model-config", info.path, "--gpu", cfg.get("gpu", "h200-sxm"), "--dialect", "openai"]
        for isl, osl, *own in cfg["shapes"]:
            d = root / f"{isl}x{osl}"
            sb = base + ["--isl", str(isl), "--osl", str(osl)]
            for spec in (own[0] if own else cfg["points"]):
                if campaign.elapsed() > budget_s:
                    skipped.append(f"{slug} {isl}x{osl} {spec}")
                    continue
                kind, *rest = spec.split(":")
                if kind == "sync":
                    campaign.run_point(sb, d, "sync", int(rest[0]), 1, log)
                elif kind == "concurrency":
                    campaign.run_point(sb, d, f"concurrency:{rest[0]}", int(rest[1]), int(int(rest[0]) * 0.25), log)
                elif kind == "warmburst":
                    campaign.run_point(sb, root / "warmup" / f"{isl}x{osl}", f"burst:{rest[0]}", int(rest[0]), 0, log)
                elif kind == "prate":
                    campaign.run_point(sb + ["--arrivals", "poisson"], d, f"rate:{rest[0]}", int(rest[1]), 0, log)
                campaign.summarize_requests(d)
                campaign.pack(out)
    finally:
        if proxy is not None:
            proxy.terminate()
            proxy.wait(timeout=20)
        for e in engines:
            e.stop()
        for e, role in zip(engines, ("0", "1")):
            (root / role).mkdir(exist_ok=True)
            campaign.write_facts(root / role, "vllm", e.log_text(), None)
        log.close()
        campaign.pack(out)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("spec")
    p.add_argument("out")
    p.add_argument("--budget-s", type=float, default=540.0)
    p.add_argument("--work", default="/tmp/disagg/campaign")
    p.add_argument("--name", default="disagg")
    a = p.parse_args()
    campaign.WORK, campaign.NAME = Path(a.work), a.name
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    skipped: list[str] = []
    only = os.environ.get("DISAGG_ONLY")  # e.g. DISAGG_ONLY=Llama-3.1-8B-1p1d to run one config per sitting
    for cfg in json.loads(Path(a.spec).read_text()):
        if only and cfg["name"] not in only.split(","):
            continue
        if campaign.elapsed() > a.budget_s - 150:
            skipped.append(f"{cfg['name']}: whole config (no time to start)")
            continue
        try:
            run_config(cfg, out, a.budget_s, skipped)
        except Exception as exc:  # the next config still runs; the log says what broke
            skipped.append(f"{cfg['name']}: {type(exc).__name__}: {exc}")
    campaign.WORK.mkdir(parents=True, exist_ok=True)
    (campaign.WORK / "skipped.txt").write_text("\n".join(skipped) + "\n")
    campaign.pack(out)
    print("skipped:", *skipped, sep="\n  ")


if __name__ == "__main__":
    main()
