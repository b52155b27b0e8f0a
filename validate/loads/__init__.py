"""How a load point's requests are sent: one sender per load shape (one file each). The shape itself (its grammar,
how many requests a point sends, how the model prices it) is in capacity/loads/.

A sender gets the point's value, its options, `more(sent)` (False once the count, the duration or the server is
done) and `send_one()` (send one request and record it), and returns when every request it sent has ended.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from validate.loads import burst, concurrency, rate, sync

if TYPE_CHECKING:
    from validate.profiles import LoadOptions

Sender = Callable[[float, "LoadOptions", Callable[[int], bool], Callable[[], Awaitable[Any]], "int | None"], Awaitable[None]]

SENDERS: dict[str, Sender] = {"sync": sync.send, "concurrency": concurrency.send, "burst": burst.send, "rate": rate.send}


def sender(kind: str) -> Sender:
    try:
        return SENDERS[kind]
    except KeyError:
        raise KeyError(f"no sender for load kind {kind!r} (validate/loads/)") from None


def register(kind: str, send: Sender) -> Sender:
    if kind in SENDERS:
        raise ValueError(f"load kind {kind!r} has a sender")
    SENDERS[kind] = send
    return send


def unregister(kind: str) -> None:
    SENDERS.pop(kind, None)


__all__ = ["SENDERS", "Sender", "register", "sender", "unregister"]
