"""Which roofline bound binds a step, and the decode batch where compute takes over."""

from __future__ import annotations

from typing import Literal

import numpy as np

from capacity.calibration import IDEAL
from capacity.loads import shape
from capacity.model.stepper import Stepper
from capacity.model.steptime import StepCosts, step_parts


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


def ideal_bounds(plan, isl: float, osl: float, load_kind: str, value: float,
                 prefix_hit_rate: float = 0.0, spec_tokens_per_step: float = 1.0,
                 spec_draft_tokens: int = 0) -> dict[str, float]:
    """What no engine can beat on this plan's hardware (`--ideal`): a TTFT and an ITL no engine undercuts and a
    request rate no engine exceeds, whatever it schedules.

    * TTFT ≥ the request's prompt alone in one step at the whole-step roofline (nothing queued before it);
    * ITL ≥ one decode step of the request alone at its prompt's context (the weights are read at least once
      per step; the KV it attends only grows);
    * requests/s ≤ the load's own limit — sync 1 ÷ e2e, C clients C ÷ e2e, a burst of N N ÷ e2e, a rate R — and
      ≤ the hardware's: decoding needs (O − 1) steps per request, a step serves at most the sequences that all
      memory after the weights holds at the prompt's length, each at least at that batch's roofline; and every
      request's FLOPs at peak.
    With a prefix cache serving a share h of every prompt, only the I(1 - h) new tokens are computed (attending
    the I h cached ones) and the cached blocks are held once for all sequences, so the bounds move accordingly.
    With speculative decoding (k drafts, τ tokens gained per step as the drafts' acceptance gives) a step verifies
    k + 1 tokens per sequence and yields τ: the decode bounds are those steps divided by τ.
    `plan` must be built with the ideal engine (every byte after the weights is KV, no engine limits)."""
    st = Stepper.build(plan.costs, IDEAL.efficiency, ideal=True)
    I, O = max(float(isl), 1.0), max(float(osl), 1.0)
    cached = I * min(max(float(prefix_hit_rate), 0.0), 1.0)
    new = max(I - cached, 1.0)
    keys = st.prefill_keys(new, cached)
    ttft = st.time_s(0.0, 0.0, new, keys)
    k, tau = float(spec_draft_tokens), max(float(spec_tokens_per_step), 1.0)
    itl = st.time_s(1.0, st.decode_keys(I), k, I) / tau if O > 1 else 0.0
    e2e = ttft + (O - 1) * itl
    batch = max(float(np.asarray(plan.max_concurrent(new + 1))), 1.0)  # sequences of their own I(1 - h) + 1 tokens
    step = st.time_s(batch, st.decode_keys(I), batch * k, I)
    decode_cap = batch * tau / step / (O - 1) if O > 1 else np.inf
    flops = float(np.asarray(step_parts(plan.costs, IDEAL.efficiency, 0.0, 0.0, new, keys, ideal=True).flops))
    flops += (O - 1) / tau * float(np.asarray(step_parts(plan.costs, IDEAL.efficiency, 1.0, I, k, I, ideal=True).flops))
    compute_cap = plan.costs.peak_flops_per_s / flops
    hardware = min(decode_cap, compute_cap)
    load_cap = shape(load_kind).throughput_cap(value, e2e)
    rps = min(load_cap, hardware)
    return {"ttft_s": ttft, "itl_s": itl, "e2e_latency_s": e2e, "requests_per_s": rps,
            "output_tokens_per_s": rps * O, "total_tokens_per_s": rps * (I + O), "running": min(batch, rps * e2e),
            "decode_step_s": itl, "prefill_step_s": ttft}
