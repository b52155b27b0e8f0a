"""rate:R: requests sent on a schedule of R per second, evenly spaced (constant), Poisson or gamma, optionally
capped in flight (--max-concurrency). The gaps are capacity.loads.draws' stream for the seed, the one the step
simulator draws a simulated run's arrivals from."""

from __future__ import annotations

import asyncio
import time

from capacity.loads.draws import arrivals_rng, gaps

BLOCK = 256  # gaps drawn at a time (the same values as one at a time)


async def send(value, options, more, send_one, count) -> None:
    rate_per_s = float(value or 1.0)
    rng = arrivals_rng(options.seed)
    drawn: list[float] = []
    limit = asyncio.Semaphore(options.max_concurrency) if options.max_concurrency else None

    async def limited() -> None:
        if limit is None:
            await send_one()
            return
        async with limit:
            await send_one()

    tasks: list[asyncio.Task[None]] = []
    next_at = time.perf_counter()
    while more(len(tasks)):
        delay = next_at - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
            if not more(len(tasks)):
                break
        tasks.append(asyncio.create_task(limited()))
        if not drawn:
            drawn = gaps(rng, 1.0 / rate_per_s, BLOCK, options.arrivals, options.gamma_shape).tolist()[::-1]
        next_at += drawn.pop()
    await asyncio.gather(*tasks)
