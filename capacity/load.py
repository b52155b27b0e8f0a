"""Load specifications: 'sync', 'concurrency:C', 'burst:N', 'rate:R' (requests per second): the one grammar the
model (`capacity estimate --load`), the validator (`validate --profile`, which adds lists and `sweep`) and the
campaign specs read. A load's label (`str(load)`, rates to 6 significant digits) is how measured points are stored,
resumed and matched to predictions."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from capacity.errors import WorkloadError

LoadKind = Literal["sync", "concurrency", "burst", "rate"]
RATE_MIN_PER_S = 1e-3  # 3.6 requests an hour: below that no server is sized by its load
RATE_MAX_PER_S = 1e7


class Load(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: LoadKind
    value: float = Field(default=1.0, gt=0, description="clients, requests in the burst, or requests/s (sync: 1)")

    def __str__(self) -> str:
        if self.kind == "sync":
            return "sync"
        return f"rate:{self.value:.6g}" if self.kind == "rate" else f"{self.kind}:{int(self.value)}"

    @property
    def label(self) -> str:
        return str(self)


def parse_load(text: str) -> Load:
    if len(text) > 100:
        raise WorkloadError(f"bad load '{text[:40]}…': use sync, concurrency:C, burst:N or rate:R")
    t = text.strip().lower()
    if t in ("sync", "synchronous"):
        return Load(kind="sync", value=1)
    kind, _, raw = t.partition(":")
    if kind not in ("concurrency", "burst", "rate") or not raw:
        raise WorkloadError(f"bad load '{text}': use sync, concurrency:C, burst:N or rate:R")
    try:
        value = float(raw)
    except ValueError:
        raise WorkloadError(f"bad load '{text}': '{raw}' is not a number") from None
    if not value > 0 or value != value or value == float("inf"):
        raise WorkloadError(f"bad load '{text}': the value must be a positive finite number")
    if kind == "rate" and not RATE_MIN_PER_S <= value <= RATE_MAX_PER_S:
        raise WorkloadError(f"bad load '{text}': a rate from {RATE_MIN_PER_S:g} to {RATE_MAX_PER_S:,.0f} requests/s")
    if kind != "rate" and value != int(value):
        raise WorkloadError(f"bad load '{text}': {kind} takes a whole number")
    if kind != "rate" and value > 10**7:
        raise WorkloadError(f"bad load '{text}': {kind} of {value:g} requests is absurd (max 10,000,000)")
    return Load(kind=kind, value=value)  # type: ignore[arg-type]


def parse_loads(text: str) -> list[Load]:
    """'sync', or a kind with one or more comma-separated values ('concurrency:1,4,16', 'rate:2,4.5'). Two values
    that share a label (rates equal to 6 significant digits) are refused: points are stored by label."""
    kind, _, raw = text.strip().partition(":")
    if not raw or "," not in raw:
        return [parse_load(text)]
    loads = [parse_load(f"{kind}:{v.strip()}") for v in raw.split(",") if v.strip()]
    seen: dict[str, float] = {}
    for load in loads:
        if load.label in seen:
            raise WorkloadError(f"{seen[load.label]:.15g} and {load.value:.15g} are the same load point {load.label} "
                                "(labels keep 6 significant digits); give distinct values")
        seen[load.label] = load.value
    return loads
