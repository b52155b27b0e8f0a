"""rate:R: requests arriving at R per second, evenly spaced (constant), Poisson or gamma (an open loop)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from capacity.loads.base import LoadShape
from capacity.loads.draws import gaps

RATE_MIN_PER_S = 1e-3  # 3.6 requests an hour: below that no server is sized by its load
RATE_MAX_PER_S = 1e7


@dataclass(frozen=True)
class Rate(LoadShape):
    def send_times(self, value, n, rng, arrivals="constant", gamma_shape=1.0):
        return np.concatenate([[0.0], np.cumsum(gaps(rng, 1.0 / value, n, arrivals, gamma_shape)[:-1])])

    def simulated_requests(self, value, num_requests):
        return num_requests or int(min(max(value * 120.0, 200), 20_000))

    def closed_form(self, ctx, isl, osl, value, num_requests):
        return ctx.open_loop(isl, osl, value, num_requests)

    def closed_form_gaps(self, arrivals, think_time_s):
        return [f"{arrivals} arrivals"] if arrivals != "constant" else []

    def throughput_cap(self, value, e2e_s):
        return value


SHAPE = Rate(kind="rate", title="arrivals at R per second (open loop)", regime="open arrivals", fit_sigma=0.06,
             whole=False, value_range=(RATE_MIN_PER_S, RATE_MAX_PER_S), endless=True)
