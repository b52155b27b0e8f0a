"""Load profiles: which load points to run, and how one load point sends its requests.

sync            one request at a time
concurrency:C   C requests in flight, a new one as soon as one finishes (closed loop)
burst:N         all N submitted at once; throughput = completed / time until the last finishes
rate:R          arrivals at R per second, evenly spaced (constant), Poisson or gamma (open loop)
sweep           sync, then a burst, then K rates evenly spaced strictly between the two measured
                request rates (guidellm's and Modal's sweep)
Lists are allowed: ``concurrency:1,4,16``, ``rate:2,4``; two values with one label (rates equal to 6
significant digits) are refused. Each point sends ``warmup`` requests first (all at once, excluded from
its metrics), then its requests until the count or duration is reached.

The default request timeout of a point (``request_timeout_s``) comes from its load: 60 s, plus the time
a very slow server (1,000 tokens/s in all) needs for every request that can be in flight at once to
ask for the longest input + output of the workload. One request at a time of 1,024 + 128 tokens gets
61 s; a burst of 1,000 such requests 1,212 s.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from capacity.errors import WorkloadError
from capacity.load import Load, parse_loads
from validate.client import Client
from validate.errors import UsageError, ValidateError
from validate.loads import sender
from validate.results import PointResult, RequestRecord
from capacity.loads.draws import GAMMA_SHAPE_MAX, GAMMA_SHAPE_MIN, SEED_MAX
from validate.workload import PromptMaker

LoadPoint = Load  # one load grammar: capacity/load.py (kind, value, label, parse)


class LoadOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    num_requests: int | None = Field(default=100, gt=0)
    duration_s: float | None = Field(default=None, gt=0)
    warmup: int = Field(default=2, ge=0)
    burst_size: int | None = Field(default=None, gt=0, description="the sweep's burst (default num_requests)")
    sweep_rates: int = Field(default=5, ge=0)
    arrivals: Literal["constant", "poisson", "gamma"] = "constant"
    gamma_shape: float = Field(default=1.0, ge=GAMMA_SHAPE_MIN, le=GAMMA_SHAPE_MAX,
                               description="gamma arrivals: shape (1 = Poisson, < 1 burstier)")
    seed: int = Field(default=0, ge=0, le=SEED_MAX)
    max_concurrency: int | None = Field(default=None, gt=0, description="cap on in-flight requests (rate)")


def parse_profile(text: str) -> list[LoadPoint] | Literal["sweep"]:
    """`sweep`, or capacity.load's grammar with lists: sync, concurrency:C[,C…], burst:N[,N…], rate:R[,R…]."""
    if text.strip() == "sweep":
        return "sweep"
    try:
        return parse_loads(text)
    except WorkloadError as exc:
        raise UsageError(f"--profile {text}: {str(exc).removeprefix(f'bad load {text!r}: ')}") from None


def request_timeout_s(point: LoadPoint, options: LoadOptions, max_total_tokens: int) -> float:
    """Default timeout of one request at this point: 60 s + in-flight requests x longest request / 1,000 tokens/s."""
    in_flight = point.shape.in_flight(point.value)
    if in_flight is None:  # by arrivals (rate): capped, or every request of the point (count, or arrivals over the duration)
        bounds = [float(options.max_concurrency or math.inf), float(options.num_requests or math.inf)]
        if options.duration_s:
            bounds.append(math.ceil(float(point.value or 1) * options.duration_s))
        in_flight = min(bounds) if math.isfinite(min(bounds)) else 1.0
    return 60.0 + in_flight * max(max_total_tokens, 1) / 1_000.0


def sweep_rates_per_s(sync: PointResult, burst: PointResult, count: int) -> list[float]:
    """``count`` rates evenly spaced strictly between the sync and burst request rates."""
    if sync.requests_per_s <= 0 or burst.requests_per_s <= 0:
        raise ValidateError(
            f"sweep needs completed sync and burst points to place its rates (sync {sync.requests_per_s:.3g}/s, "
            f"burst {burst.requests_per_s:.3g}/s; errors: {'; '.join(sync.errors + burst.errors)[:300]}); rerun the same "
            "command to measure them again")
    return [float(r) for r in np.linspace(sync.requests_per_s, burst.requests_per_s, count + 2)[1:-1]]


def plan(profile: str, options: LoadOptions, done: dict[str, PointResult]) -> Iterator[LoadPoint]:
    """The load points in order. For a sweep the rates come from ``done`` (measured or resumed)."""
    points = parse_profile(profile)
    if points != "sweep":
        yield from points
        return
    sync = LoadPoint(kind="sync")
    burst = LoadPoint(kind="burst", value=options.burst_size or options.num_requests or 100)
    yield sync
    yield burst
    rates = [LoadPoint(kind="rate", value=r) for r in sweep_rates_per_s(done[sync.label], done[burst.label],
                                                                          options.sweep_rates)]
    if len({p.label for p in rates}) < len(rates) or {sync.label, burst.label} & {p.label for p in rates}:
        raise ValidateError(f"sweep rates {', '.join(p.label for p in rates)} are not distinct to 6 significant "
                            f"digits (sync {done[sync.label].requests_per_s:.6g}/s, burst "
                            f"{done[burst.label].requests_per_s:.6g}/s); use fewer --sweep-rates or a larger burst")
    yield from rates


async def run_point(client: Client, point: LoadPoint, maker: PromptMaker, options: LoadOptions,
                    on_request: Callable[[RequestRecord], None] | None = None,
                    timeout_s: float | None = None,
                    on_start: Callable[[], Awaitable[None]] | None = None) -> list[RequestRecord]:
    """Send one load point's requests (after its warm-up) and return their records. ``timeout_s``: of each
    request (default: the client's); ``on_start`` is awaited once the warm-up is over, just before the first
    measured request."""
    label = point.label
    maker.start_point()
    if options.warmup:
        warm_t0 = time.perf_counter()
        await asyncio.gather(*(client.send(maker.next(warmup=True), "warmup", warm_t0, timeout_s)
                               for _ in range(options.warmup)))
    if on_start is not None:
        await on_start()
    client.max_in_flight = 0
    count = point.shape.requests(point.value, options.num_requests)
    records: list[RequestRecord] = []
    t0 = time.perf_counter()
    deadline = t0 + options.duration_s if options.duration_s and not point.shape.counts_itself(point.value) else None

    refused = [False]  # the server is gone: stop sending, the runner reports it

    def more(sent: int) -> bool:
        return (not refused[0] and (count is None or sent < count)
                and (deadline is None or time.perf_counter() < deadline))

    async def send_one() -> None:
        record = await client.send(maker.next(), label, t0, timeout_s)
        records.append(record)
        refused[0] = refused[0] or (record.error or "").startswith("ConnectError")
        if on_request:
            on_request(record)

    await sender(point.kind)(point.value, options, more, send_one, count)  # validate/loads/: one sender per shape
    return records
