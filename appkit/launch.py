"""Launch snippets reproducing a configuration: vLLM, SGLang, TensorRT-LLM (trtllm-serve) and a Modal app.

Every engine flag comes from that engine's flag table and its per-GPU defaults (capacity/engines/), the same
tables `validate run` builds commands from and `validate compare` reads back.

The snippets are starting points: quantized precisions need a checkpoint in that format (or on-the-fly
FP8), which the comments say."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

import capacity.engines as capacity_engines
from capacity.engines import engine_profile

# Modal's GPU type names (https://modal.com/docs/guide/gpu); None: not offered there
MODAL_GPU = {"h100-sxm": "H100", "h200-sxm": "H200", "b200": "B200", "a100-80gb-sxm": "A100-80GB", "l40s": "L40S",
             "l4": "L4", "a10g": "A10G", "rtx-pro-6000": "RTX-PRO-6000"}


@dataclass(frozen=True)
class Launch:
    model: str  # a Hugging Face id (or the path the user gave)
    gpu: str
    num_gpus: int
    tp: int
    precision: str  # bf16, fp8, fp4, int4, native
    kv_precision: str
    max_model_len: int
    gpu_memory_bytes: float | None = None  # usable memory per GPU: the engines' own defaults for it
    large_moe_graphs: bool = False  # an MoE that runs > the default graphs' sequences: graphs to 1,024 (vLLM)
    pp: int = 1  # pipeline stages of tp GPUs each
    attention_dp: bool = False  # attention data parallel over the tp GPUs
    api_server_count: int | None = None  # vLLM's front-end processes (None: the engine's one)

    @property
    def replicas(self) -> int:
        return max(self.num_gpus // (self.tp * self.pp), 1)

    @property
    def gpus_per_replica(self) -> int:
        return self.tp * self.pp


LARGE_MOE_GRAPH_TOKENS = 1024  # sitting 6: Qwen3-30B-A3B at 640 and 1,024 sequences (GRAPHS_NOTE)


def configuration(c: Launch, engine: str) -> dict[str, object]:
    """The configuration as Scenario fields for one engine: the layout and lengths of `c`, and the engine's own
    limits on this GPU (capacity/engines/), which its flag table writes where the engine takes them as flags."""
    limits = engine_profile(engine, c.gpu_memory_bytes, c.tp)
    values: dict[str, object] = {
        "tp": c.tp, "pp": c.pp, "replicas": c.replicas, "precision": c.precision, "kv_precision": c.kv_precision,
        "max_model_len": c.max_model_len, "gpu_memory_utilization": limits.gpu_memory_utilization,
        "max_num_seqs": limits.max_num_seqs, "max_num_batched_tokens": limits.max_num_batched_tokens}
    if c.large_moe_graphs and engine == "vllm":
        values["max_cudagraph_tokens"] = LARGE_MOE_GRAPH_TOKENS
    if c.attention_dp and "attention_dp" in capacity_engines.get(engine).flags.options:  # a flag where it is one
        values["attention_dp"] = True
    if c.api_server_count and c.api_server_count > 1 and capacity_engines.get(engine).flags.sets(
            "api_server_count", c.api_server_count):
        values["api_server_count"] = c.api_server_count
    return values


def engine_args(c: Launch, engine: str) -> list[str]:
    """The engine's flags for `c`, through its flag table (the table `validate run` and `compare` use)."""
    table = capacity_engines.get(engine).flags
    return table.argv(table.options_for(configuration(c, engine)))


def _weights_note(p: str) -> str:
    return {
        "fp8": "FP8 weights: quantized on the fly here; an FP8 checkpoint (e.g. *-FP8) loads faster",
        "fp4": "FP4 weights need an NVFP4/MXFP4 checkpoint (e.g. NVIDIA ModelOpt *-FP4); point the model at it",
        "int4": "INT4 weights need an AWQ/GPTQ checkpoint; point the model at it",
        "native": "the checkpoint's own quantization is used",
    }.get(p, "")


def _fmt(cmd: list[str]) -> str:
    """One flag (and its value) per line, shell-quoted."""
    lines, i = [shlex.join(cmd[:3])], 3
    while i < len(cmd):
        if i + 1 < len(cmd) and not cmd[i + 1].startswith("-"):
            lines.append(shlex.join(cmd[i:i + 2]))
            i += 2
        else:
            lines.append(shlex.quote(cmd[i]))
            i += 1
    return " \\\n    ".join(lines)


def vllm_args(c: Launch) -> list[str]:
    return ["vllm", "serve", c.model, *engine_args(c, "vllm"), "--port", "8000"]


GRAPHS_NOTE = ("MoE above 512 running sequences (vLLM's default largest graph): vLLM 0.26 launches larger steps op by op, which cost "
               "Qwen3-30B-A3B ~70 ms per step on an H200; CUDA graphs to 1,024 gave +22 % requests/s at 1,024 "
               "sequences for 0.55 GiB (data/measurements/h200/vllm-0.26.0/sitting-6)")


