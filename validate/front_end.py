"""The front end's share of a lone request's TTFT, read from the engine's own counters.

vLLM times each request inside the engine: `queue` from its arrival in the engine core's waiting queue to its first
schedule, `prefill` from there to its first token. What a client sees beyond that — HTTP, the API server's input
processing and tokenizing, the hop to the engine core and the first token's way back — is the front end. On lone
requests (sync points) nothing else is in flight, so client TTFT − (queue + prefill) is the front end alone; fitted
over prompt lengths as a fixed time plus a time per prompt token (the tokenizer's share), it sets the calibration's
`request_overhead_s` and `prompt_token_overhead_s` from measurement instead of leaving the fit to trade them against
GPU time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class FrontEndFit:
    fixed_s: float
    per_prompt_token_s: float
    points: int
    models: int
    max_abs_residual_s: float


def front_end_points(run_dirs: list[str | Path]) -> list[tuple[str, float, float]]:
    """(model, mean prompt tokens, client TTFT − the engine's queue and prefill) for every sync point with counters."""
    from validate.compare import load_run

    out = []
    for d in run_dirs:
        run = load_run(d)
        for p in run.points:
            t = p.engine_telemetry
            if p.load != "sync" or t is None or t.engine_mean_prefill_s is None or not p.mean_ttft_s or not p.isl:
                continue
            out.append((str(run.scenario.get("model")), float(p.isl),
                        p.mean_ttft_s - t.engine_mean_prefill_s - (t.engine_mean_queue_s or 0.0)))
    return out


def fit_front_end(run_dirs: list[str | Path]) -> FrontEndFit | None:
    """Least squares of the front end on prompt tokens over the sync points with counters (None under three)."""
    pts = front_end_points(run_dirs)
    if len(pts) < 3:
        return None
    x = np.array([p[1] for p in pts])
    y = np.array([p[2] for p in pts])
    slope, intercept = np.polyfit(x, y, 1)
    resid = y - (intercept + slope * x)
    return FrontEndFit(float(intercept), float(slope), len(pts), len({p[0] for p in pts}), float(np.abs(resid).max()))
