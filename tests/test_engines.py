"""Engine objects (capacity/engines/): per-GPU limits computed, memory rules, one flag table read both ways, and a
new engine added by one file per half."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

import capacity.engines as capacity_engines
import validate.engines as validate_engines
from capacity import Scenario, estimate
from capacity.engine import IDEAL, PROFILES, SGLANG, VLLM, engine_profile, sglang_defaults
from capacity.engines.base import EngineProfile
from capacity.errors import WorkloadError
from capacity.hardware import load_gpu
from validate.compare import scenario_from_argv
from validate.engines.config import EngineConfig

H200 = load_gpu("h200-sxm").usable_memory_bytes
GiB = 2**30


def test_every_engine_has_an_object_and_the_old_names_still_work():
    assert capacity_engines.names()[0] == "vllm"
    assert set(capacity_engines.names()) == {"vllm", "sglang", "trtllm", "transformers", "ideal"}
    assert set(PROFILES) == set(capacity_engines.names())
    assert VLLM == engine_profile("vllm") and IDEAL.name == "ideal"
    with pytest.raises(WorkloadError, match="unknown engine 'tgi'"):
        engine_profile("tgi")


def test_sglang_profile_is_computed_by_its_own_rule():
    """The SGLANG profile is sglang_defaults on the H200 (it used to repeat 0.903, 8,192 and 256 as literals)."""
    assert sglang_defaults(H200) == {"gpu_memory_utilization": 0.903, "max_num_batched_tokens": 8192,
                                     "max_cudagraph_tokens": 256}
    assert (SGLANG.gpu_memory_utilization, SGLANG.max_num_batched_tokens, SGLANG.max_cudagraph_tokens) == (0.903, 8192, 256)
    small = engine_profile("sglang", 24e9, 1)  # an L4-sized GPU: another tier
    assert (small.max_num_batched_tokens, small.max_cudagraph_tokens) == (2048, 24)


def test_memory_rules_per_engine():
    """vLLM and SGLang: fraction × total − the rest; TensorRT-LLM: fraction × (what the weights leave free);
    ideal: everything after the weights."""
    usable, weights = 140 * GiB, 15 * GiB
    vllm = engine_profile("vllm")
    assert vllm.kv_cache_bytes(usable, weights, 1 * GiB, 0) == pytest.approx(
        140 * GiB * 0.92 - 15 * GiB - 1 * GiB - 0.22 * GiB)
    trt = engine_profile("trtllm")
    assert trt.memory_fraction_of == "free_after_weights"
    assert trt.kv_cache_bytes(usable, weights, 0, 0) == pytest.approx(0.9 * (140 - 15) * GiB)
    assert engine_profile("ideal").kv_cache_bytes(usable, weights, 0, 0) == 125 * GiB


def test_one_table_both_ways():
    """What a table writes, it reads back as the same Scenario fields."""
    config = {"tp": 2, "precision": "fp8", "kv_precision": "fp8", "max_model_len": 4096, "max_num_seqs": 64,
              "max_num_batched_tokens": 2048, "gpu_memory_utilization": 0.8, "max_cudagraph_tokens": 1024}
    for name in ("vllm", "sglang", "trtllm"):
        table = capacity_engines.get(name).flags
        back = table.scenario(table.argv(table.options_for(config)))
        written = {k: v for k, v in config.items() if k in back}
        assert back == {**written, "num_gpus": 2}, name
    # the same field is a different flag, in different units, per engine
    assert capacity_engines.get("vllm").flags.row("max_cudagraph_capture_size").meaning.endswith("TOKENS per step")
    assert "SEQUENCES" in capacity_engines.get("sglang").flags.row("cuda_graph_max_bs").meaning
    assert "TOTAL" in capacity_engines.get("vllm").flags.row("gpu_memory_utilization").meaning
    assert "FREE" in capacity_engines.get("sglang").flags.row("gpu_memory_utilization").meaning


def test_vllm_graphs_follow_its_sequence_limit():
    """vLLM captures graphs up to min(2 × max_num_seqs, 512) tokens unless told otherwise."""
    assert engine_profile("vllm").max_cudagraph_tokens == 512
    assert engine_profile("vllm", max_num_seqs=128).max_cudagraph_tokens == 256
    assert engine_profile("vllm", max_num_seqs=128, max_cudagraph_tokens=1024).max_cudagraph_tokens == 1024


def test_sglang_prefill_graphs_reach_its_chunk_decode_graphs_256_sequences():
    """SGLang 0.5.17 replays prefill graphs up to its chunk (its start-up log captures 4 … 8,192 tokens) and decode
    graphs up to 256 sequences: a lone 4,096-token prompt pays no op-by-op launch there and does on vLLM at default
    graphs; a decode step of 300 sequences pays it on SGLang. --disable-cuda-graph turns both off."""
    from capacity import plan_for
    from capacity.calibration import shipped_calibrations
    from capacity.model.steptime import step_parts

    def launch_s(engine: str, decode: float, prefill: float, **kw) -> float:
        plan = plan_for(Scenario(model="Qwen/Qwen3-30B-A3B", gpu="h200-sxm", engine=engine, isl=4096, osl=16, **kw))
        eff = shipped_calibrations()[(engine, "h200-sxm", "bf16")].efficiency
        return float(step_parts(plan.costs, eff, decode, 4096.0, prefill, 2048.0 * 48).launch_s)

    prof = engine_profile("sglang", H200)
    assert (prof.max_cudagraph_tokens, prof.max_prefill_graph_tokens) == (256, 8192)
    assert engine_profile("sglang", H200, max_cudagraph_tokens=0).max_prefill_graph_tokens == 0
    assert engine_profile("vllm").max_prefill_graph_tokens is None  # one graph limit for every step
    assert launch_s("sglang", 0, 4096) == 0 < launch_s("vllm", 0, 4096)
    assert launch_s("sglang", 300, 0) > 0 == launch_s("sglang", 200, 0)
    assert launch_s("sglang", 0, 4096, max_cudagraph_tokens=0) > 0


def test_eager_reads_as_no_graphs():
    assert scenario_from_argv(["vllm", "serve", "m", "--enforce-eager"]) == {"max_cudagraph_tokens": 0}
    table = capacity_engines.get("vllm").flags
    assert table.argv(table.options_for({"max_cudagraph_tokens": 0})) == ["--enforce-eager"]


def test_speculative_config_reads_the_draft():
    """n-gram drafts cost no GPU step; a draft_model method names its draft, by id or by a campaign's folder named
    like the catalog file; a draft_model without a model is a one-line error naming the flag."""
    spec = '{"method": "%s", "num_speculative_tokens": 4%s}'
    read = lambda method, more="": scenario_from_argv(["vllm", "serve", "m", "--speculative-config", spec % (method, more)])
    assert read("ngram") == {"spec_draft_tokens": 4, "spec_draft_cost": 0.0}
    for where in ("Qwen/Qwen3-0.6B", "/tmp/models/Qwen--Qwen3-0.6B", "/tmp/models/Qwen--Qwen3-0.6B/"):
        assert read("draft_model", f', "model": "{where}"') == {"spec_draft_tokens": 4, "spec_draft_model": "Qwen/Qwen3-0.6B"}
    assert read("draft_model", ', "model": "/x/config.json"')["spec_draft_model"] == "/x/config.json"
    with pytest.raises(ValueError, match="draft_model method needs"):
        read("draft_model")


def test_synthetic_acceptance_is_read_as_the_acceptance():
    """vLLM's synthetic rejection sampling sets the acceptance: a mean of L tokens per verification step is the
    per-token acceptance whose geometric tokens per step is L; rates sum to L - 1; a length outside [1, k+1] is refused."""
    from capacity.loadmodel.workload import spec_tokens_per_step

    spec = '{"method": "ngram", "num_speculative_tokens": 4, "rejection_sample_method": "synthetic", %s}'
    read = lambda more: scenario_from_argv(["vllm", "serve", "m", "--speculative-config", spec % more])
    for length in (1.5, 3.0, 4.6):
        a = read(f'"synthetic_acceptance_length": {length}')["spec_acceptance"]
        assert spec_tokens_per_step(a, 4) == pytest.approx(length, rel=1e-6)
    a = read('"synthetic_acceptance_rates": [0.6, 0.3, 0.1, 0.0]')["spec_acceptance"]
    assert spec_tokens_per_step(a, 4) == pytest.approx(2.0, rel=1e-6)
    for bad in ('"synthetic_acceptance_length": 6', '"synthetic_acceptance_rates": [0.5]', '"nothing": 1'):
        with pytest.raises(ValueError, match="synthetic_acceptance"):
            read(bad)


TOY_MODEL = '''
    """A toy engine for the test: a fixed profile and one flag."""
    from capacity.engines.base import Engine, EngineProfile, Flag, FlagTable
    from capacity.engines.flags import limit

    PROFILE = EngineProfile(name="toy", gpu_memory_utilization=0.5, max_num_batched_tokens=512, max_num_seqs=3,
                            block_size_tokens=16, non_torch_bytes=0.0, cuda_graph_bytes=0.0,
                            activation_bytes_per_token=0.0, sampler_copies=0.0, moe_activation_factor=0.0)
    FLAGS = FlagTable((Flag("max_num_seqs", "--toy-seqs", "running requests at most",
                            read=limit("max_num_seqs", int), write=lambda s: s.get("max_num_seqs")),))
    ENGINE = Engine(name="toy", title="Toy", flags=FLAGS, limits=lambda memory, tp, overrides: PROFILE)
'''
TOY_PROCESS = '''
    from validate.engines.config import EngineCommand, EngineFacts, engine_flags


    def build_command(config, workdir=None):
        return EngineCommand(argv=["toy-serve", config.model_dir, *engine_flags("toy", config)],
                             served_model_name=config.served_model_name)


    def parse_facts(log_text):
        return EngineFacts(engine="toy")
'''


@pytest.fixture
def toy_engine(tmp_path, monkeypatch):
    """capacity/engines/toy.py and validate/engines/toy.py, each in a folder added to its package's path."""
    for package, text in ((capacity_engines, TOY_MODEL), (validate_engines, TOY_PROCESS)):
        folder = tmp_path / package.__name__.replace(".", "_")
        folder.mkdir()
        (folder / "toy.py").write_text(textwrap.dedent(text))
        monkeypatch.setattr(package, "__path__", [*package.__path__, str(folder)])
    yield
    for name in ("capacity.engines.toy", "validate.engines.toy"):
        sys.modules.pop(name, None)


