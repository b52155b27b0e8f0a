"""TensorRT-LLM: ``trtllm-serve DIR --backend pytorch ...`` with an extra-options YAML, and its facts.

Dummy weights, dtype and the KV-cache dtype are LLM-API options, not flags, so they go into a small
YAML file passed with ``--extra_llm_api_options`` (written next to the engine log before start).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from validate.engines.config import HOST, EngineCommand, EngineConfig, EngineFacts, engine_flags
from validate.engines.logparse import GiB, search
from validate.errors import EngineConfigError

NAME = "trtllm"  # its model half and flag table: capacity/engines/trtllm.py
EXECUTABLE = "trtllm-serve"
# options on the command line (the flag table); dtype, KV dtype and load format go to the options file
ARGV_OPTIONS = ("tensor_parallel_size", "max_model_len", "max_num_seqs", "gpu_memory_utilization")


def extra_options(config: EngineConfig) -> dict[str, object]:
    options: dict[str, object] = {}
    if config.load_format != "auto":
        options["load_format"] = config.load_format
    if config.dtype:
        options["dtype"] = config.dtype
    if config.kv_cache_dtype:
        options["kv_cache_config"] = {"dtype": config.kv_cache_dtype}
    return options


def build_command(config: EngineConfig, workdir: Path | None = None) -> EngineCommand:
    if config.quantization:
        raise EngineConfigError(
            "trtllm-serve reads quantization from the checkpoint (quant_config); pass a pre-quantized "
            "model folder, or --engine-arg --extra_llm_api_options=FILE for other LLM-API options"
        )
    executable = config.engine_python or EXECUTABLE
    argv = [executable, config.model_dir, "--backend", "pytorch", "--host", HOST, "--port", str(config.port),
            "--served_model_name", config.served_model_name]
    argv += engine_flags(NAME, config, ARGV_OPTIONS)
    files: dict[str, str] = {}
    if extra := extra_options(config):
        path = str(Path(workdir or ".") / "trtllm-extra-options.yaml")
        files[path] = json.dumps(extra, indent=1) + "\n"  # JSON is valid YAML
        argv += ["--extra_llm_api_options", path]
    return EngineCommand(argv=argv + config.extra_args, served_model_name=config.served_model_name, files=files,
                         ready_paths=["/health", "/v1/models"])


# TensorRT-LLM 0.18-1.2 lines:
#   [TensorRT-LLM] TensorRT-LLM version: 1.1.0
#   [TensorRT-LLM][INFO] [MemUsageChange] Allocated 26.91 GiB for max tokens in paged KV cache (220480).
#   [TRT-LLM] [I] max_seq_len=131072, max_num_requests=2048, max_num_tokens=8192
VERSION = re.compile(r"TensorRT-LLM version: ([\w.+-]+)")
KV = re.compile(r"Allocated ([\d.]+) GiB for max tokens in paged KV cache \((\d+)\)")
LIMITS = re.compile(r"max_seq_len=(\d+), max_num_requests=(\d+)")


def parse_facts(log_text: str) -> EngineFacts:
    facts = EngineFacts(engine="trtllm", device="GPU")
    lines: list[str] = []
    if m := search(VERSION, log_text, lines):
        facts.version = m[1]
    if m := search(KV, log_text, lines):
        facts.kv_cache_bytes, facts.kv_cache_tokens = round(float(m[1]) * GiB), int(m[2])
    if (m := search(LIMITS, log_text, lines)) and facts.kv_cache_tokens:
        facts.max_concurrency_tokens_per_request = int(m[1])
        facts.max_concurrency = facts.kv_cache_tokens / int(m[1])
    facts.lines = lines
    return facts
