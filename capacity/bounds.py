"""Which roofline bound binds a step, and the decode batch where compute takes over."""

from __future__ import annotations

from typing import Literal

import numpy as np

from capacity.calibration import IDEAL
from capacity.steptime import StepCosts, step_parts


def bound_of_step(c: StepCosts, decode_seqs, decode_context, prefill_tokens, prefill_keys) -> Literal["compute", "memory"]:
    """'compute' when the step's FLOPs at peak take longer than its bytes at full bandwidth."""
    parts = step_parts(c, IDEAL.efficiency, decode_seqs, decode_context, prefill_tokens, prefill_keys, ideal=True)
    compute_s = float(np.asarray(parts.linear_flops + parts.expert_flops)) / c.peak_flops_per_s + \
        float(np.asarray(parts.attention_flops)) / c.attention_peak_flops_per_s
    memory_s = float(np.asarray(parts.bytes)) / c.bandwidth_bytes_per_s
    return "compute" if compute_s > memory_s else "memory"


def decode_compute_bound_batch(c: StepCosts, context: float) -> float | None:
    """Smallest decode batch whose step is compute-bound at this context (None if never: KV reads grow
    as fast as FLOPs, as with long contexts)."""
    one = step_parts(c, IDEAL.efficiency, 1.0, context, 0.0, 0.0, ideal=True)
    two = step_parts(c, IDEAL.efficiency, 2.0, context, 0.0, 0.0, ideal=True)
    flops_per_seq = float(np.asarray(two.flops - one.flops))
    bytes_per_seq = float(np.asarray(two.bytes - one.bytes))
    base_bytes = float(np.asarray(one.bytes)) - bytes_per_seq
    slope = flops_per_seq / c.peak_flops_per_s - bytes_per_seq / c.bandwidth_bytes_per_s
    if slope <= 0:
        return None
    return max(1.0, base_bytes / c.bandwidth_bytes_per_s / slope)
