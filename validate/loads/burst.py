"""burst:N: all N requests submitted at once."""

from __future__ import annotations

import asyncio


async def send(value, options, more, send_one, count) -> None:
    await asyncio.gather(*(send_one() for _ in range(count or 0)))
