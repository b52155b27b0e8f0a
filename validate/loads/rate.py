"""rate:R: requests sent on a schedule of R per second, evenly spaced (constant) or Poisson, optionally capped
in flight (--max-concurrency)."""

from __future__ import annotations

import asyncio
import time

import numpy as np


async def send(value, options, more, send_one, count) -> None:
    rate_per_s = float(value or 1.0)
    rng = np.random.default_rng(options.seed)
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
        gap = rng.exponential(1.0 / rate_per_s) if options.arrivals == "poisson" else 1.0 / rate_per_s
        next_at += gap
    await asyncio.gather(*tasks)
