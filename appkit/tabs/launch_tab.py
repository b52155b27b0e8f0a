"""Launch tab: commands that start this configuration on vLLM, SGLang, TensorRT-LLM and Modal."""

from __future__ import annotations

import streamlit as st

from appkit import cached, launch as snippets
from appkit.compute import Headline
from appkit.tabs.format import layout_text
from capacity import Scenario
from capacity.model.architecture import catalog_ids
from capacity.engines import engine_profile
from capacity.errors import CapacityError
from capacity.hardware import load_gpu


def launch_tab(s: Scenario, h: Headline, ttft_slo: float, itl_slo: float, target: float) -> None:
    model = s.model if s.model in catalog_ids() else "/path/to/your/model"
    try:
        memory = load_gpu(s.gpu).usable_memory_bytes
    except CapacityError:
        memory = None
    # an MoE whose replica holds more users than vLLM's largest default CUDA graph (sitting 6: graphs to 1,024)
    graph_tokens = engine_profile("vllm", memory, s.tp).max_cudagraph_tokens
    cfg = snippets.Launch(model=model, gpu=s.gpu, num_gpus=s.num_gpus, tp=s.tp, pp=s.pp, attention_dp=s.attention_dp,
                          api_server_count=s.api_server_count, precision=s.precision,
                          kv_precision=s.kv_precision, max_model_len=-(-(s.isl + s.osl) // 1024) * 1024,
                          gpu_memory_bytes=memory,
                          # per batch the engine runs: a replica's, or each of a pipeline's stages'
                          large_moe_graphs=cached.is_moe(s.model)
                          and h.max_concurrent_users > graph_tokens * h.replicas * s.pp)
    st.markdown(f"Commands that start this configuration ({layout_text(s)}, max model length {cfg.max_model_len:,} "
                f"tokens: the request's {s.isl + s.osl:,} rounded up to a multiple of 1,024). "
                "Measure it with `validate sweep` or `vllm bench serve` and upload the result in *Measured vs predicted*.")
    t = st.tabs(["vLLM", "SGLang", "TensorRT-LLM", "Modal"])
    t[0].code(snippets.vllm(cfg), language="bash")
    t[1].code(snippets.sglang(cfg), language="bash")
    t[2].code(snippets.trtllm(cfg), language="bash")
    t[3].code(snippets.modal_app(cfg), language="python")

