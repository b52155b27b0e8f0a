"""sync: one request at a time (a closed loop of one client)."""

from __future__ import annotations

from dataclasses import dataclass

from capacity.loads.base import LoadShape


@dataclass(frozen=True)
class Sync(LoadShape):
    def in_flight(self, value):
        return 1.0

    def clients(self, value):
        return 1

    def closed_form(self, ctx, isl, osl, value, num_requests):
        return ctx.closed_loop(isl, osl, 1)

    def throughput_cap(self, value, e2e_s):
        return 1.0 / e2e_s


SHAPE = Sync(kind="sync", title="one request at a time", regime="sync", fit_sigma=0.03, takes_value=False,
             aliases=("synchronous",))
