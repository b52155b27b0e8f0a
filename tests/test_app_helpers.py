"""The app's pure helpers (appkit): measured-result readers, the explorer's ranking, inputs, launch snippets."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # appkit/ beside app.py (until it is packaged)

from appkit import compute, explorer, inputs, launch, measured  # noqa: E402
from capacity import Scenario, estimate  # noqa: E402
from capacity.errors import ConfigError, DoesNotFitError  # noqa: E402
from capacity.hardware import load_gpu  # noqa: E402
from validate.compare import load_run, summarize  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures"
BENCH = FIXTURES / "vllm-bench-serve-llama8b-c16.json"


SIDEBAR = {"model": "meta-llama/Llama-3.1-8B", "gpu": "h200-sxm", "tp": 1, "precision": "bf16",
           "kv_precision": "bf16", "engine": "vllm"}
RUN_DIR = FIXTURES / "measurements" / "h200-sxm" / "vllm-0.26.0" / "llama-3.1-8b-fp8-1024x128"


def test_vllm_bench_upload_is_read_by_validates_importer():
    from validate.importers import import_file

    runs, errors = measured.runs_from_uploads([("b.json", BENCH.read_bytes())], SIDEBAR)
    assert not errors and len(runs) == 1
    p = runs[0].run.points[0]
    theirs = import_file(BENCH, ["x"])[0][0]  # what `validate import` writes
    assert p == theirs
    raw = json.loads(BENCH.read_text())
    assert p.load == "concurrency:16" and p.median_ttft_s == pytest.approx(raw["median_ttft_ms"] / 1e3)
    assert runs[0].run.scenario["model"] == "meta-llama/Llama-3.1-8B"


def test_parse_upload_classifies_and_leaves_the_rest_to_the_importers():
    assert measured.parse_upload("b.json", BENCH.read_bytes())[0] == "report"
    assert measured.parse_upload("points.jsonl", (RUN_DIR / "points.jsonl").read_bytes())[0] == "points"
    assert measured.parse_upload("run.jsonl", (RUN_DIR / "points.jsonl").read_bytes())[0] == "points"
    assert measured.parse_upload("metadata.json", (RUN_DIR / "metadata.json").read_bytes())[0] == "metadata"
    records = FIXTURES / "aiperf" / "run1" / "profile_export.jsonl"
    assert measured.parse_upload(records.name, records.read_bytes())[0] == "report"  # AIPerf's, not validate's
    for name, data in (("x.json", b"{oops"), ("x.json", b'{"a": 1}'), ("x.json", b"  "), ("x.json", b"\xff\xfe"),
                       ("r.yaml", b"a: 1"), ("rows.jsonl", b"# header\n{}")):
        assert measured.parse_upload(name, data) == ("report", None), name  # validate.importers says why


def test_uploaded_points_and_metadata_read_like_a_results_folder():
    files = [("points.jsonl", (RUN_DIR / "points.jsonl").read_bytes()),
             ("metadata.json", (RUN_DIR / "metadata.json").read_bytes())]
    runs, errors = measured.runs_from_uploads(files, {**SIDEBAR, "gpu": "b200"})
    assert not errors
    assert runs[0].run.scenario == {**load_run(RUN_DIR).scenario}  # the metadata wins over the sidebar
    torn = (RUN_DIR / "points.jsonl").read_bytes().splitlines(keepends=True)[0] + b'{"load": "bu'
    runs, errors = measured.runs_from_uploads([("points.jsonl", torn)], SIDEBAR)
    assert not errors and [p.load for p in runs[0].run.points] == ["sync"]  # a torn last line, as validate skips it


def test_corpus_facts_come_from_validates_reader():
    runs, errors = measured.load_corpus(FIXTURES / "measurements")
    assert not errors and len(runs) == 2
    table = measured.runs_table(runs)
    assert set(table["precision"]) == {"bf16", "fp8"} and set(table["engine"]) == {"vllm"}
    assert set(table["gpu"]) == {"h200-sxm"} and set(table["engine_version"]) == {"0.26.0"}
    assert set(table["shape"]) == {"1,024 → 128"}


def test_empty_or_missing_corpus():
    runs, errors = measured.load_corpus(Path("/nonexistent/measurements"))
    assert runs == [] and errors == []
    assert measured.runs_table([]).empty
    assert explorer.best_configurations(pd.DataFrame(), 1.0).empty


def test_uploads_without_facts_take_the_sidebars():
    runs, errors = measured.runs_from_uploads([("b.json", BENCH.read_bytes())],
                                              {**SIDEBAR, "gpu": "b200", "precision": "fp8", "tp": 2})
    row = measured.runs_table(runs).iloc[0]
    assert (row["gpu"], row["precision"], row["tp"], row["model"]) == ("b200", "fp8", 2, "meta-llama/Llama-3.1-8B")


def test_explorer_ranks_best_first_within_the_objective():
    runs, _ = measured.load_corpus(FIXTURES / "measurements")
    table = measured.runs_table(runs)
    best = explorer.best_configurations(table, ttft_objective_s=1.0, stat="p90")
    assert list(best["precision"]) == ["fp8", "bf16"]
    assert (best["ttft_s"] <= 1.0).all()
    strict = explorer.best_configurations(table, ttft_objective_s=0.05, stat="median")
    assert (strict["ttft_s"] <= 0.05).all()
    assert strict["output_tokens_per_s_per_gpu"].max() < best["output_tokens_per_s_per_gpu"].max()
    # $/M output tokens from the catalog price: $3.59/h on one H200
    r = best.iloc[0]
    assert r["usd_per_million_output_tokens"] == pytest.approx(3.59 / (r["output_tokens_per_s"] * 3600) * 1e6)


def test_app_predictions_are_validate_compares():
    """The Measured tab's numbers for a committed run are `validate compare`'s: same prediction per point (the
    run's own flags and request counts), same statistic (means), same summary."""
    from validate.compare import compare_dirs

    runs, _ = measured.load_corpus(FIXTURES / "measurements")
    table = measured.runs_table(runs)
    s = Scenario()
    mine = table[measured.matches_scenario(table, s, "h200-sxm")]
    assert len(mine) == 6 and set(mine["precision"]) == {"bf16"}
    app = measured.predict_points(runs, mine, s).set_index("load")
    ref = compare_dirs([FIXTURES / "measurements/h200-sxm/vllm-0.26.0/llama-3.1-8b-bf16-1024x128"],
                       {"calibrated": None}).set_index("load")
    assert sorted(app.index) == sorted(ref.index)
    for pk in ("ttft_s", "itl_s", "requests_per_s", "output_tokens_per_s"):
        assert (app[f"pred_{pk}"] == ref.loc[app.index, f"predicted_{pk}"]).all(), pk
        assert (app[pk] == ref.loc[app.index, f"measured_{pk}"]).all(), pk
        assert app[f"err_{pk}_pct"].tolist() == pytest.approx((ref.loc[app.index, f"error_{pk}"] * 100).tolist())
    summary = summarize(ref).iloc[0]
    assert measured.typical_errors(app.reset_index()) == pytest.approx(
        {pk: summary[f"mape_{pk}"] * 100 for pk in ("ttft_s", "itl_s", "requests_per_s", "output_tokens_per_s")})
    assert (app["ttft_s"] == mine.set_index("load").loc[app.index, "mean_ttft_s"]).all()  # means, not medians


def test_only_the_selected_engines_runs_count():
    """The committed Llama-3.1-8B BF16 1024/128 runs on the H200: vLLM's match the default sidebar, the
    `transformers serve` baseline of sitting 4 does not (it is its own engine, from its scenario.json)."""
    runs, _ = measured.load_corpus(Path(__file__).resolve().parent.parent / "data" / "measurements")
    table = measured.runs_table(runs)
    mine = table[measured.matches_scenario(table, Scenario(), "h200-sxm")]
    assert not mine.empty and set(mine["engine"]) == {"vllm"}
    assert "transformers" in set(table["engine"])


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
