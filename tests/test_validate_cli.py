"""The CLI's error contract (one line, exit 2) and the import hygiene that lets it run uninstalled."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from validate.cli import main
from validate.engines.launcher import free_port

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "assets" / "tiny-llama"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "validate.cli", *args], capture_output=True, text=True,
                          env=env, timeout=120, cwd=REPO)


def one_line_error(result: subprocess.CompletedProcess[str], kind: str) -> str:
    """The error is the last line of stderr, on one line (progress lines may come before it)."""
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr, result.stderr
    assert lines[-1].startswith(f"{kind}: "), result.stderr
    assert sum(line.startswith(f"{kind}:") for line in lines) == 1
    return lines[-1]


def test_missing_arguments():
    line = one_line_error(cli("run", "--engine", "vllm"), "UsageError")
    assert "--model" in line and "--isl" in line


def test_bad_profile(tmp_path):
    line = one_line_error(cli("sweep", "--base-url", "http://127.0.0.1:9", "--model", "m", "--isl", "8",
                              "--osl", "8", "--profile", "burst:many", "--out", str(tmp_path)), "UsageError")
    assert "burst:many" in line


def test_no_server_at_base_url(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    line = one_line_error(cli("sweep", "--base-url", url, "--model", "m", "--isl", "8", "--osl", "8",
                              "--out", str(tmp_path)), "UsageError")
    assert f"no OpenAI-compatible server at {url}" in line


def test_unknown_model_suggests_catalog_ids(tmp_path):
    line = one_line_error(cli("run", "--engine", "vllm", "--model", "Qwen3-8", "--isl", "8", "--osl", "8",
                              "--out", str(tmp_path)), "ModelDirError")
    assert "Qwen/Qwen3-8B" in line


def test_out_of_range_engine_option(tmp_path, capsys):
    code = main(["run", "--engine", "vllm", "--model", str(TINY), "--gpu-memory-utilization", "2", "--isl", "8",
                 "--osl", "8", "--out", str(tmp_path)])
    assert code == 2
    expected = "UsageError: gpu_memory_utilization: Input should be less than or equal to 1"
    assert capsys.readouterr().err.strip() == expected


def test_requests_longer_than_the_model(tmp_path, capsys):
    code = main(["run", "--engine", "vllm", "--model", str(TINY), "--max-model-len", "512", "--isl", "500",
                 "--osl", "64", "--out", str(tmp_path)])
    assert code == 2
    assert "exceed the server's max model length 512" in capsys.readouterr().err


def test_engine_that_cannot_be_found(tmp_path):
    line = one_line_error(cli("run", "--engine", "vllm", "--model", str(TINY), "--engine-python", "/no/python",
                              "--isl", "8", "--osl", "8", "--profile", "sync", "--out", str(tmp_path)),
                          "EngineStartError")
    assert "cannot run '/no/python'" in line


BLOCKER = """
import sys
BLOCKED = {"streamlit", "altair", "sympy", "pyarrow", "pandas", "tokenizers", "torch", "transformers"}
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"blocked: {name}")
sys.meta_path.insert(0, Block())
import validate.cli, validate.commands, validate.importers, validate.runner, validate.stub_server
from validate.modeldir import config_info
info = config_info("Qwen/Qwen3-8B")
assert info.vocab_size == 151936 and info.special_ids == [151643, 151645], info
from validate.engines import EngineConfig, build_command, engine_names
for name in engine_names():  # every engine's command, from its flag table in capacity/engines/
    build_command(name, EngineConfig(model_dir="/m", served_model_name="m"), __import__("pathlib").Path("/tmp"))
# the light parts: the engine objects, the errors, the model configs, the one load grammar and the load shapes (their
# random draws too), the command-line value types
model = sorted(m for m in sys.modules if m.startswith("capacity.") and m not in ("capacity.load", "capacity.argtypes")
               and not m.startswith(("capacity.engines", "capacity.errors", "capacity.model_configs", "capacity.loads")))
assert not model, ("the catalog and the flag tables must be read without importing the capacity model", model)
heavy = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
assert not heavy, heavy
print("ok")
"""


def test_validate_imports_only_light_packages():
    """`PYTHONPATH=. python3 -m validate.cli` must work where only numpy, pydantic, httpx and rich exist."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-c", BLOCKER], capture_output=True, text=True, env=env, cwd=REPO,
                            timeout=60)
    assert result.stdout.strip() == "ok", result.stderr


@pytest.mark.parametrize("command", ["run", "sweep", "import"])
def test_help(command):
    result = cli(command, "--help")
    assert result.returncode == 0 and "--out" in result.stdout
