"""The public measured corpus (data/public/): rows validate, rebuild byte-identically from the raw files, cover
enough sources, resolve to catalog models and GPUs, and docs/public-corpus.md + scores.csv are up to date."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from capacity.model.architecture import catalog_ids
from capacity.hardware import gpu_catalog
from validate.public.build import build, load_rows, render
from validate.public.common import RAW_DIR, ROWS_PATH
from validate.public.schema import Row

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    return load_rows(ROWS_PATH)


def test_every_line_validates_against_the_schema():
    lines = [line for line in ROWS_PATH.read_text().splitlines() if line.strip()]
    for line in lines:
        Row.model_validate(json.loads(line))


def test_build_regenerates_rows_byte_identically():
    built, _ = build(RAW_DIR)
    assert render(built) == ROWS_PATH.read_text(), "rows.jsonl is stale: run python -m validate.public.build"


def test_size_and_coverage(rows):
    assert len(rows) >= 300
    assert len({r.source_id for r in rows}) >= 6
    gpus = {r.gpu for r in rows}
    assert {"h100-sxm", "h200-sxm", "mi300x"} <= gpus and gpus & {"b200", "b300", "gb200", "gb300"}
    assert {r.tp for r in rows} >= {1, 2, 4, 8}
    assert any(r.model == "deepseek-ai/DeepSeek-R1" for r in rows)  # MLA
    assert len({r.row_id for r in rows}) == len(rows)


def test_every_model_and_gpu_resolves(rows):
    models, gpus = {m.lower() for m in catalog_ids()}, set(gpu_catalog())
    assert {r.model.lower() for r in rows} <= models
    assert {r.gpu for r in rows} <= gpus


def test_repository_rows_are_pinned(rows):
    for r in rows:
        if "github.com" in r.source_url:
            assert r.source_commit and r.source_commit in r.source_url, r.row_id
        assert (REPO / r.source_path).is_file(), r.row_id


def test_doc_and_scores_are_up_to_date():
    spec = importlib.util.spec_from_file_location("score_public", REPO / "scripts" / "score_public.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("score_public", mod)
    spec.loader.exec_module(mod)
    doc, scores, table, section = mod.generate_all(ROWS_PATH)
    assert doc == (REPO / "docs" / "public-corpus.md").read_text(), "run python scripts/score_public.py"
    assert scores == (REPO / "data" / "public" / "scores.csv").read_text(), "run python scripts/score_public.py"
    readme = (REPO / "README.md").read_text()
    assert mod.with_readme_table(readme, table) == readme, "run python scripts/score_public.py"
    accuracy = (REPO / "docs" / "accuracy.md").read_text()
    assert mod.with_accuracy_section(accuracy, section) == accuracy, "run python scripts/score_public.py"


def test_inferencex_sglang_rows_take_their_launch_scripts_settings(rows):
    """InferenceX's B200/B300 SGLang scripts read new requests every 10 decode steps below 16 clients and every 30
    from 16 on, with their graphs, memory fraction and chunk; its MI355X scripts set no interval. KV precision is
    the scripts' own: fp8_e4m3 on B200/B300 and MI355X from 2026-02-19, SGLang's bf16 default on MI355X before."""
    from validate.public.scenario import scenario_for

    seen = set()
    for r in rows:
        if r.source_kind != "inferencex" or r.engine != "sglang":
            continue
        s, flags = scenario_for(r)
        date = r.published.split("run of ")[1][:10]
        if r.gpu in ("b200", "b300"):
            assert s["recv_interval_steps"] == (30 if r.concurrency >= 16 else 10), r.row_id
            assert (s["max_cudagraph_tokens"], s["max_num_seqs"], s["gpu_memory_utilization"],
                    s["max_num_batched_tokens"]) == (256, 256, 0.85, 16384)
            assert any("InferenceX's SGLang launch settings" in f for f in flags)
            assert r.kv_precision == "fp8"
        else:
            assert "recv_interval_steps" not in s and r.gpu == "mi355x"
            assert r.kv_precision == ("bf16" if date == "2025-10-06" else "fp8"), r.row_id
            assert ("ambiguous" in r.note) == (date == "2025-10-06")
        seen.add((r.gpu, s.get("recv_interval_steps")))
    assert {("b200", 10), ("b200", 30), ("mi355x", None)} <= seen
    assert all(r.kv_precision == "unstated" for r in rows if r.source_kind == "inferencex" and r.engine == "trtllm")


def test_objects_measured_with_the_clients_tokenizer_mismatch_are_left_out(rows):
    """InferenceX's client counted prompts with a broken tokenizer under SGLang 0.5.10's transformers 5 until its fix
    of 2026-05-15 (~5x the nominal input reached the server): those objects are not imported, and build says so."""
    from validate.public.inferencex import TOKENIZER_MISMATCH

    assert not [r for r in rows if r.source_kind == "inferencex" and "v0.5.10" in r.engine_version]
    _, skipped = build()
    assert skipped[f"inferencex-fixture-sample.jsonl: {TOKENIZER_MISMATCH}"] == 9
    assert any(r.gpu == "b200" and "v0.5.9" in r.engine_version for r in rows)  # 0.5.9 pins transformers 4.57.1


def test_inferencex_runs_without_an_image_take_their_workflows_launch(rows):
    """Objects whose API record names no image take the image and parallelism of InferenceX's workflow and launch
    scripts in force on their date: SGLang dev 0.5.2 on MI355X (Triton attention at TP 4: unpriced, scored apart),
    TensorRT-LLM 1.1.0rc2.post2 with EP = TP on H200 and EP 4 with attention DP at 256 clients on B200."""
    from capacity import Scenario
    from capacity.card import engine_unpriced
    from validate.public.scenario import scenario_for

    ix = [r for r in rows if r.source_kind == "inferencex"]
    assert not [r for r in ix if "not recorded" in r.engine_version]
    for r in ix:
        s, _ = scenario_for(r)
        unpriced = engine_unpriced(Scenario(**s), s["engine"])
        if r.gpu == "mi355x":
            old = "2025-10-06" in r.published
            assert ("sgl-dev-v0.5.2" in r.engine_version) == old, r.row_id
            assert ("attention_backend" in s) == (not old) and bool(unpriced) == old, r.row_id
        else:
            assert not unpriced, r.row_id
        if r.engine == "trtllm":
            assert "1.1.0rc2.post2" in r.engine_version
            if r.gpu == "h200-sxm":
                assert (r.ep, r.dp) == (8, 1), r.row_id
            elif r.concurrency == 256:
                assert (r.ep, r.dp) == (4, 4), r.row_id