def test_a_toy_engine_is_one_file_per_half(toy_engine, tmp_path):
    assert "toy" in capacity_engines.names() and "toy" in validate_engines.engine_names()
    # the model half: its limits and memory rule reach the estimate
    e = estimate(Scenario(engine="toy", load="concurrency:32"))
    assert e.engine == "toy"
    full = estimate(Scenario(engine="toy", load="concurrency:32", max_num_seqs=64))
    assert e.requests_per_s < full.requests_per_s  # 3 sequences at most, unless the flag says otherwise
    # the process half builds its command from the same table, and compare reads the command back
    command = validate_engines.build_command("toy", EngineConfig(model_dir="/m", served_model_name="m",
                                                                 max_num_seqs=64), tmp_path)
    assert command.argv == ["toy-serve", "/m", "--toy-seqs", "64"]
    assert scenario_from_argv(command.argv, "toy") == {"max_num_seqs": 64}
    assert validate_engines.parse_facts("toy", "").engine == "toy"
    assert validate_engines.dialect("toy") == "openai"


def test_engine_profiles_are_frozen():
    with pytest.raises(Exception):
        VLLM.max_num_seqs = 1  # type: ignore[misc]
    assert isinstance(VLLM, EngineProfile)


DOC_ROWS = {"dtype": "dtype", "quantization": "quantization", "KV dtype": "kv_cache_dtype", "TP": "tensor_parallel_size",
            "max length": "max_model_len", "memory fraction": "gpu_memory_utilization", "max sequences": "max_num_seqs",
            "largest CUDA graph": {"vllm": "max_cudagraph_capture_size", "sglang": "cuda_graph_max_bs"},
            "receive interval": "scheduler_recv_interval"}
