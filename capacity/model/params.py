"""Parameter counts by tensor group, from the architecture alone.

Symbols: h hidden, L layers, n_h heads, n_kv KV heads, d head dim, V vocab, f dense MLP width,
E experts, k experts per token, f_e expert width. Gated MLPs (SwiGLU/GeGLU) have 3 matrices, others 2.
"""

from __future__ import annotations

from dataclasses import dataclass

from capacity.model.architecture import ModelArch


@dataclass(frozen=True)
class ParamCounts:
    embedding: int
    lm_head: int
    attention: int  # all layers
    dense_mlp: int  # all dense-MLP layers
    routed_experts: int  # all experts of all MoE layers
    expert: int  # one expert of one layer
    shared_experts: int  # all MoE layers
    router: int
    norms: int
    vision: int

    @property
    def total(self) -> int:
        return (self.embedding + self.lm_head + self.attention + self.dense_mlp + self.routed_experts
                + self.shared_experts + self.router + self.norms + self.vision)

    @property
    def quantizable(self) -> int:
        """Linear layers that weight quantization applies to (not embeddings, LM head, router, norms)."""
        return self.attention + self.dense_mlp + self.routed_experts + self.shared_experts


def attention_params_per_layer(m: ModelArch) -> int:
    h = m.hidden_size
    if m.mla is not None:
        a = m.mla
        qk = a.qk_nope_head_dim + a.qk_rope_head_dim
        q = (h * a.q_lora_rank + a.q_lora_rank * m.num_heads * qk) if a.q_lora_rank else h * m.num_heads * qk
        kv_a = h * (a.kv_lora_rank + a.qk_rope_head_dim)
        kv_b = a.kv_lora_rank * m.num_heads * (a.qk_nope_head_dim + a.v_head_dim)
        o = m.num_heads * a.v_head_dim * h
        return q + kv_a + kv_b + o
    q = h * m.num_heads * m.head_dim
    kv = 2 * h * m.num_kv_heads * m.head_dim
    o = m.num_heads * m.head_dim * h
    return q + kv + o


def replicated_attention_params(m: ModelArch) -> int:
    """Attention parameters every tensor-parallel GPU holds whole, all layers: MLA's down-projections (q_a, and
    kv_a with the RoPE key), which vLLM and SGLang build as replicated linears; 0 for other attention."""
    if m.mla is None:
        return 0
    a = m.mla
    return m.num_layers * m.hidden_size * ((a.q_lora_rank or 0) + a.kv_lora_rank + a.qk_rope_head_dim)


def attention_params_per_gpu(m: ModelArch, tp: int) -> float:
    """Attention parameters on one GPU of a TP group: the split part ÷ TP plus the replicated part."""
    rep = replicated_attention_params(m)
    return (count_params(m).attention - rep) / tp + rep


def mlp_params(hidden: int, width: int, gated: bool) -> int:
    return (3 if gated else 2) * hidden * width


def count_params(m: ModelArch) -> ParamCounts:
    h, L = m.hidden_size, m.num_layers
    embedding = m.vocab_size * h
    lm_head = 0 if m.tie_word_embeddings else m.vocab_size * h
    attention = L * attention_params_per_layer(m)
    moe = m.moe
    dense_layers = L if moe is None else moe.num_dense_layers
    dense_mlp = dense_layers * mlp_params(h, m.intermediate_size, m.gated_mlp)
    expert = routed = shared = router = 0
    if moe is not None:
        expert = mlp_params(h, moe.expert_intermediate_size, m.gated_mlp)
        routed = m.num_moe_layers * moe.num_experts * expert
        shared = m.num_moe_layers * mlp_params(h, moe.shared_expert_intermediate_size, m.gated_mlp)
        router = m.num_moe_layers * h * moe.num_experts
    norms = L * 2 * h + h
    return ParamCounts(embedding, lm_head, attention, dense_mlp, routed, expert, shared, router, norms, m.vision_params)


def active_params_per_token(m: ModelArch) -> int:
    """Parameters a token multiplies through (embedding lookup excluded, LM head included)."""
    p = count_params(m)
    head = p.lm_head if p.lm_head else p.embedding
    routed_active = 0 if m.moe is None else m.num_moe_layers * m.moe.num_experts_per_token * p.expert
    return p.attention + p.dense_mlp + routed_active + p.shared_experts + p.router + head
