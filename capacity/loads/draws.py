"""What a run draws from its seed: request lengths and arrival gaps, one random stream each.

The step simulator and `validate`'s senders draw from these same functions and streams, so a simulated run with
seed S sends what `validate --seed S` sends: the same gaps between arrivals (every committed rate point, whose
sender has drawn them from `default_rng(seed)` one gap at a time since the first sitting) and, for runs made after
2026-12-04, the same lengths request by request. A finite open-loop run is one sample of its arrival process: its
span, and with it the requests/s it measures, varies between seeds by `span_rel_sd` (what another harness's run of
the same rate would differ by).
Each stream is drawn value by value; numpy's Generator gives the same values drawn one at a time or n at once, so
the simulator draws a whole run in one call and the sender one block at a time.
"""

from __future__ import annotations

import math

import numpy as np

GAMMA_SHAPE_MAX = 100.0  # gamma gaps of shape above this are constant gaps in all but name
GAMMA_SHAPE_MIN = 0.01  # below it nearly every gap is 0 and a run arrives as one burst (its sample says nothing)
SEED_MAX = 2**32 - 1  # larger seeds would alias the numbered streams below (default_rng(S + k·2**32) = [S, k])
DRAFTS_STREAM = 1  # default_rng([seed, 1]): the simulator's accepted drafts per step (speculative decoding)
LENGTHS_STREAM = 2  # default_rng([seed, 2]): the measured requests' lengths
BODIES_STREAM = 3  # default_rng([seed, 3]): validate's prompt token ids
WARMUP_LENGTHS_STREAM = 4  # validate's warm-up requests, kept off the measured requests' stream
SHARED_PREFIX_STREAM = 5  # default_rng([seed, 5, salt]): the token ids of a run's common prefix (one per salt)


def arrivals_rng(seed: int) -> np.random.Generator:
    """The gaps' stream: default_rng(seed), as validate's rate sender has always drawn them."""
    return np.random.default_rng(seed)


def stream_rng(seed: int, stream: int) -> np.random.Generator:
    """One of the seed's numbered streams (the *_STREAM constants above)."""
    return np.random.default_rng([seed, stream])


def lengths_rng(seed: int, stream: int = LENGTHS_STREAM) -> np.random.Generator:
    """The lengths' stream of one load point: input then output length, request after request in send order."""
    return stream_rng(seed, stream)


def gaps(rng: np.random.Generator, mean_gap_s: float, n: int, arrivals: str = "constant",
         gamma_shape: float = 1.0) -> np.ndarray:
    """n gaps between arrivals: constant, exponential (Poisson arrivals) or gamma of this shape (1 is Poisson,
    below 1 burstier), each of mean `mean_gap_s`."""
    if arrivals == "poisson":
        return rng.exponential(mean_gap_s, size=n)
    if arrivals == "gamma":
        return rng.gamma(gamma_shape, mean_gap_s / gamma_shape, size=n)
    if arrivals != "constant":
        raise ValueError(f"arrivals {arrivals!r}: constant, poisson or gamma")
    return np.full(n, float(mean_gap_s))


def spread_lengths(rng: np.random.Generator, mean: int | np.ndarray, kind: str, ratio: float, n: int) -> np.ndarray:
    """Lengths as `--length-dist` draws them: uniform in [L(1−r), L(1+r)], normal with σ = r·L (at least 1), else
    fixed. `mean`: one length, or one per draw (the draws are those of n single calls, one after another)."""
    mean = np.broadcast_to(np.asarray(mean), (n,))
    if kind == "uniform":
        low, high = (mean * (1 - ratio)).astype(int), (mean * (1 + ratio)).astype(int)
        return rng.integers(np.maximum(low, 1), np.maximum(high, 1) + 1)
    if kind == "normal":
        return np.maximum(np.rint(rng.normal(mean, ratio * mean)), 1).astype(int)
    return np.array(mean, dtype=int)


def span_rel_sd(n: int, arrivals: str = "constant", gamma_shape: float = 1.0) -> float:
    """Relative standard deviation, between seeds, of the time n arrivals span (n − 1 gaps): 1 / sqrt((n − 1) k)
    for gamma gaps of shape k (k = 1: Poisson), 0 for constant gaps or fewer than two requests."""
    if arrivals not in ("poisson", "gamma") or n < 2:
        return 0.0
    k = gamma_shape if arrivals == "gamma" else 1.0
    return 1.0 / math.sqrt((n - 1) * k)


__all__ = ["BODIES_STREAM", "DRAFTS_STREAM", "GAMMA_SHAPE_MAX", "LENGTHS_STREAM", "SEED_MAX", "WARMUP_LENGTHS_STREAM",
           "arrivals_rng", "gaps", "lengths_rng", "span_rel_sd", "spread_lengths", "stream_rng"]
