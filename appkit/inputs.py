"""Input helpers: workload presets, objectives, uploaded config.json and custom GPU numbers turned into the
paths `capacity.Scenario` accepts (a config.json path; a GPU spec TOML path)."""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

import capacity.engines as capacity_engines
from capacity.model.architecture import ModelArch, parse_config
from capacity.engines import engine_profile
from capacity.errors import ConfigError
from capacity.hardware import Gpu, gpu_catalog, parse_gpu_file

SHAPES: dict[str, tuple[int, int] | None] = {
    "RAG-like · 1,024 in → 128 out": (1024, 128),
    "reasoning-like · 128 in → 1,024 out": (128, 1024),
    "balanced · 512 → 512": (512, 512),
    "long prompt · 2,048 → 256": (2048, 256),
    "chat · 1,000 → 1,000": (1000, 1000),
    "custom": None,
}
TTFT_PRESETS_MS: dict[str, float | None] = {"1 s": 1000.0, "300 ms": 300.0, "custom": None}
PRECISIONS = ["bf16", "fp8", "fp4", "int4", "native"]
PRECISION_LABELS = {"bf16": "BF16", "fp8": "FP8", "fp4": "FP4 (NVFP4 / MXFP4)", "int4": "INT4 (AWQ/GPTQ, weight-only)",
                    "native": "checkpoint's own"}
KV_PRECISIONS = ["bf16", "fp8"]
COMPARE_GPUS = ["h100-sxm", "h200-sxm", "b200", "b300", "mi300x"]
UPLOAD_DIR = Path(tempfile.gettempdir()) / "llm-capacity-app"


def gpu_label(gpu_id: str) -> str:
    g = gpu_catalog().get(gpu_id)
    return f"{g.name} · {g.memory_label}" if g else gpu_id


def uploaded_config(name: str, data: bytes) -> tuple[str, ModelArch]:
    """Check an uploaded config.json and store it where `Scenario.model` can point (one folder per content
    hash, so the model cache never mixes two uploads). Raises ConfigError with a readable reason."""
    try:
        cfg = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{name} is not a UTF-8 text file") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{name} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    stem = Path(name).stem if Path(name).stem != "config" else "uploaded"
    try:
        arch = parse_config(cfg, name=stem)
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001  parse_config may trip on odd value types: report, never crash
        raise ConfigError(f"{name}: unsupported config.json ({type(exc).__name__}: {exc})") from None
    folder = UPLOAD_DIR / f"{stem}-{hashlib.sha256(data).hexdigest()[:12]}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.json"
    if not path.exists():
        path.write_bytes(data)
    return str(path), arch


def custom_gpu(name: str, memory_gb: float, bandwidth_tb_s: float, bf16_tflops: float, fp8_tflops: float,
               fp4_tflops: float, interconnect_gb_s: float, scale_up: int, price: float | None) -> tuple[str, Gpu]:
    """Write a GPU spec TOML from the sidebar's numbers (decimal units) and validate it with the catalog's
    own parser. Returns (path, Gpu)."""
    if memory_gb <= 0 or bandwidth_tb_s <= 0 or bf16_tflops <= 0 or interconnect_gb_s <= 0:
        raise ConfigError("custom GPU: memory, bandwidth, BF16 TFLOP/s and interconnect must be positive")
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name.strip() or "custom").lower()
    lines = [f'id = "custom-{safe}"', f"name = {json.dumps(name or 'custom GPU')}", 'vendor = "custom"',
             "release_year = 2026", f'memory_label = "{memory_gb:g} GB"', f"memory_bytes = {memory_gb * 1e9!r}",
             f"usable_memory_bytes = {memory_gb * 1e9!r}", f"memory_bandwidth_bytes_per_s = {bandwidth_tb_s * 1e12!r}",
             f"fp4_formats = {json.dumps(['nvfp4', 'mxfp4'] if fp4_tflops > 0 else [])}",
             'interconnect_name = "custom"', f"interconnect_bytes_per_s_per_direction = {interconnect_gb_s * 1e9!r}",
             f"scale_up_domain_size = {max(int(scale_up), 1)}", "tdp_watts = 1000"]
    if price:
        lines.append(f"price_usd_per_gpu_hour = {price!r}")
    lines.append("\n[dense_flops_per_s]")
    lines.append(f"bf16 = {bf16_tflops * 1e12!r}")
    if fp8_tflops > 0:
        lines.append(f"fp8 = {fp8_tflops * 1e12!r}")
    if fp4_tflops > 0:
        lines.append(f"fp4 = {fp4_tflops * 1e12!r}")
    lines.append("\n[sources]")
    for f in ("memory_bytes", "usable_memory_bytes", "memory_bandwidth_bytes_per_s", "dense_flops_per_s",
              "interconnect_bytes_per_s_per_direction", "tdp_watts", "price_usd_per_gpu_hour"):
        lines.append(f'{f} = "entered in the app"')
    text = "\n".join(lines) + "\n"
    UPLOAD_DIR.mkdir(parents=True, exist_ok=True)
    path = UPLOAD_DIR / f"gpu-{hashlib.sha256(text.encode()).hexdigest()[:12]}.toml"
    if not path.exists():
        path.write_text(text)
    return str(path), parse_gpu_file(path)


def engine_labels() -> dict[str, str]:
    """The sidebar's engine choices: label (the engine object's title) -> engine name, as capacity/engines/ has them."""
    return {capacity_engines.get(n).title: n for n in capacity_engines.names()}


def api_servers_help() -> str:
    """What vLLM's --api-server-count does, with what was measured (card.json api_server_decode)."""
    from capacity.card import api_server_text

    seen = api_server_text()
    return ("vLLM --api-server-count: front-end processes streaming the tokens; at hundreds of streaming clients one "
            f"is the bottleneck, and the model takes {engine_profile('vllm').engine_core_host_share:g} of its host "
            f"floor as the engine core's{f' (measured {seen})' if seen else ''}")


def engine_help(gpu_memory_bytes: float | None = None) -> str:
    """What each engine choice means, from its limits on a GPU of this memory (None: its reference GPU)."""
    parts = []
    for name in capacity_engines.names():
        engine, p = capacity_engines.get(name), engine_profile(name, gpu_memory_bytes)
        if name == "ideal":
            parts.append(f"{engine.title}: no engine limits, all memory after the weights as KV cache, peak FLOP/s and "
                         "bandwidth — an upper bound.")
            continue
        row = engine.flags.row("gpu_memory_utilization")  # its meaning differs per engine: the flag names it
        memory = f"{row.flag} {p.gpu_memory_utilization:g}" if row else "all memory after the weights"
        graphs = f"CUDA graphs up to {p.max_cudagraph_tokens:,}" if p.max_cudagraph_tokens else "no CUDA graphs"
        prefill = "prefill mixed into decode steps" if p.mixed_prefill else "prefill batches that run alone"
        steps = "whole prompts per step" if p.max_num_batched_tokens >= 10**8 else f"{p.max_num_batched_tokens:,}-token steps"
        seqs = "one request at a time" if p.max_num_seqs == 1 else f"{p.max_num_seqs:,} sequences"
        parts.append(f"{engine.title}: {memory}, {steps}, {seqs}, {prefill}, {graphs}.")
    return " ".join(parts)
