"""concurrency:C: C clients, each sending its next request as soon as its last one ends (a closed loop)."""

from __future__ import annotations

from dataclasses import dataclass

from capacity.loads.base import LoadShape


@dataclass(frozen=True)
class Concurrency(LoadShape):
    def in_flight(self, value):
        return float(value)

    def clients(self, value):
        return int(value)

    def regime_at(self, value):
        return "sync" if value <= 1 else self.regime

    def simulated_requests(self, value, num_requests):
        return num_requests or max(20 * int(value), 200)

    def closed_form(self, ctx, isl, osl, value, num_requests):
        return ctx.closed_loop(isl, osl, value, num_requests)

    def closed_form_gaps(self, arrivals, think_time_s):
        return ["think time"] if think_time_s > 0 else []

    def drifts(self, value):
        return value > 1

    def throughput_cap(self, value, e2e_s):
        return value / e2e_s


SHAPE = Concurrency(kind="concurrency", title="C requests in flight, a new one as soon as one finishes (closed loop)",
                    regime="closed loop", fit_sigma=0.06, endless=True)
