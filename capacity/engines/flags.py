"""Readers shared by the engines' flag tables: flag text -> Scenario fields."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def precision_from_quantization(text: str) -> dict[str, Any]:
    """--quantization fp8 / fp8_e4m3 / ... -> precision fp8; other formats keep their name."""
    return {"precision": "fp8" if text.startswith("fp8") else text}


def precision_fp8(scenario: dict[str, Any]) -> str | None:
    """The quantization flag for a Scenario: fp8 is quantized on the fly; bf16 needs none; fp4/int4 need a
    checkpoint in that format (the snippets say so), so no flag is written for them either."""
    return "fp8" if scenario.get("precision") == "fp8" else None


def kv_fp8(text: str) -> dict[str, Any]:
    """--kv-cache-dtype fp8* -> kv_precision fp8; anything else (auto, bfloat16) -> bf16."""
    return {"kv_precision": "fp8" if text.startswith("fp8") else "bf16"}


def tensor_parallel(text: str) -> dict[str, Any]:
    """One replica over `tp` GPUs."""
    return {"tp": int(text), "num_gpus": int(text)}


def pipeline_parallel(text: str) -> dict[str, Any]:
    """Pipeline stages of `tp` GPUs each (FlagTable.scenario makes num_gpus tp × pp)."""
    return {"pp": int(text)}


def pipeline_stages(scenario: dict[str, Any]) -> int | None:
    """The pipeline flag's value for a Scenario: written only for more than one stage."""
    return scenario.get("pp") if (scenario.get("pp") or 1) > 1 else None


def data_parallel(text: str) -> dict[str, Any]:
    """Replicas behind one server: not a Scenario field (compare predicts one replica), read for the GPU count."""
    return {"data_parallel_size": int(text)}


def expert_parallel_switch(_text: str) -> dict[str, Any]:
    return {"expert_parallel": True}


def attention_dp_switch(_text: str) -> dict[str, Any]:
    return {"attention_dp": True}


def expert_parallel_size(text: str) -> dict[str, Any]:
    """An expert-parallel size above 1 shards the experts."""
    return {"expert_parallel": True} if int(text) > 1 else {}


def graphs_off(_text: str) -> dict[str, Any]:
    """No CUDA graphs (eager): every step is launched op by op."""
    return {"max_cudagraph_tokens": 0}


def graphs_to(text: str) -> dict[str, Any]:
    return {"max_cudagraph_tokens": int(text)}


def draft_model_id(value: str) -> str:
    """The catalog id of a draft model named by id or by a folder named like a catalog file (a campaign prepares
    `Qwen--Qwen3-0.6B/` for `Qwen/Qwen3-0.6B`); anything else is kept as given (a config.json path)."""
    import importlib.resources

    from capacity import model_configs

    last = value.rstrip("/").rsplit("/", 1)[-1]
    stem = last if model_configs.SEPARATOR in last else model_configs.file_stem(value)
    try:
        known = importlib.resources.files("capacity.model_configs").joinpath(f"{stem}.json").is_file()
    except (ModuleNotFoundError, OSError, ValueError):
        known = False
    return model_configs.model_id(stem) if known else value


def speculative_config(text: str) -> dict[str, Any]:
    """vLLM's --speculative-config JSON: the drafts per step and, for `draft_model`, the draft model. Acceptance is
    not a flag (it is measured, from the engine's counters); an n-gram (prompt lookup) draft costs no GPU step."""
    import json

    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"not JSON: {err.msg}") from None
    if not isinstance(cfg, dict):
        raise ValueError("expected a JSON object")
    k = cfg.get("num_speculative_tokens")
    if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k <= 64:
        raise ValueError("num_speculative_tokens: expected an integer 0..64")
    out: dict[str, Any] = {"spec_draft_tokens": k}
    if cfg.get("rejection_sample_method") == "synthetic":  # vLLM's benchmarking mode: acceptance set, not measured
        out["spec_acceptance"] = synthetic_acceptance(cfg, k)
    if cfg.get("method") == "ngram":
        out["spec_draft_cost"] = 0.0
    elif cfg.get("method") == "draft_model":
        if not isinstance(cfg.get("model"), str) or not cfg["model"]:
            raise ValueError("model: a draft_model method needs the draft model's id or folder")
        out["spec_draft_model"] = draft_model_id(cfg["model"])
    return out


def synthetic_acceptance(cfg: dict[str, Any], draft_tokens: int) -> float:
    """The per-token acceptance of vLLM's synthetic rejection sampling (`rejection_sample_method: synthetic`), which
    accepts drafts at set rates whatever the weights: from `synthetic_acceptance_length` (mean tokens per verification
    step) or from `synthetic_acceptance_rates` (the unconditional chance that the first i+1 drafts are all accepted,
    whose sum is the mean accepted drafts)."""
    from capacity.loadmodel.workload import spec_acceptance_for

    length, rates = cfg.get("synthetic_acceptance_length"), cfg.get("synthetic_acceptance_rates")
    if rates is not None:
        if (not isinstance(rates, list) or len(rates) != draft_tokens
                or not all(isinstance(r, (int, float)) and not isinstance(r, bool) and 0 <= r <= 1 for r in rates)):
            raise ValueError(f"synthetic_acceptance_rates: expected {draft_tokens} numbers in [0, 1]")
        length = 1.0 + float(sum(rates))
    if isinstance(length, bool) or not isinstance(length, (int, float)) or not 1 <= length <= draft_tokens + 1:
        raise ValueError(f"synthetic_acceptance_length: expected a number in [1, {draft_tokens + 1}]")
    return spec_acceptance_for(float(length), draft_tokens)


def limit(field: str, kind: Callable[[str], Any]) -> Callable[[str], dict[str, Any]]:
    """A flag whose value is the Scenario field itself."""
    def read(text: str) -> dict[str, Any]:
        return {field: kind(text)}
    return read
