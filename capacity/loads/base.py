"""What a load shape is: its grammar (`kind:value`), what a point of it sends, and how the model prices it.

A shape is one object (one file under capacity/loads/ each); the validator's half (how a point's requests are sent)
is one file under validate/loads/. Everything else reads the shape instead of testing its kind: the grammar
(capacity.load), the closed forms (capacity.estimate.run_load), the step simulator's traffic (capacity.loadmodel.simulate),
the ideal bound, the accuracy card's regimes, the calibration's noise per load and the validator's request counts
and timeouts. This module imports no model code: machines that only run `validate` read it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from capacity.errors import WorkloadError

if TYPE_CHECKING:  # the model's half, imported where a shape prices a load
    from capacity.loadmodel.workload import LoadContext, LoadResult

USAGE = "use sync, concurrency:C, burst:N or rate:R"
MAX_COUNT = 10**7  # clients or requests in one point


@dataclass(frozen=True)
class LoadShape:
    """One load shape. Subclasses set the facts and implement `closed_form` (and `send_times` for arrivals)."""

    kind: str
    title: str  # what a point of it does, in words
    regime: str  # the accuracy card's regime of its points
    fit_sigma: float  # relative noise of its measured points, for the calibration's weights
    takes_value: bool = True  # False: the kind alone ('sync')
    whole: bool = True  # the value counts clients or requests
    value_range: tuple[float, float] = (1.0, float(MAX_COUNT))
    endless: bool = False  # without a request count the load never ends: its answer is the steady state
    aliases: tuple[str, ...] = ()

    # ------------------------------------------------------------------ grammar
    def label(self, value: float) -> str:
        """How a point is stored, resumed and matched to predictions (rates to 6 significant digits)."""
        if not self.takes_value:
            return self.kind
        return f"{self.kind}:{int(value)}" if self.whole else f"{self.kind}:{value:.6g}"

    def check(self, text: str, value: float) -> None:
        """A WorkloadError naming what is wrong with `value` for this shape."""
        lo, hi = self.value_range
        if self.whole and value != int(value):
            raise WorkloadError(f"bad load '{text}': {self.kind} takes a whole number")
        if self.whole and value > hi:
            raise WorkloadError(f"bad load '{text}': {self.kind} of {value:g} requests is absurd (max {hi:,.0f})")
        if not self.whole and not lo <= value <= hi:
            raise WorkloadError(f"bad load '{text}': a {self.kind} from {lo:g} to {hi:,.0f} requests/s")

    # ------------------------------------------------------------------ what a point sends
    def requests(self, value: float, num_requests: int | None) -> int | None:
        """Requests a measured point sends (None: until its duration ends)."""
        return num_requests

    def counts_itself(self, value: float) -> bool:
        """True when the load's value is its request count (a burst): a point of it ignores any duration."""
        return self.requests(value, None) is not None

    def in_flight(self, value: float) -> float | None:
        """Requests in flight at once, when the shape fixes it (None: the arrivals decide)."""
        return None

    def clients(self, value: float) -> int | None:
        """Closed-loop clients, each resending when its request ends (None: requests are sent on a schedule)."""
        return None

    def send_times(self, value: float, n: int, rng: np.random.Generator, arrivals: str = "constant",
                   gamma_shape: float = 1.0) -> np.ndarray | None:
        """When each of n requests is sent, from 0 (None for closed loops: a client sends when it is free)."""
        return None

    def regime_at(self, value: float) -> str:
        return self.regime

    def per_lane(self, value: float, lanes: int) -> tuple[tuple[float, int], ...]:
        """((the value a lane sees, lanes that see it), ...) when an engine runs `lanes` batches side by side (a
        pipeline's batches in flight, capacity/plan.Plan.lanes): clients or requests dealt out as evenly as whole
        numbers go (7 over 2 lanes: one lane of 4 and one of 3), a rate split evenly, and a kind without a value
        (sync) keeping one lane busy. The values add up to `value`."""
        if not self.takes_value:
            return ((value, 1),)
        if not self.whole:
            return ((value / max(int(lanes), 1), max(int(lanes), 1)),)
        busy = max(1, min(int(lanes), int(value)))
        q, r = divmod(int(value), busy)
        return tuple((float(v), k) for v, k in ((q + 1, r), (q, busy - r)) if k > 0)

    # ------------------------------------------------------------------ the model's half
    def simulated_requests(self, value: float, num_requests: int | None) -> int:
        """Requests the step simulator runs for one point (the point's own count when it has one)."""
        return num_requests or 10

    def closed_form(self, ctx: LoadContext, isl, osl, value, num_requests: int | None) -> LoadResult:
        raise NotImplementedError

    def closed_form_gaps(self, arrivals: str, think_time_s: float) -> list[str]:
        """What the closed forms cannot express for this shape under these options (the simulator can)."""
        return []

    def drifts(self, value: float) -> bool:
        """True when a point's requests drift out of lockstep (the closed forms price lockstep waves)."""
        return False

    def throughput_cap(self, value: float, e2e_s: float) -> float:
        """Requests/s the load itself allows at an end-to-end latency `e2e_s` (the ideal bound's load limit)."""
        raise NotImplementedError
