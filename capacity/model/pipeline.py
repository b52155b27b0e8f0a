"""Pipeline parallelism: a model's layers cut into `pp` consecutive stages, one group of TP GPUs each.

What the rest of the model needs from a pipeline:
- which layers each stage holds (`stage_layers`, vLLM's split) and each stage as a model of its own
  (`stage_models`), so memory is planned per stage: the engine takes the KV blocks of the stage with the fewest
  (every stage stores its layers' KV for every token in flight, so the pipeline holds what its tightest stage holds);
- each stage's weights on one of its GPUs (`stage_weight_bytes`): its layers' share, plus the embedding on the first
  stage and the LM head on the last (a tied embedding is a second copy there).

How a pipeline runs, as the load model takes it: the engine keeps `pp` batches in flight, one per stage, each
advancing one stage per stage step (vLLM's batch queue of `pp` batches; TensorRT-LLM's micro-batches). A batch's
step thus takes the full model's time on TP GPUs (its layers, one stage after another) plus pp − 1 hops of its
hidden states to the next stage, and the `pp` batches run side by side: a pipeline is `pp` lanes, each with 1 / pp
of the KV blocks (`capacity.plan.Plan.lanes`). The engine's host work is done once per batch by one process for all
lanes, so per lane it weighs pp times as much (`StepCosts.pp` in capacity/model/steptime.py).
"""

from __future__ import annotations

from dataclasses import replace

from capacity.model.architecture import ModelArch, Moe
from capacity.model.precision import HIGH_PRECISION_BYTES
from capacity.model.weights import weight_bytes


def stage_layers(num_layers: int, pp: int) -> tuple[tuple[int, int], ...]:
    """[start, end) of each stage's layers: num_layers // pp each, the remainder one more each to the stages just
    before the last (the last also holds the LM head). vLLM's split (vllm/distributed/utils.py get_pp_indices)."""
    if not 1 <= pp <= num_layers:
        raise ValueError(f"pp {pp} must be between 1 and the model's {num_layers} layers")
    sizes = [num_layers // pp] * pp
    for i in range(num_layers % pp):
        sizes[(pp - 2 - i) % pp] += 1
    bounds, start = [], 0
    for n in sizes:
        bounds.append((start, start + n))
        start += n
    return tuple(bounds)


def stage_model(m: ModelArch, start: int, end: int) -> ModelArch:
    """Layers [start, end) of `m` as a model of its own (its dense leading layers, attention kinds and window kept)."""
    update: dict = {"num_layers": end - start, "layer_kinds": m.layer_kinds[start:end]}
    if m.moe is not None:
        dense = max(0, min(m.moe.num_dense_layers, end) - start)
        update["moe"] = Moe(**{**m.moe.model_dump(), "num_dense_layers": dense})
    if not any(k == "sliding" for k in update["layer_kinds"]):
        update["sliding_window"] = None
    return m.model_copy(update=update)


def stage_models(m: ModelArch, pp: int) -> tuple[ModelArch, ...]:
    return tuple(stage_model(m, a, b) for a, b in stage_layers(m.num_layers, pp))


def stage_weight_bytes(m: ModelArch, weight_format: str, tp: int, ep: int, pp: int,
                       attention_dp: bool = False) -> tuple[float, ...]:
    """Weight bytes on one GPU of each stage: the stage's own layers (attention, MLPs, experts, norms, router),
    plus the embedding and any vision tower on the first stage and the final norm and LM head on the last (the embedding again
    when tied: the last stage needs it as its head)."""
    full = weight_bytes(m, weight_format, tp, ep)
    vision = m.vision_params * HIGH_PRECISION_BYTES
    out = []
    for i, s in enumerate(stage_models(m, pp)):
        w = weight_bytes(s, weight_format, tp, ep)
        if attention_dp:  # the stage's attention whole on each of its GPUs (capacity/plan.make_plan)
            w = replace(w, attention=weight_bytes(s, weight_format, 1, ep).attention)
        own = w.attention + w.dense_mlp + w.routed_experts + w.shared_experts + w.other - vision
        if i < pp - 1:  # the final norm sits on the last stage only (each stage model counts one)
            own -= m.hidden_size * HIGH_PRECISION_BYTES
        if i == 0:
            own += full.embedding + vision
        if i == pp - 1:
            own += full.lm_head if full.lm_head else full.embedding
        out.append(own)
    return tuple(out)
