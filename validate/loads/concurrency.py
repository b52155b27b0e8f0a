"""concurrency:C: C workers, each sending its next request as soon as its last one ends."""

from __future__ import annotations

import asyncio


async def send(value, options, more, send_one, count) -> None:
    sent = [0]

    async def worker() -> None:
        while more(sent[0]):
            sent[0] += 1
            await send_one()

    await asyncio.gather(*(worker() for _ in range(int(value or 1))))
