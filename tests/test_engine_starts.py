"""vLLM refuses to start when its KV cache cannot hold one request of max_model_len tokens (by default the model's
whole context): the estimate still answers, flags it (`engine_starts`) and says the longest --max-model-len that
would start. The rule lives on the engine object (EngineProfile.refuses_kv_below_max_len_request) and is held
against the committed server logs: sitting 32's refusal on an H100, and every vLLM log that did start."""

import gzip
import json
import re
from pathlib import Path

import pytest

from capacity.cli import main
from capacity.engines import engine_profile, names
from capacity.errors import CapacityError
from capacity.estimate import Scenario, estimate, plan_for
from validate.compare import scenario_from_argv

DATA = Path(__file__).resolve().parents[1] / "data/measurements"
SITTING_32 = DATA / "h100/vllm-0.26.0/sitting-32"
QWEN_H100 = dict(model="Qwen/Qwen3-32B", gpu="h100-sxm", isl=1024, osl=256)
REFUSAL = re.compile(r"ValueError: To serve at least one request with the model's max seq len \((\d+)\), .*?"
                     r"the estimated maximum model length is (\d+)\.")


def _refusal_note(notes: list[str]) -> list[str]:
    return [n for n in notes if "would refuse to start" in n]


def test_qwen3_32b_on_an_h100_would_not_start_at_its_default_max_model_len(capsys):
    """The CLI answers (exit 0) with engine_starts false and one note naming the model's 40,960 tokens and the
    predicted KV capacity, which is also the longest --max-model-len that starts."""
    assert main(["estimate", "--model", "Qwen/Qwen3-32B", "--gpu", "h100-sxm", "--isl", "1024", "--osl", "256",
                 "--load", "concurrency:8", "--json"]) == 0
    e = json.loads(capsys.readouterr().out)
    assert e["engine_starts"] is False
    k = e["kv_capacity_tokens"]
    assert k < 40_960
    assert _refusal_note(e["notes"]) == [
        f"vLLM would refuse to start with max_model_len 40,960 (the model's context, its default): the KV cache "
        f"holds {k:,} tokens; pass --max-model-len ≤ {k:,} (the estimate assumes requests fit)"]


def test_a_max_model_len_that_fits_starts():
    e = estimate(Scenario(**QWEN_H100, load="concurrency:8", max_model_len=32768))
    assert e.engine_starts is True and not _refusal_note(e.notes)
    longest = plan_for(Scenario(**QWEN_H100)).memory.kv_capacity_tokens  # the note's suggestion is tight
    assert plan_for(Scenario(**QWEN_H100, max_model_len=longest)).engine_starts is True


def test_llama_8b_on_an_h200_starts():
    e = estimate(Scenario(model="meta-llama/Llama-3.1-8B", gpu="h200-sxm"))
    assert e.engine_starts is True and not _refusal_note(e.notes)


def test_a_hybrid_model_is_checked_with_its_window_groups():
    """Gemma 3 (sliding-window groups hold window − 1 + in-flight tokens): it refuses when one request of its
    context does not fit in the groups' blocks, i.e. exactly when the printed KV size falls below max_model_len,
    and it starts at the longest length the note suggests."""
    s = Scenario(model="google/gemma-3-27b-it", gpu="h100-sxm", gpu_memory_utilization=0.85)
    p = plan_for(s)
    assert p.memory.kv_capacity_tokens < 131_072 and p.engine_starts is False
    (note,) = _refusal_note(list(p.notes))
    longest = int(re.search(r"holds one request of at most ([\d,]+) tokens", note).group(1).replace(",", ""))
    assert plan_for(s.model_copy(update={"max_model_len": longest})).engine_starts is True
    assert plan_for(s.model_copy(update={"max_model_len": longest + 1})).engine_starts is False


@pytest.mark.parametrize("engine", [n for n in names() if n != "vllm"])
def test_only_vllm_is_known_to_refuse(engine):
    assert engine_profile(engine).refuses_kv_below_max_len_request is False
    assert engine_profile("vllm").refuses_kv_below_max_len_request is True


def test_sitting_32_log_refused_where_the_rule_says():
    """vLLM 0.26.0 on the H100 refused Qwen3-32B at 40,960 tokens, estimating at most 40,864; the model predicts
    less room still, so its verdict is the engine's (this fails if the prediction reaches 40,960). Rerun with
    --max-model-len 32768, it started with 40,864 tokens of KV cache, and the model says it starts."""
    text = gzip.open(SITTING_32 / "Qwen3-32B-bf16-h100-s32/server.log.gz", "rt", errors="replace").read()
    m = REFUSAL.search(text)
    assert m, "the refusal line is in the committed log"
    max_len, measured = int(m.group(1)), int(m.group(2))
    assert (max_len, measured) == (40_960, 40_864)
    p = plan_for(Scenario(**QWEN_H100))
    assert p.memory.kv_capacity_tokens < max_len and measured < max_len
    assert p.engine_starts is False
    rerun = gzip.open(SITTING_32 / "Qwen3-32B-bf16-h100-s32b/server.log.gz", "rt", errors="replace").read()
    assert "GPU KV cache size: 40,864 tokens" in rerun and "'max_model_len': 32768" in rerun
    assert plan_for(Scenario(**QWEN_H100, max_model_len=32768)).engine_starts is True


def test_every_committed_vllm_log_agrees():
    """Each committed vLLM server log, read with its flags: it refused at start-up exactly where the model says
    the engine would not start (sitting 32's), and started everywhere else."""
    seen = {True: 0, False: 0}
    for side in sorted(DATA.glob("*/*/sitting-*/*/scenario.json")):
        log = side.parent / "server.log.gz"
        d = json.loads(side.read_text())
        if not log.is_file() or d.get("engine", "vllm") != "vllm":
            continue
        refused = "To serve at least one request" in gzip.open(log, "rt", errors="replace").read()
        fields = {k: v for k, v in scenario_from_argv(d.get("engine_argv", []), "vllm").items()
                  if k in Scenario.model_fields}
        s = Scenario(**{"model": d["model"], "gpu": d["gpu"], "precision": d.get("precision", "bf16"),
                        "kv_precision": d.get("kv_precision", "bf16"), "isl": 16, "osl": 16, **fields})
        try:
            starts = plan_for(s).engine_starts
        except CapacityError as exc:  # the model refuses outright: only right where the engine did
            starts = False
            assert refused, (side.parent.name, str(exc))
        assert starts is not refused, side.parent
        seen[starts] += 1
    assert seen[False] >= 1 and seen[True] >= 50
