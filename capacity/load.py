"""Load specifications: 'sync', 'concurrency:C', 'burst:N', 'rate:R' (requests per second): the one grammar the
model (`capacity estimate --load`), the validator (`validate --profile`, which adds lists and `sweep`) and the
campaign specs read. Each kind is a load shape (capacity/loads/), which says what values it takes and how its
label reads. A load's label (`str(load)`, rates to 6 significant digits) is how measured points are stored,
resumed and matched to predictions."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from capacity.errors import WorkloadError
from capacity.loads import SHAPES, LoadShape, shape
from capacity.loads.base import USAGE


class Load(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: str
    value: float = Field(default=1.0, gt=0, description="clients, requests in the burst, or requests/s (sync: 1)")

    @field_validator("kind")
    @classmethod
    def _known(cls, kind: str) -> str:
        try:
            shape(kind)
        except WorkloadError as err:  # pydantic reports a ValueError as a validation error
            raise ValueError(str(err)) from None
        return kind

    @property
    def shape(self) -> LoadShape:
        return shape(self.kind)

    def __str__(self) -> str:
        return self.shape.label(self.value)

    @property
    def label(self) -> str:
        return str(self)


def _by_name(name: str) -> LoadShape | None:
    return next((s for s in SHAPES.values() if name == s.kind or name in s.aliases), None)


def parse_load(text: str) -> Load:
    if len(text) > 100:
        raise WorkloadError(f"bad load '{text[:40]}…': {USAGE}")
    t = text.strip().lower()
    alone = _by_name(t)
    if alone is not None and not alone.takes_value:
        return Load(kind=alone.kind, value=1)
    kind, _, raw = t.partition(":")
    s = _by_name(kind)
    if s is None or not s.takes_value or not raw:
        raise WorkloadError(f"bad load '{text}': {USAGE}")
    try:
        value = float(raw)
    except ValueError:
        raise WorkloadError(f"bad load '{text}': '{raw}' is not a number") from None
    if not value > 0 or value != value or value == float("inf"):
        raise WorkloadError(f"bad load '{text}': the value must be a positive finite number")
    s.check(text, value)
    return Load(kind=s.kind, value=value)


def load_of(label: str) -> Load | None:
    """The load a stored point's label names, or None for a label no load shape reads (an imported run's)."""
    try:
        return parse_load(label)
    except WorkloadError:
        return None


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
