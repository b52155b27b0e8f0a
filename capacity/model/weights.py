"""Weight bytes, total and per GPU, for a weight format; which tensors stay in bf16.

Quantized: attention projections, dense MLPs, routed and shared experts. Kept in bf16: embedding,
LM head, norms, MoE router, vision tower. A checkpoint that ships MXFP4 experts only (gpt-oss) keeps
attention in bf16 too.
"""

from __future__ import annotations

from dataclasses import dataclass

from capacity.model.architecture import ModelArch
from capacity.model.params import ParamCounts, attention_params_per_gpu, count_params
from capacity.model.precision import BYTES_PER_WEIGHT, HIGH_PRECISION_BYTES


@dataclass(frozen=True)
class WeightBytes:
    """Bytes per GPU under tensor parallelism t (and expert parallelism for routed experts)."""

    embedding: float
    lm_head: float
    attention: float
    dense_mlp: float
    routed_experts: float
    expert: float  # one expert of one layer, per GPU (TP splits its width; EP keeps it whole)
    shared_experts: float
    other: float  # norms, router, vision tower (replicated)

    @property
    def total(self) -> float:
        return (self.embedding + self.lm_head + self.attention + self.dense_mlp + self.routed_experts
                + self.shared_experts + self.other)

    @property
    def read_per_step_dense(self) -> float:
        """Bytes every forward step streams regardless of routing (not the embedding table)."""
        return self.lm_head_or_tied + self.attention + self.dense_mlp + self.shared_experts + self.other

    lm_head_or_tied: float = 0.0


def weight_bytes(m: ModelArch, weight_format: str, tp: int = 1, ep: int = 1) -> WeightBytes:
    """Per-GPU weight bytes. TP splits attention, MLPs and vocab; EP splits routed experts across ep GPUs
    (each expert then whole on its GPU), otherwise experts are TP-split."""
    p: ParamCounts = count_params(m)
    q = BYTES_PER_WEIGHT[weight_format]
    hp = HIGH_PRECISION_BYTES
    experts_only = m.native_quantization == "mxfp4" and weight_format == "mxfp4"
    attn_b = hp if experts_only else q
    dense_b = hp if experts_only else q
    embedding = p.embedding * hp / tp
    lm_head = p.lm_head * hp / tp
    head_read = (p.lm_head if p.lm_head else p.embedding) * hp / tp
    if ep > 1:
        routed = p.routed_experts * q / ep
        expert = p.expert * q
    else:
        routed = p.routed_experts * q / tp
        expert = p.expert * q / tp
    vision = p.vision * hp  # replicated on every GPU in vLLM
    return WeightBytes(
        embedding=embedding,
        lm_head=lm_head,
        attention=attention_params_per_gpu(m, tp) * attn_b,
        dense_mlp=p.dense_mlp * dense_b / tp,
        routed_experts=routed,
        expert=expert,
        shared_experts=p.shared_experts * q / tp,
        other=(p.norms + p.router) * hp + vision,
        lm_head_or_tied=head_read,
    )