DOC_ENGINES = ("vllm", "sglang", "trtllm", "transformers")  # the columns of docs/validate.md's engine table


def test_validate_docs_engine_table_is_the_flag_tables():
    """docs/validate.md's option table says what the flag tables do: the same flag per engine, and 'refused'
    where an engine's table has no such option."""
    doc = (Path(__file__).resolve().parent.parent / "docs" / "validate.md").read_text()
    checked = 0
    for line in doc.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or cells[0] not in DOC_ROWS:
            continue
        for engine, cell in zip(DOC_ENGINES, cells[1:]):
            option = DOC_ROWS[cells[0]]
            option = option.get(engine) if isinstance(option, dict) else option
            table = capacity_engines.get(engine).flags
            if cell.startswith("`--"):
                assert option and table.row(option).flag == cell.split("`")[1], (cells[0], engine)
                checked += 1
            elif "refused" in cell:
                assert option not in table.options, (cells[0], engine)
                checked += 1
    assert checked >= 25


def test_a_host_bound_decode_says_how_far_the_host_moves_it():
    """Host-bound decode (vLLM, 256 clients of an 8B model) quotes the server-to-server spread card.json holds (built
    from the measurements: sittings 4, 25, 26 at 256 clients); a GPU-bound one, or another engine, does not."""
    from capacity.card import host_bound_decode

    spread = host_bound_decode()
    lo, hi = spread["itl_s"]
    assert spread["points"] >= 5 and 0 < lo < hi < 2 * lo

    def note(**kw) -> str:
        est = estimate(Scenario(model="meta-llama/Llama-3.1-8B", gpu="h200-sxm", isl=128, osl=128, **kw))
        return next((n for n in est.notes if n.startswith("decode is host-bound")), "")

    assert f"{lo * 1e3:.1f} to {hi * 1e3:.1f} ms per token" in note(load="concurrency:256")
    assert note(load="sync") == ""  # one sequence: the GPU step is longer than the host's
    assert "ms per token" not in note(load="concurrency:256", engine="trtllm")


