"""The load shapes, one object per shape (one file each): sync, concurrency:C, burst:N, rate:R.

`shape(kind)` is the only way code asks what a load does; `register` adds a shape (a test's toy shape, a plugin).
The validator's half of each shape (how its requests are sent) is in validate/loads/.
"""

from __future__ import annotations

from capacity.errors import WorkloadError
from capacity.loads import burst, concurrency, rate, sync
from capacity.loads.base import LoadShape

SHAPES: dict[str, LoadShape] = {s.kind: s for s in (sync.SHAPE, concurrency.SHAPE, burst.SHAPE, rate.SHAPE)}


def shape(kind: str) -> LoadShape:
    try:
        return SHAPES[kind]
    except KeyError:
        raise WorkloadError(f"unknown load kind {kind!r}: one of {', '.join(SHAPES)}") from None


def register(s: LoadShape) -> LoadShape:
    """Add a load shape (its kind must be new)."""
    if s.kind in SHAPES:
        raise ValueError(f"load kind {s.kind!r} exists")
    SHAPES[s.kind] = s
    return s


def unregister(kind: str) -> None:
    SHAPES.pop(kind, None)


__all__ = ["LoadShape", "SHAPES", "register", "shape", "unregister"]