ATTENTION_DP_VLLM = ("attention data parallel: vLLM runs it as --data-parallel-size {tp} --enable-expert-parallel with "
                     "TP 1 per rank, which this snippet does not write")


def vllm(c: Launch) -> str:
    notes = [n for n in (_weights_note(c.precision), GRAPHS_NOTE if c.large_moe_graphs else "",
                         ATTENTION_DP_VLLM.format(tp=c.tp) if c.attention_dp else "") if n]
    return "".join(f"# {n}\n" for n in notes) + _fmt(vllm_args(c))


# A serving snippet binds every interface so that clients and load balancers on other machines reach it;
# the note printed with it says so (the calculator itself, `make app`, binds 127.0.0.1 by default).
PUBLIC_HOST_NOTE = "--host 0.0.0.0 serves other machines (clients, a load balancer); use 127.0.0.1 for this one only"


def sglang(c: Launch) -> str:
    cmd = ["python", "-m", "sglang.launch_server", "--model-path", c.model, *engine_args(c, "sglang"),
           "--host", "0.0.0.0", "--port", "30000"]
    # memory fraction, prefill chunk and running-request limit are left to SGLang's own per-GPU defaults,
    # which are what `--engine sglang` models (capacity/engines/sglang.py); the comment says what they are
    limits, table = engine_profile("sglang", c.gpu_memory_bytes, c.tp), capacity_engines.get("sglang").flags
    shown = {"gpu_memory_utilization": f"{limits.gpu_memory_utilization:g}",
             "max_num_batched_tokens": limits.max_num_batched_tokens, "cuda_graph_max_bs": limits.max_cudagraph_tokens}
    defaults = "SGLang's defaults on this GPU: " + ", ".join(f"{table.row(k).flag} {v}" for k, v in shown.items())
    notes = [n for n in (_weights_note(c.precision), defaults, PUBLIC_HOST_NOTE) if n]
    return "".join(f"# {n}\n" for n in notes) + _fmt(cmd)


def trtllm(c: Launch) -> str:
    cmd = ["trtllm-serve", "serve", c.model, "--backend", "pytorch", *engine_args(c, "trtllm"),
           "--host", "0.0.0.0", "--port", "8000"]
    pre = []
    options = (["kv_cache_config:", "  dtype: fp8"] if c.kv_precision == "fp8" else []) + (
        ["enable_attention_dp: true"] if c.attention_dp else [])
    if options:
        pre = ["cat > extra-llm-api.yml <<'EOF'", *options, "EOF", ""]
        cmd += ["--extra_llm_api_options", "extra-llm-api.yml"]
    note = {"fp8": "FP8 weights: TensorRT-LLM loads a pre-quantized FP8 (ModelOpt) checkpoint; point the model at it"}.get(
        c.precision, _weights_note(c.precision))
    head = (f"# {note}\n" if note else "") + f"# {PUBLIC_HOST_NOTE}\n"
    if c.replicas > 1:
        head += (f"# {c.replicas} replicas: start one server per group of {c.gpus_per_replica} GPUs (CUDA_VISIBLE_DEVICES) "
                 "behind a load balancer\n")
    return head + "\n".join(pre) + _fmt(cmd)


def modal_app(c: Launch) -> str:
    gpu, n = MODAL_GPU.get(c.gpu), c.gpus_per_replica
    gpu_line = f'GPU = "{gpu}:{n}"' if gpu else f'GPU = "H200:{n}"  # {c.gpu} is not a Modal GPU type: pick the closest'
    args = vllm_args(Launch(**{**c.__dict__, "num_gpus": n}))[3:]  # one replica per container
    pairs = [args[i:i + 2] for i in range(0, len(args), 2)]
    args_py = "\n        ".join(", ".join(json.dumps(a) for a in pair) + "," for pair in pairs)
    return f'''# serve.py — `modal deploy serve.py`; {c.replicas} replica{"s" if c.replicas > 1 else ""} of {n} GPU{"s" if n > 1 else ""}
import subprocess

import modal

MODEL = {json.dumps(c.model)}
{gpu_line}
MINUTES = 60

image = modal.Image.debian_slim(python_version="3.12").uv_pip_install("vllm", "huggingface_hub[hf_transfer]").env(
    {{"HF_HUB_ENABLE_HF_TRANSFER": "1", "HF_HOME": "/cache/huggingface"}})
hf_cache = modal.Volume.from_name("huggingface-cache", create_if_missing=True)
app = modal.App("llm-capacity-serve")


@app.function(image=image, gpu=GPU, timeout=30 * MINUTES, scaledown_window=15 * MINUTES,
              min_containers={c.replicas}, max_containers={c.replicas},
              volumes={{"/cache/huggingface": hf_cache}},
              secrets=[modal.Secret.from_name("huggingface-secret")])
@modal.concurrent(max_inputs={configuration(c, 'vllm')['max_num_seqs']})
@modal.web_server(port=8000, startup_timeout=20 * MINUTES)
def serve():
    cmd = [
        "vllm", "serve", MODEL,
        {args_py}
        "--host", "0.0.0.0",  # Modal's proxy reaches the server from outside the container
    ]
    subprocess.Popen(cmd)
'''