def test_an_eager_moe_prompt_says_how_far_to_trust_its_ttft():
    """A MoE prompt chunk above the engine's largest graph (vLLM at default graphs, 1,024 tokens) is launched op by op,
    and the servers measured here spread on that step: the estimate quotes the spread card.json holds (built from the
    measurements). Graphed (SGLang's prefill graphs, or a short prompt) or dense, it does not."""
    from capacity.card import eager_moe_prompt

    def noted(**kw) -> bool:
        est = estimate(Scenario(gpu="h200-sxm", osl=128, load="sync", **kw))
        return any("least predictable part of TTFT" in n for n in est.notes)

    assert noted(model="Qwen/Qwen3-30B-A3B", isl=1024)
    spread = eager_moe_prompt()
    lo, hi = spread["eager_ttft_s"]
    assert spread["eager_points"] >= 3 and 0 < spread["graphed_ttft_s"] < lo < hi
    note = next(n for n in estimate(Scenario(model="Qwen/Qwen3-30B-A3B", gpu="h200-sxm", isl=1024, osl=128,
                                             load="sync")).notes if "least predictable" in n)
    assert f"{lo * 1e3:.0f} to {hi * 1e3:.0f} ms" in note
    assert not noted(model="Qwen/Qwen3-30B-A3B", isl=1024, engine="sglang")
    assert not noted(model="Qwen/Qwen3-30B-A3B", isl=256)
    assert not noted(model="Qwen/Qwen3-30B-A3B", isl=1024, max_cudagraph_tokens=2048)
    assert not noted(model="meta-llama/Llama-3.1-8B", isl=1024)
    assert not noted(model="Qwen/Qwen3-30B-A3B", isl=1024, engine="trtllm")  # measured on vLLM only


