"""A deployment plan: the model's weights, memory and step costs on one GPU of a replica.

Checks that the parallel layout is valid and that the model fits, and says why when it does not. A replica is
tp × pp GPUs: `pp` pipeline stages of `tp` GPUs each (capacity/model/pipeline.py). The load model runs `lanes`
independent batches side by side: one per replica without a pipeline, pp per replica with one (each stage works on
its own batch in flight), each lane with its share of the KV blocks (`lane_memory`) and of the running limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from capacity.model.architecture import ModelArch
from capacity.engines import get as engine_object
from capacity.engines.base import EngineProfile
from capacity.errors import DoesNotFitError, WorkloadError
from capacity.hardware import Gpu
from capacity.model.kv import kv_bytes_per_token
from capacity.model.memory import MemoryPlan, blocks_per_sequence, longest_request, max_sequences, plan_memory, uniform_kv
from capacity.model.params import active_params_per_token, count_params
from capacity.model.pipeline import stage_models, stage_weight_bytes
from capacity.model.precision import compute_precision, kv_bytes_per_element, resolve_weight_format
from capacity.model.steptime import StepCosts, build_costs, draft_costs
from capacity.units import GB, KiB
from capacity.model.weights import WeightBytes, weight_bytes


@dataclass(frozen=True)
class Plan:
    model: ModelArch
    gpu: Gpu
    profile: EngineProfile
    weight_format: str
    compute_precision: str
    kv_element_bytes: float
    tp: int
    ep: int
    replicas: int
    weights: WeightBytes
    memory: MemoryPlan
    costs: StepCosts
    total_params: int
    active_params: int
    kv_bytes_per_token: float
    notes: tuple[str, ...] = field(default=())
    pp: int = 1
    lane_memory: MemoryPlan | None = None  # one lane's share of the KV blocks (None: the memory plan's, pp = 1)
    lane_max_num_seqs: int | None = None  # one lane's running limit (None: the engine's max_num_seqs)
    stage: ModelArch | None = None  # the pipeline stage with the fewest KV blocks, whose GPU `memory` describes
    pipeline_weight_bytes: float = 0.0  # all stages' weights on their GPUs (pp > 1)
    stage_max_share: float = 1.0  # the heaviest stage's share of the weights a step reads (pp > 1: ≥ 1 / pp)
    dp_ranks: int = 1  # attention data parallel: GPUs whose KV pools the blocks pool (a sequence lives on one)
    start_refusal: str = ""  # why the engine would refuse to start at this max_model_len ('' when it starts)

    @property
    def engine_starts(self) -> bool:
        return not self.start_refusal

    @property
    def lanes(self) -> int:
        """Batches the load model runs side by side: replicas × pipeline stages."""
        return self.replicas * self.pp

    @property
    def lane_blocks(self) -> MemoryPlan:
        return self.lane_memory or self.memory

    @property
    def max_num_seqs(self) -> int:
        """One lane's running limit."""
        return self.lane_max_num_seqs or self.profile.max_num_seqs

    @property
    def replica_weight_bytes(self) -> float:
        """Weights of one replica, all its GPUs."""
        return self.memory.weight_bytes * self.tp if self.pp == 1 else self.pipeline_weight_bytes

    def pipeline_pace(self, busy: int) -> float:
        """How much slower than a whole-model step a token goes with `busy` of the pipeline's batches in flight: each
        batch waits for the stage ahead to finish the others, so at least busy × the heaviest stage's share (1: no
        pipeline, or too few batches to queue behind that stage)."""
        return max(1.0, busy * self.stage_max_share) if self.pp > 1 else 1.0

    @property
    def kv_model(self) -> ModelArch:
        """The layers whose KV one GPU stores: the whole model, or the pipeline stage the KV blocks are sized by."""
        return self.stage or self.model

    def _fit(self, context) -> np.ndarray:
        """Sequences of `context` tokens the lane's KV blocks hold: whole sequences per attention-DP rank."""
        per_rank = replace(self.lane_blocks, num_blocks=self.lane_blocks.num_blocks // self.dp_ranks)
        return max_sequences(self.kv_model, context, per_rank, self.profile.block_size_tokens) * self.dp_ranks

    def max_concurrent(self, context) -> np.ndarray | int:
        """Sequences of `context` tokens one lane holds at once: KV room, capped by its running limit."""
        fit = self._fit(context)
        out = np.minimum(fit, self.max_num_seqs)
        return int(out) if np.ndim(out) == 0 else out

    def max_running(self, isl, osl) -> np.ndarray:
        """Sequences that run at once in steady state: a running sequence holds isl + osl/2 tokens on average."""
        mean_ctx = np.asarray(isl, dtype=float) + np.asarray(osl, dtype=float) / 2
        fit = self._fit(mean_ctx)
        return np.maximum(np.minimum(fit, self.max_num_seqs), 1.0)


def _check_layout(m: ModelArch, gpu: Gpu, num_gpus: int, tp: int, pp: int = 1, attention_dp: bool = False) -> list[str]:
    notes = []
    if num_gpus % (tp * pp):
        raise WorkloadError(f"num_gpus ({num_gpus}) must be a multiple of tp × pp ({tp} × {pp})" if pp > 1 else
                            f"num_gpus ({num_gpus}) must be a multiple of tp ({tp})")
    if pp > m.num_layers:
        raise WorkloadError(f"pp={pp} is more pipeline stages than the model's {m.num_layers} layers")
    if m.num_heads % tp:
        raise WorkloadError(f"tp={tp} does not divide the model's {m.num_heads} attention heads")
    if tp > m.num_kv_heads and m.mla is None and not attention_dp:
        notes.append(f"tp={tp} > {m.num_kv_heads} KV heads: KV heads are replicated, each GPU stores a full head")
    if tp * pp > gpu.scale_up_domain_size:
        notes.append(f"tp={tp} spans more than one {gpu.scale_up_domain_size}-GPU {gpu.interconnect_name} domain: "
                     "all-reduce would cross the slower scale-out network, which this model does not price"
                     if tp > gpu.scale_up_domain_size else
                     f"tp × pp = {tp * pp} spans more than one {gpu.scale_up_domain_size}-GPU {gpu.interconnect_name} "
                     "domain: the stage-to-stage sends are priced at its link, not the scale-out network's")
    return notes


def start_refusal(m: ModelArch, mem: MemoryPlan, profile: EngineProfile, max_model_len: int | None,
                  ranks: int = 1) -> str:
    """Why the engine would not start, '' when it would: an engine with `refuses_kv_below_max_len_request` (vLLM)
    stops at start-up when its KV cache cannot hold one request of max_model_len tokens (`max_model_len`: the
    scenario's; None: the model's context, the engine's default). The estimate is still given: its requests fit."""
    limit = max_model_len or m.max_position_embeddings
    if not profile.refuses_kv_below_max_len_request or not limit:
        return ""
    longest = longest_request(m, mem, profile, limit, ranks)
    if longest >= limit:
        return ""
    engine = engine_object(profile.name)
    row = engine.flags.row("max_model_len")
    whose = "" if max_model_len else " (the model's context, its default)"
    holds = f"{longest:,} tokens" if uniform_kv(m, mem.num_groups) else f"one request of at most {longest:,} tokens"
    return (f"{engine.title} would refuse to start with max_model_len {limit:,}{whose}: the KV cache holds {holds}; "
            f"pass {row.flag if row else 'max_model_len'} ≤ {longest:,} (the estimate assumes requests fit)")


def make_plan(m: ModelArch, gpu: Gpu, precision: str, kv_precision: str, profile: EngineProfile,
              num_gpus: int = 1, tp: int = 1, expert_parallel: bool = False, context: int = 1,
              max_model_len: int | None = None, draft: ModelArch | None = None, pp: int = 1,
              attention_dp: bool = False) -> Plan:
    """`draft`: a draft_model speculator's architecture. Its bf16 weights add to the weights (vLLM quantizes a
    draft only when the speculative config says so, which is not read here), its KV bytes per token add to the
    target's (vLLM V1 puts the drafter's attention layers in the same KV cache pool), and its step costs ride in
    the plan's (`StepCosts.draft`). `pp`: pipeline stages of `tp` GPUs each (capacity/model/pipeline.py); memory is
    planned per stage and the pipeline holds the KV blocks of its tightest stage. `attention_dp`: attention data
    parallel over the tp GPUs (TensorRT-LLM's DEP, SGLang's --enable-dp-attention): attention weights whole on every
    GPU, each GPU the whole KV of its own sequences (no replicated heads or MLA latent), the MLPs and experts split as
    tp and ep say; priced as the replica's batch spread evenly over its GPUs."""
    notes = _check_layout(m, gpu, num_gpus, tp, pp, attention_dp)
    if attention_dp and (tp == 1 or draft is not None):
        raise WorkloadError("attention_dp spreads attention over the tp GPUs of a replica: it needs tp > 1, and is not "
                            "modelled with a draft model")
    if pp > 1 and draft is not None:
        raise WorkloadError("a draft model with pipeline parallelism is not modelled (pp > 1 and spec_draft_model)")
    fmt = resolve_weight_format(precision, gpu.fp4_formats, m.native_quantization)
    cp = compute_precision(fmt, gpu.fp4_formats, gpu.dense_flops_per_s.fp8 is not None)
    if cp == "bf16" and fmt != "bf16":
        notes.append(f"{gpu.name} has no {fmt} tensor cores: weight-only {fmt}, matmuls at the bf16 rate")
    kv_b = kv_bytes_per_element(kv_precision)
    ep = tp if (expert_parallel and m.moe is not None) else 1
    w = weight_bytes(m, fmt, tp, ep)
    if attention_dp:  # every GPU holds the attention weights whole
        w = replace(w, attention=weight_bytes(m, fmt, 1, ep).attention)
    w_draft = weight_bytes(draft, "bf16", tp, 1) if draft is not None else None
    draft_kv = kv_bytes_per_token(draft, kv_b, tp) if draft is not None else 0.0
    stage, stage_w, stage_share = None, 0.0, 1.0
    if pp == 1:
        mem = plan_memory(m, gpu.usable_memory_bytes, w.total + (w_draft.total if w_draft else 0.0), kv_b, profile, tp,
                          max_model_len, extra_kv_bytes_per_token=draft_kv, attention_dp=attention_dp)
    else:  # each stage profiles itself; the engine takes the fewest blocks of any stage
        per_stage = stage_weight_bytes(m, fmt, tp, ep, pp, attention_dp)
        plans = [(plan_memory(s, gpu.usable_memory_bytes, ws, kv_b, profile, tp, max_model_len, attention_dp=attention_dp), s)
                 for s, ws in zip(stage_models(m, pp), per_stage)]
        mem, stage = min(plans, key=lambda x: x[0].num_blocks)
        stage_w = sum(per_stage) * tp
        read = [ws - (w.embedding if i == 0 else 0.0) for i, ws in enumerate(per_stage)]  # the table is looked up
        stage_share = max(read) / sum(read)
    kv_m = stage or m
    need_ctx = max(context, max_model_len or 0)
    per_seq_blocks = float(blocks_per_sequence(kv_m, need_ctx, mem, profile.block_size_tokens))
    ranks = tp if attention_dp else 1  # under attention DP a sequence's KV lives on one GPU
    if mem.kv_cache_bytes <= 0 or mem.num_blocks // ranks < per_seq_blocks:
        where = f"{num_gpus // (tp * pp) if num_gpus >= tp * pp else 1}×{tp} {gpu.id}" + (f" × {pp} stages" if pp > 1 else "")
        fewest = "" if pp == 1 else f" on its tightest stage ({kv_m.num_layers} layers)"
        raise DoesNotFitError(
            f"{m.name} ({fmt}) does not fit on {where}: per GPU, "
            f"weights {mem.weight_bytes / GB:.1f} GB + activations {mem.activation_bytes / GB:.1f} GB + overhead "
            f"{(mem.non_torch_bytes + mem.cuda_graph_bytes) / GB:.1f} GB leave "
            f"{max(mem.kv_cache_bytes, 0) / GB:.2f} GB of the {mem.budget_bytes / GB:.1f} GB budget for KV cache, "
            f"{mem.num_blocks // ranks:,} blocks of {profile.block_size_tokens} tokens{fewest}; one request of {need_ctx:,} tokens "
            f"needs {per_seq_blocks:,.0f}. "
            f"Try more GPUs (tp{', pp' if pp > 1 else ''}), a lower precision, fp8 KV cache or shorter sequences")
    refusal = start_refusal(kv_m, mem, profile, max_model_len, ranks)
    if refusal:
        notes.append(refusal)
    # 0 = no CUDA graphs (--enforce-eager): every step is launched op by op
    off = ("MLA" if profile.prefill_graphs_skip_mla and m.mla is not None else
           gpu.vendor if profile.prefill_graphs_nvidia_only and gpu.vendor.strip().upper() != "NVIDIA" else None)
    if off and profile.max_prefill_graph_tokens != 0:
        profile = profile.model_copy(update={"max_prefill_graph_tokens": 0})  # the plan's profile says what it prices
        notes.append(f"{profile.name} runs prompts without CUDA graphs here ({off}: its prefill graphs are off for "
                     "it), so every prompt chunk pays the op-by-op launch")
    costs: StepCosts = build_costs(m, w, gpu, cp, kv_b, tp, ep, profile.max_cudagraph_tokens,
                                   profile.async_scheduling, profile.exposed_step_host_s,
                                   profile.max_prefill_graph_tokens, fmt)
    if profile.host_floor_scale != 1.0:
        costs = replace(costs, host_scale=profile.host_floor_scale)
    if not profile.op_by_op_priced:  # no launch cost priced beyond the graphs: every step as if graphed
        costs = replace(costs, max_cudagraph_tokens=float("inf"), max_prefill_graph_tokens=None)
        notes.append(f"{profile.name} runs steps beyond its CUDA graphs (prompts; decode above "
                     f"{profile.max_cudagraph_tokens:,} sequences{' per rank' if attention_dp else ''}) op by op; that "
                     "launch cost is not measured for it and is taken as hidden under the GPU step (vLLM's measured "
                     "op-by-op costs are not applied)")
    lane_mem, lane_seqs = None, profile.lane_running_limit(pp, ranks)
    if attention_dp:  # each GPU reads the whole KV of its 1/tp of the batch: per GPU, 1/tp of a token's whole KV
        costs = replace(costs, kv_bytes_per_token_layer=mem.kv_bytes_per_token_layer / tp, dp_ranks=tp)
        notes.append(f"attention data parallel over {tp} GPUs: attention weights whole on each, each GPU the whole KV "
                     "of its own sequences; priced as the batch spread evenly over them (a lone prompt's attention "
                     "runs on one GPU); not measured here")
    if pp > 1:
        # the batches in flight share one pool: each is priced with 1 / pp of it, and at least one request's blocks
        lane_need = int(np.ceil(float(blocks_per_sequence(kv_m, context, mem, profile.block_size_tokens)))) * ranks
        lane_blocks = max(mem.num_blocks // pp, min(lane_need, mem.num_blocks))
        costs = replace(costs, pp=pp)
        lane_mem = replace(mem, num_blocks=lane_blocks,
                           kv_capacity_tokens=int(mem.kv_capacity_tokens * lane_blocks / max(mem.num_blocks, 1)))
        notes.append(f"pipeline of {pp} stages of {tp} GPU{'s' if tp > 1 else ''}: {pp} batches in flight, each priced as "
                     "the whole model's step on one stage's GPUs plus the stage-to-stage sends; not measured here")
    if draft is not None:
        costs = replace(costs, draft=draft_costs(draft, w_draft, gpu, kv_b, tp, profile.draft_forward_host_s
                                                         + profile.draft_layer_launch_s * draft.num_layers))
        notes.append(f"draft model {draft.name}: bf16 weights, {draft_kv * tp / KiB:,.0f} KiB of KV per token on top of the "
                     "target's; its forwards priced op by op after each verification step")
    return Plan(m, gpu, profile, fmt, cp, kv_b, tp, ep, num_gpus // (tp * pp), w, mem, costs,
                count_params(m).total, active_params_per_token(m),
                kv_bytes_per_token(m, kv_b, 1) + (kv_bytes_per_token(draft, kv_b, 1) if draft is not None else 0.0),
                tuple(notes), pp=pp, lane_memory=lane_mem, lane_max_num_seqs=lane_seqs, stage=stage,
                pipeline_weight_bytes=stage_w, stage_max_share=stage_share, dp_ranks=ranks,
                start_refusal=refusal)
