"""KV-cache bytes per token and per sequence, by attention type and layer mix.

Standard attention stores K and V per layer: 2 · n_kv · d · b bytes per token (b bytes per element).
MLA (DeepSeek) stores one latent per layer: (r_kv + d_rope) · b bytes per token.
Sliding-window layers keep at most the window's tokens.
"""

from __future__ import annotations

import numpy as np

from capacity.model.architecture import ModelArch
from capacity.model.formulas import compiled


def kv_bytes_per_token_per_layer(m: ModelArch, kv_bytes: float, tp: int = 1) -> float:
    """Bytes one token adds to one layer's cache on one GPU (KV heads split over TP, replicated if fewer)."""
    if m.mla is not None:
        return compiled("mla_kv_bytes_per_token_layer")(m.mla.kv_lora_rank, m.mla.qk_rope_head_dim, kv_bytes)
    kv_heads_per_gpu = max(1, -(-m.num_kv_heads // tp))
    return compiled("kv_bytes_per_token_layer")(kv_heads_per_gpu, m.head_dim, kv_bytes)


def kv_bytes_per_token(m: ModelArch, kv_bytes: float, tp: int = 1) -> float:
    """Bytes per token summed over all layers (what a short sequence costs per token)."""
    return m.num_layers * kv_bytes_per_token_per_layer(m, kv_bytes, tp)


def cached_tokens(m: ModelArch, context: np.ndarray | float) -> np.ndarray:
    """Token-layers held for a sequence of `context` tokens: full layers keep all, sliding keep the window."""
    ctx = np.asarray(context, dtype=float)
    full = m.num_full_layers * ctx
    sliding = m.num_sliding_layers * np.minimum(ctx, m.sliding_window or 0)
    return full + sliding


def kv_bytes_per_sequence(m: ModelArch, context: np.ndarray | float, kv_bytes: float, tp: int = 1) -> np.ndarray:
    return cached_tokens(m, context) * kv_bytes_per_token_per_layer(m, kv_bytes, tp)


def attended_tokens_decode(m: ModelArch, context: np.ndarray | float) -> np.ndarray:
    """Sum over layers of the keys one new token attends to (= token-layers read from the cache)."""
    return cached_tokens(m, context)


def attended_tokens_prefill(m: ModelArch, prompt: np.ndarray | float, prefix: np.ndarray | float = 0.0) -> np.ndarray:
    """Mean keys attended per prompt token, summed over layers, for causal prefill after a cached prefix.

    Full layers: prefix + (prompt + 1)/2. Sliding layers with window w: the mean of min(position, w).
    """
    n = np.maximum(np.asarray(prompt, dtype=float), 1.0)
    p = np.asarray(prefix, dtype=float)
    full = p + (n + 1) / 2
    w = float(m.sliding_window or 0)
    if m.num_sliding_layers and w > 0:
        # positions run from p+1 to p+n; mean of min(pos, w)
        lo, hi = p + 1, p + n
        below = np.clip(np.minimum(hi, w) - lo + 1, 0, None)
        mean_below = np.where(below > 0, (lo + np.minimum(hi, w)) / 2, 0.0)
        sliding = (below * mean_below + (n - below) * w) / n
    else:
        sliding = full * 0
    return m.num_full_layers * full + m.num_sliding_layers * sliding