def test_sglang_runs_mla_prompts_and_rocm_prompts_without_prefill_graphs():
    """SGLang 0.5.17's prefill graphs are off for MLA models and on ROCm (its server_args.py): those prompts pay
    the op-by-op launch, other models' prompts on NVIDIA GPUs replay graphs up to the chunk."""
    from capacity.estimate import Scenario, plan_for

    def limit(model, gpu, **kw):
        plan = plan_for(Scenario(model=model, gpu=gpu, engine="sglang", **kw))
        return plan.costs.prefill_graph_limit, [n for n in plan.notes if "without CUDA graphs" in n]

    graphed, notes = limit("meta-llama/Llama-3.1-8B", "h200-sxm")
    assert graphed >= 8192 and not notes
    assert limit("deepseek-ai/DeepSeek-V2-Lite", "h200-sxm")[0] == 0
    eager, notes = limit("meta-llama/Llama-3.1-8B", "mi300x")
    assert eager == 0 and "AMD" in notes[0]
    # vLLM keeps its one graph limit for every model
    assert plan_for(Scenario(model="deepseek-ai/DeepSeek-V2-Lite", engine="vllm")).costs.prefill_graph_limit > 0


def test_tensorrt_llm_graphs_decode_only_and_prices_no_vllm_launches():
    """TensorRT-LLM graphs decode-only steps up to 128 requests by default; its op-by-op steps are not priced with
    vLLM's measured eager costs (a DeepSeek-R1 step would be floored at ~130 ms by them)."""
    from capacity import plan_for
    from capacity.calibration import find_calibration
    from capacity.model.steptime import step_parts

    p = capacity_engines.engine_profile("trtllm")
    assert (p.max_cudagraph_tokens, p.max_prefill_graph_tokens, p.op_by_op_priced) == (128, 0, False)
    s = Scenario(model="deepseek-ai/DeepSeek-R1", gpu="b200", num_gpus=8, tp=8, expert_parallel=True,
                 precision="nvfp4", kv_precision="fp8", engine="trtllm", isl=1024, osl=1024)
    trt = plan_for(s)
    assert any("taken as hidden under the GPU step" in n for n in trt.notes)
    eff = find_calibration("vllm", "h200-sxm", "bf16").efficiency
    for d, pre in ((512, 0.0), (256, 1024.0)):  # decode beyond the graphs, a mixed step
        assert float(step_parts(trt.costs, eff, d, 1500.0, pre, 512.0).launch_s) == 0.0
    vllm = plan_for(s.model_copy(update={"engine": "vllm", "max_cudagraph_tokens": 0}))  # the same layers, eager
    assert float(step_parts(vllm.costs, eff, 512, 1500.0, 0.0, 0.0).launch_s) > 0.05


def test_sglang_attention_on_rocm_follows_its_head_rule_and_triton_is_unpriced():
    """SGLang picks aiter attention on ROCm only at 16 or 128 heads per GPU (its server_args.py), Triton otherwise;
    the model prices aiter's, so Triton on ROCm is an unsupported feature of the answer; the flag picks either."""
    from capacity.engines.sglang import attention_backend

    assert attention_backend(None, "AMD", 128, 4) == "triton"  # DeepSeek-R1 at TP 4: 32 heads per GPU
    assert attention_backend(None, "AMD", 128, 8) == "aiter"
    assert attention_backend("aiter", "AMD", 128, 4) == "aiter"
    assert attention_backend(None, "NVIDIA", 128, 4) == "default"
    sglang = capacity_engines.get("sglang")
    assert sglang.flags.scenario(["--attention-backend", "aiter"]) == {"attention_backend": "aiter"}
    assert sglang.flags.sets("attention_backend", "triton")
    base = dict(model="deepseek-ai/DeepSeek-R1", gpu="mi355x", num_gpus=4, tp=4, precision="mxfp4", engine="sglang",
                isl=1024, osl=1024, load="concurrency:8")
    triton, aiter = estimate(Scenario(**base)), estimate(Scenario(**base, attention_backend="aiter"))
    assert triton.card.domain == "unsupported-feature"
    assert any("triton attention on ROCm" in r for r in triton.card.reasons)
    assert aiter.card.domain != "unsupported-feature"
    assert estimate(Scenario(**{**base, "gpu": "b200", "precision": "nvfp4"})).card.domain != "unsupported-feature"
    with pytest.raises(WorkloadError, match="attention_backend"):  # a knob only SGLang's flags set
        estimate(Scenario(**{**base, "engine": "vllm", "attention_backend": "aiter"}))
