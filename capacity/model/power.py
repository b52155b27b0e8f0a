"""Mean GPU power and energy per token from the work a request does (a cause model, not a per-point factor).

A GPU draws a static share of its board limit (TDP) whenever it is on, and on top of it power in proportion to how
busy its memory system and its tensor cores are. Over a steady load, per GPU of a replica serving R requests/s:

    P = TDP × (idle + memory × R × M + compute × R × C),   capped at TDP

where M and C are the seconds one request keeps HBM and the tensor cores busy at their peaks (its bytes ÷ bandwidth
and its FLOPs ÷ peak, summed over its prefill and its share of each decode step at the running batch: the roofline
times of capacity/model/steptime.step_parts, ideal efficiencies), so R × M and R × C are the shares of each second the
memory and the math units would be saturated. Three shares of TDP (`idle`, `memory`, `compute`) are fitted on NVML
power of committed points (capacity/calibrations/power.json, written by scripts/power_report.py, which says what
was fitted and what was held out); on other GPUs they are carried as shares of that GPU's TDP: an extrapolation.
"""

from __future__ import annotations

import functools
import importlib.resources
import json

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from capacity.calibration import IDEAL
from capacity.model.kv import attended_tokens_decode, attended_tokens_prefill
from capacity.plan import Plan
from capacity.model.steptime import StepParts, draft_forward_parts, step_parts

POWER_FILE = "power.json"


class PowerCoefficients(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    idle: float = Field(ge=0, le=1, description="share of TDP drawn with nothing running")
    memory: float = Field(ge=0, le=2, description="share of TDP added when HBM streams at its peak all the time")
    compute: float = Field(ge=0, le=2, description="share of TDP added when the tensor cores run at peak all the time")
    gpu: str = Field(description="the GPU whose NVML power fitted the shares")
    source: str = ""
    fitted_on: list[str] = Field(default_factory=list)
    held_out: list[str] = Field(default_factory=list)
    held_out_median_abs_error: float | None = None


@functools.cache
def shipped_power() -> PowerCoefficients | None:
    entry = importlib.resources.files("capacity.calibrations") / POWER_FILE
    if not entry.is_file():
        return None
    return PowerCoefficients.model_validate(json.loads(entry.read_text(encoding="utf-8")))


def _busy_s(parts: StepParts, c) -> tuple[np.ndarray, np.ndarray]:
    """(HBM seconds, tensor-core seconds) of a step at peak bandwidth and peak FLOP rates."""
    memory = np.asarray(parts.bytes) / c.bandwidth_bytes_per_s
    compute = (np.asarray(parts.linear_flops + parts.expert_flops) / c.peak_flops_per_s
               + np.asarray(parts.attention_flops) / c.attention_peak_flops_per_s)
    return memory, compute


def request_busy_s(plan: Plan, isl, osl, running, prefix_hit_rate: float = 0.0, tokens_per_step: float = 1.0,
                   draft_tokens: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(M, C): HBM and tensor-core seconds per request on each GPU of a replica: its prompt's prefill (the new
    tokens; weights read once per request's prefill, a floor on what a mixed step shares) plus its share of the
    decode steps at the running batch B and mean context I + O/2: (O − 1) / τ steps, each carrying 1/B of the step.
    With speculative decoding (k = `draft_tokens` drafts, τ = `tokens_per_step` tokens gained per step, as the load
    model's `speculation` gives them) a step verifies k + 1 tokens per sequence and, with a draft model
    (`plan.costs.draft`), runs the draft's k forwards: the first over the τ tokens each sequence gained, the rest
    over one."""
    c = plan.costs
    I, O = np.asarray(isl, dtype=float), np.asarray(osl, dtype=float)
    B = np.maximum(np.asarray(running, dtype=float), 1.0)
    ctx = I + O / 2
    new = I * (1 - prefix_hit_rate)
    keys = attended_tokens_prefill(plan.model, new, I * prefix_hit_rate)
    pre_m, pre_c = _busy_s(step_parts(c, IDEAL.efficiency, 0.0, I, new, keys, ideal=True), c)
    # the verification queries ride in the step as extra tokens attending the sequence's context (the load model's rule)
    dec_m, dec_c = _busy_s(step_parts(c, IDEAL.efficiency, B, ctx, B * draft_tokens,
                                      attended_tokens_decode(plan.model, ctx), ideal=True), c)
    if draft_tokens > 0 and c.draft is not None:
        first, rest = draft_forward_parts(c.draft, IDEAL.efficiency, B, ctx, tokens_per_step, ideal=True)
        (first_m, first_c), (rest_m, rest_c) = _busy_s(first, c.draft), _busy_s(rest, c.draft)
        dec_m = dec_m + first_m + (draft_tokens - 1) * rest_m
        dec_c = dec_c + first_c + (draft_tokens - 1) * rest_c
    steps = (O - 1) / max(tokens_per_step, 1.0)
    return pre_m + steps * dec_m / B, pre_c + steps * dec_c / B


def mean_power_w(tdp_w: float, requests_per_s_per_replica, memory_s, compute_s, k: PowerCoefficients) -> np.ndarray:
    """Mean power of one GPU of a replica (W), at most its TDP."""
    R = np.asarray(requests_per_s_per_replica, dtype=float)
    share = k.idle + k.memory * R * np.asarray(memory_s) + k.compute * R * np.asarray(compute_s)
    return np.minimum(tdp_w * share, tdp_w)
