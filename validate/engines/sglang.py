"""SGLang: ``PY -m sglang.launch_server --model-path DIR --load-format dummy ...`` and its facts."""

from __future__ import annotations

import re

from pathlib import Path

from validate.engines.config import (HOST, EngineCommand, EngineConfig, EngineFacts, engine_flags, engine_python,
                                     package_version_argv)
from validate.engines.logparse import search

NAME = "sglang"  # its model half and flag table: capacity/engines/sglang.py
PYTHON_ENV = "LLMCAP_SGLANG_PYTHON"
# Its Prometheus /metrics (needs --enable-metrics, which build_command adds), per quantity of validate.telemetry
# (SGLang 0.5). Every prompt token is a prefix-cache query, so the queries are the prompt-token counter and the hits
# its cached-token counter; preemptions are retractions (the counter, not the num_retracted_reqs gauge of the last
# batch); token usage is the share of the KV cache in use.
METRICS = {
    "prompt_tokens": ("sglang:prompt_tokens",),
    "generation_tokens": ("sglang:generation_tokens",),
    "prefix_cache_queries": ("sglang:prompt_tokens",),
    "prefix_cache_hits": ("sglang:cached_tokens",),
    "preemptions": ("sglang:num_retracted_requests",),
    "requests_finished": ("sglang:num_requests",),
    "running": ("sglang:num_running_reqs",),
    "waiting": ("sglang:num_queue_reqs",),
    "kv_usage": ("sglang:token_usage",),
    "ttft_sum_s": ("sglang:time_to_first_token_seconds_sum",),
    "ttft_count": ("sglang:time_to_first_token_seconds_count",),
    "queue_sum_s": ("sglang:queue_time_seconds_sum",),
    "queue_count": ("sglang:queue_time_seconds_count",),
}


def build_command(config: EngineConfig, workdir: Path | None = None) -> EngineCommand:
    python = engine_python(config, PYTHON_ENV)
    argv = [python, "-m", "sglang.launch_server", "--model-path", config.model_dir,
            "--served-model-name", config.served_model_name, "--load-format", config.load_format,
            "--host", HOST, "--port", str(config.port), "--enable-metrics"]
    argv += engine_flags(NAME, config)
    return EngineCommand(argv=argv + config.extra_args, version_argv=package_version_argv(python, 'sglang'),
                         served_model_name=config.served_model_name,
                         env={"HF_HUB_OFFLINE": "1"},
                         ready_paths=["/health", "/v1/models"])


# SGLang 0.4-0.5 (model_runner.py, memory_pool.py); "GB" there is 2**30 bytes (get_available_gpu_memory
# divides by 1 << 30), so these are GiB despite the label:
#   Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.26 GB, mem usage=14.99 GB.
#   KV Cache is allocated. #tokens: 413444, K size: 25.24 GB, V size: 25.24 GB   (or "KV size: 19.36 GB")
#   KV Cache is allocated. dtype: torch.bfloat16, #tokens: 906051, K size: 55.30 GB, V size: 55.30 GB   (0.5.17)
#   Capture cuda graph end. Time elapsed: 20.26 s. mem usage=0.74 GB. avail mem=10.55 GB.
#   Capture target prefill CUDA graph end. elapsed=54.16 s, mem usage=1.47 GB, avail mem=10.12 GB.   (0.5.17: one
#   line per graph kind, prefill and decode; their sum is the graphs' memory)
#   max_total_num_tokens=413444, chunked_prefill_size=8192, ..., max_running_requests=4096, context_len=131072
WEIGHTS = re.compile(r"Load weight end\..*?mem usage=([\d.]+) GB")
KV_SPLIT = re.compile(r"KV Cache is allocated\.(?: dtype: [\w.]+,)? #tokens: (\d+), K size: ([\d.]+) GB, V size: ([\d.]+) GB")
KV_JOINT = re.compile(r"KV Cache is allocated\.(?: dtype: [\w.]+,)? #tokens: (\d+), KV size: ([\d.]+) GB")
GRAPH = re.compile(r"Capture (?:target \w+ )?cuda graph end\..*?mem usage=([\d.]+) GB", re.IGNORECASE)
LIMITS = re.compile(r"max_total_num_tokens=(\d+),.*?max_running_requests=(\d+),.*?context_len=(\d+)")
VERSION = re.compile(r"sglang(?: version|==| v)\s*([\d][\w.+-]*)", re.IGNORECASE)
GiB_LABELLED_GB = 2**30


def parse_facts(log_text: str) -> EngineFacts:
    facts = EngineFacts(engine="sglang", device="GPU")
    lines: list[str] = []
    if m := search(WEIGHTS, log_text, lines):
        facts.weights_bytes = round(float(m[1]) * GiB_LABELLED_GB)
    if m := search(KV_SPLIT, log_text, lines):
        facts.kv_cache_tokens = int(m[1])
        facts.kv_cache_bytes = round((float(m[2]) + float(m[3])) * GiB_LABELLED_GB)
    elif m := search(KV_JOINT, log_text, lines):
        facts.kv_cache_tokens, facts.kv_cache_bytes = int(m[1]), round(float(m[2]) * GiB_LABELLED_GB)
    graphs: dict[str, tuple[str, float]] = {}  # graph kind -> (its first line, GiB): every TP rank prints its own
    for line in log_text.splitlines():
        if m := GRAPH.search(line):
            graphs.setdefault(m[0].split(" end.")[0].lower(), (line.strip()[:300], float(m[1])))
    if graphs:
        facts.cuda_graph_bytes = round(sum(gib for _, gib in graphs.values()) * GiB_LABELLED_GB)
        lines += [line for line, _ in graphs.values()]
    if m := search(LIMITS, log_text, lines):
        facts.kv_cache_tokens = facts.kv_cache_tokens or int(m[1])
        context_len = int(m[3])
        facts.max_concurrency_tokens_per_request = context_len
        facts.max_concurrency = int(m[1]) / context_len
    if m := search(VERSION, log_text, lines):
        facts.version = m[1]
    facts.lines = lines
    return facts
