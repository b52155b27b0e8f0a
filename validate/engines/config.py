"""One engine configuration, the command built from it, and the facts an engine prints."""

from __future__ import annotations

import os
import sys

from pydantic import BaseModel, ConfigDict, Field

import capacity.engines as capacity_engines
from validate.errors import EngineConfigError

HOST = "127.0.0.1"


class EngineConfig(BaseModel):
    """Everything an adapter needs to build a server command line."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model_dir: str
    served_model_name: str
    dtype: str | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    tensor_parallel_size: int = Field(default=1, ge=1)
    max_model_len: int | None = Field(default=None, gt=0)
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    max_num_seqs: int | None = Field(default=None, gt=0)
    port: int = Field(default=8000, gt=0, lt=65536)
    load_format: str = "dummy"
    extra_args: list[str] = Field(default_factory=list)
    engine_python: str | None = None

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"


# EngineConfig field -> the `validate run` option that sets it (for messages)
RUN_OPTIONS = {"dtype": "--dtype", "quantization": "--quantization", "kv_cache_dtype": "--kv-cache-dtype",
               "tensor_parallel_size": "--tp", "max_model_len": "--max-model-len",
               "gpu_memory_utilization": "--gpu-memory-utilization", "max_num_seqs": "--max-num-seqs"}


def engine_options(config: EngineConfig, fields: tuple[str, ...] = tuple(RUN_OPTIONS)) -> dict[str, object]:
    """The engine options of `config` that are set, by flag-table option name (TP 1 is left to the engine)."""
    values = {f: getattr(config, f) for f in fields}
    if values.get("tensor_parallel_size") == 1:
        values["tensor_parallel_size"] = None
    return {k: v for k, v in values.items() if v is not None}


def engine_flags(engine: str, config: EngineConfig, fields: tuple[str, ...] = tuple(RUN_OPTIONS)) -> list[str]:
    """The command-line flags of `config`'s engine options, from the engine's flag table (capacity/engines/);
    an option the engine has no flag for raises EngineConfigError."""
    table = capacity_engines.get(engine).flags
    options = engine_options(config, fields)
    if missing := [RUN_OPTIONS.get(k, k) for k in options if k not in table.options]:
        raise EngineConfigError(f"{capacity_engines.get(engine).title} has no equivalent of {', '.join(missing)}")
    return table.argv(options)


def engine_python(config: EngineConfig, env_var: str) -> str:
    """The interpreter that runs the engine: --engine-python, else $env_var, else this Python."""
    return config.engine_python or os.environ.get(env_var) or sys.executable


class EngineCommand(BaseModel):
    """A server command: argv, extra environment, and small files to write before starting."""

    model_config = ConfigDict(frozen=True)

    argv: list[str]
    served_model_name: str = Field(description="the model name clients must send")
    env: dict[str, str] = Field(default_factory=dict)
    files: dict[str, str] = Field(default_factory=dict, description="path -> text, written first")
    ready_paths: list[str] = Field(default_factory=lambda: ["/health", "/v1/models"])
    version_argv: list[str] | None = Field(default=None, description="prints the engine version when run")


def package_version_argv(python: str, distribution: str) -> list[str]:
    """A command that prints a distribution's version without importing it (fast)."""
    return [python, "-c", f"import importlib.metadata as m; print(m.version({distribution!r}))"]


class EngineFacts(BaseModel):
    """Numbers an engine prints while starting (bytes and tokens; None when not printed)."""

    model_config = ConfigDict(extra="forbid")

    engine: str
    version: str | None = None
    weights_bytes: int | None = None
    kv_cache_bytes: int | None = None
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    max_concurrency_tokens_per_request: int | None = None
    cuda_graph_bytes: int | None = None
    device: str | None = Field(default=None, description="'GPU', 'CPU', ... as the engine says it")
    lines: list[str] = Field(default_factory=list, description="the log lines these came from")
