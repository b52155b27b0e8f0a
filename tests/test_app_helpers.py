"""The app's pure helpers (appkit): measured-result readers, the explorer's ranking, inputs, launch snippets."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # appkit/ beside app.py (until it is packaged)

from appkit import compute, inputs, launch, measured  # noqa: E402
from capacity import Scenario, estimate  # noqa: E402
from capacity.errors import ConfigError, DoesNotFitError  # noqa: E402
from capacity.hardware import load_gpu  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures"
BENCH = FIXTURES / "vllm-bench-serve-llama8b-c16.json"


def test_vllm_bench_json_becomes_one_point_in_seconds():
    raw = json.loads(BENCH.read_text())
    run = measured.from_vllm_bench(raw)
    p = run.points.iloc[0]
    assert p["load"] == "concurrency:16"
    assert p["median_ttft_s"] == pytest.approx(raw["median_ttft_ms"] / 1e3)
    assert p["p99_itl_s"] == pytest.approx(raw["p99_itl_ms"] / 1e3)
    assert p["requests_per_s"] == raw["request_throughput"]
    assert p["output_tokens_per_s"] == raw["output_throughput"]
    assert (p["isl"], p["osl"]) == (1024, 128)
    assert run.meta["model_id"] == "meta-llama/Llama-3.1-8B"


@pytest.mark.parametrize("extra, load", [({"max_concurrency": None, "request_rate": 4.5}, "rate:4.5"),
                                         ({"max_concurrency": None, "request_rate": "inf"}, "burst:200")])
def test_vllm_bench_load_kinds(extra, load):
    raw = {**json.loads(BENCH.read_text()), **extra}
    assert measured.from_vllm_bench(raw).points.iloc[0]["load"] == load


def test_parse_upload_classifies_and_rejects():
    kind, obj = measured.parse_upload("b.json", BENCH.read_bytes())
    assert kind == "run"  # through validate.importers, the same reading as `validate import`
    ours = measured.from_vllm_bench(json.loads(BENCH.read_bytes())).points.iloc[0]
    theirs = obj.points.iloc[0]
    for col in ("load", "requests_per_s", "output_tokens_per_s", "median_ttft_s", "median_itl_s", "isl", "osl"):
        assert theirs[col] == pytest.approx(ours[col]) if col != "load" else theirs[col] == ours[col], col
    run_dir = FIXTURES / "measurements" / "h200-sxm" / "vllm-0.26.0" / "llama-3.1-8b-fp8-1024x128"
    assert measured.parse_upload("points.jsonl", (run_dir / "points.jsonl").read_bytes())[0] == "points"
    assert measured.parse_upload("metadata.json", (run_dir / "metadata.json").read_bytes())[0] == "metadata"
    with pytest.raises(measured.MeasuredError, match="not valid JSON"):
        measured.parse_upload("x.json", b"{oops")
    with pytest.raises(measured.MeasuredError, match="neither"):
        measured.parse_upload("x.json", b'{"a": 1}')
    with pytest.raises(measured.MeasuredError, match="empty"):
        measured.parse_upload("x.json", b"  ")


def test_torn_last_line_is_skipped_like_validate_does():
    text = '{"load": "sync", "requests_per_s": 1, "output_tokens_per_s": 2, "total_tokens_per_s": 3}\n{"load": "bu'
    df = measured.parse_points_jsonl(text)
    assert list(df["load"]) == ["sync"]


def test_corpus_facts_come_from_metadata_and_path():
    runs, errors = measured.load_corpus(FIXTURES / "measurements")
    assert not errors and len(runs) == 2
    table = measured.runs_table(runs, "project")
    assert set(table["precision"]) == {"bf16", "fp8"}
    assert set(table["gpu"]) == {"h200-sxm"} and set(table["engine_version"]) == {"0.26.0"}
    assert set(table["shape"]) == {"1,024 → 128"}


def test_empty_or_missing_corpus():
    runs, errors = measured.load_corpus(Path("/nonexistent/measurements"))
    assert runs == [] and errors == []
    assert measured.runs_table([], "project").empty
    assert measured.best_configurations(pd.DataFrame(), 1.0).empty


def test_uploads_without_facts_take_the_defaults():
    runs, errors = measured.runs_from_uploads([("b.json", BENCH.read_bytes())])
    table = measured.runs_table(runs, "uploaded", {"gpu": "b200", "precision": "fp8", "tp": 2, "num_gpus": 2})
    row = table.iloc[0]
    assert (row["gpu"], row["precision"], row["tp"], row["model"]) == ("b200", "fp8", 2, "meta-llama/Llama-3.1-8B")


def test_explorer_ranks_best_first_within_the_objective():
    runs, _ = measured.load_corpus(FIXTURES / "measurements")
    table = measured.runs_table(runs, "project")
    best = measured.best_configurations(table, ttft_objective_s=1.0, stat="p90")
    assert list(best["precision"]) == ["fp8", "bf16"]
    assert (best["ttft_s"] <= 1.0).all()
    strict = measured.best_configurations(table, ttft_objective_s=0.05, stat="median")
    assert (strict["ttft_s"] <= 0.05).all()
    assert strict["output_tokens_per_s_per_gpu"].max() < best["output_tokens_per_s_per_gpu"].max()
    # $/M output tokens from the catalog price: $3.59/h on one H200
    r = best.iloc[0]
    assert r["usd_per_million_output_tokens"] == pytest.approx(3.59 / (r["output_tokens_per_s"] * 3600) * 1e6)


def test_predictions_beside_measurements_use_estimate():
    runs, _ = measured.load_corpus(FIXTURES / "measurements")
    table = measured.runs_table(runs, "project")
    s = Scenario()
    mine = table[measured.matches_scenario(table, s, "h200-sxm")]
    assert len(mine) == 6 and set(mine["precision"]) == {"bf16"}
    pred = measured.predict_points(mine, s)
    row = pred[pred["load"] == "concurrency:32"].iloc[0]
    assert row["pred_requests_per_s"] == pytest.approx(estimate(Scenario(load="concurrency:32")).requests_per_s)
    assert row["err_requests_per_s_pct"] == pytest.approx((row["pred_requests_per_s"] / row["requests_per_s"] - 1) * 100)


def test_uploaded_config_is_stored_by_content_and_checked():
    path, arch = inputs.uploaded_config("config.json", (Path(__file__).parent / "assets/tiny-llama/config.json").read_bytes())
    assert Path(path).is_file() and arch.architecture == "LlamaForCausalLM"
    with pytest.raises(ConfigError, match="not valid JSON"):
        inputs.uploaded_config("config.json", b"{")
    with pytest.raises(ConfigError, match="lacks required field"):
        inputs.uploaded_config("config.json", b'{"hidden_size": 8}')
    with pytest.raises(ConfigError, match="unsupported"):  # MoE without an expert width: caught, not a TypeError
        inputs.uploaded_config("config.json", json.dumps({"num_hidden_layers": 2, "hidden_size": 64, "vocab_size": 10,
                                                          "num_attention_heads": 4, "num_local_experts": 8}).encode())


def test_custom_gpu_round_trips_through_the_catalog_parser():
    path, gpu = inputs.custom_gpu("My GPU", 100, 5, 1000, 2000, 0, 450, 8, 2.5)
    assert load_gpu(path) == gpu
    assert gpu.usable_memory_bytes == 100e9 and gpu.memory_bandwidth_bytes_per_s == 5e12
    assert gpu.dense_flops_per_s.fp8 == 2000e12 and gpu.dense_flops_per_s.fp4 is None
    assert gpu.price_usd_per_gpu_hour == 2.5
    with pytest.raises(ConfigError, match="positive"):
        inputs.custom_gpu("x", 0, 5, 1000, 0, 0, 450, 8, None)


def test_memory_breakdown_adds_up_to_usable_memory():
    mem = compute.memory_breakdown(Scenario())
    gpu = load_gpu("h200-sxm")
    assert mem["bytes"].sum() == pytest.approx(gpu.usable_memory_bytes)
    e = estimate(Scenario())
    kv = mem.set_index("part").loc["KV cache", "bytes"]
    assert kv == pytest.approx(e.kv_cache_bytes_per_gpu)


def test_headline_raises_the_model_errors():
    with pytest.raises(DoesNotFitError):
        compute.headline(Scenario(model="meta-llama/Llama-3.1-405B", gpu="h100-sxm"), 1.0, 0.05, 1.0)


def test_compare_covers_every_gpu_and_precision():
    df = compute.compare(Scenario(), ["h100-sxm", "b200", "l4"], ["bf16", "fp4"], 1.0, 0.05, 10.0)
    assert len(df) == 6
    l4 = df[(df["gpu"] == "l4") & (df["precision"] == "bf16")].iloc[0]
    assert l4["fits"] in (True, False)
    b200 = df[df["gpu"] == "b200"].set_index("precision")
    assert b200.loc["fp4", "weight_format"] == "nvfp4"
    assert b200.loc["fp4", "output_tokens_per_s_per_gpu"] > b200.loc["bf16", "output_tokens_per_s_per_gpu"]


def test_launch_snippets():
    c = launch.Launch(model="meta-llama/Llama-3.1-8B", gpu="h200-sxm", num_gpus=4, tp=2, precision="fp8",
                      kv_precision="fp8", max_model_len=2048)
    v = launch.vllm(c)
    for part in ("vllm serve meta-llama/Llama-3.1-8B", "--tensor-parallel-size 2", "--data-parallel-size 2",
                 "--quantization fp8", "--kv-cache-dtype fp8", "--max-model-len 2048"):
        assert part in v
    s = launch.sglang(c)
    assert "--tp-size 2" in s and "--dp-size 2" in s and "--kv-cache-dtype fp8_e4m3" in s
    t = launch.trtllm(c)
    assert "--tp_size 2" in t and "kv_cache_config:" in t and "2 replicas" in t
    m = launch.modal_app(c)
    compile(m, "serve.py", "exec")  # valid Python
    assert 'GPU = "H200:2"' in m and "min_containers=2" in m and '"--tensor-parallel-size", "2"' in m
    assert "--data-parallel-size" not in m  # one replica per container
    assert "not a Modal GPU type" in launch.modal_app(launch.Launch(**{**c.__dict__, "gpu": "mi300x"}))
    assert "--max-cudagraph-capture-size" not in v
    moe = launch.vllm(launch.Launch(**{**c.__dict__, "model": "Qwen/Qwen3-30B-A3B", "large_moe_graphs": True}))
    assert "--max-cudagraph-capture-size 1024" in moe and "# MoE above 512 running sequences" in moe
