"""sync: one request at a time."""

from __future__ import annotations


async def send(value, options, more, send_one, count) -> None:
    sent = 0
    while more(sent):
        sent += 1
        await send_one()
