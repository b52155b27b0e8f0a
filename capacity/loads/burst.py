"""burst:N: N requests submitted at once; throughput = N ÷ the time until the last one ends."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from capacity.loads.base import LoadShape


@dataclass(frozen=True)
class Burst(LoadShape):
    def requests(self, value, num_requests):
        return int(value)

    def in_flight(self, value):
        return float(value)

    def send_times(self, value, n, rng, arrivals="constant", gamma_shape=1.0):
        return np.zeros(n)

    def simulated_requests(self, value, num_requests):
        return int(value)

    def closed_form(self, ctx, isl, osl, value, num_requests):
        return ctx.burst(isl, osl, value)

    def throughput_cap(self, value, e2e_s):
        return value / e2e_s


SHAPE = Burst(kind="burst", title="all N submitted at once", regime="burst", fit_sigma=0.15)
