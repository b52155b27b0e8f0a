"""The point grammar of a device campaign spec (scripts/device/specs/*.json, run by scripts/device/campaign.py and
predicted beforehand by scripts/predict_spec.py): one parser for both, over capacity.load's load grammar.

    sync:N          N requests one at a time
    concurrency:C:N N requests from C clients in a closed loop
    burst:N         N requests at once
    warmburst:N     a burst that is not recorded (kernels compile for large batches first)
    warmprate:R:N:P up to P unrecorded passes of prate:R:N, stopping after the first pass that compiled no kernel
                    (Poisson arrivals compose batches a burst never makes; each composition may compile kernels)
    prate:R:N       N requests at R per second, Poisson arrivals
    crate:R:N       the same, evenly spaced
    grate:R:N:K     the same, gamma gaps of shape K (K = 1 is Poisson, below 1 burstier)
    rates:K:S       K rates evenly spaced between the measured sync and burst rates, S seconds each
    profsync:N      N requests one at a time under the engine's torch profiler (its trace summarized; not recorded
                    as a measurement: the profiler slows the host)
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from capacity.errors import WorkloadError
from capacity.load import Load, parse_load
from capacity.loads.draws import GAMMA_SHAPE_MAX, GAMMA_SHAPE_MIN
from validate.errors import UsageError

PointKind = Literal["sync", "concurrency", "burst", "warmburst", "warmprate", "prate", "crate", "grate", "rates",
                    "profsync"]
# kind: (load kind, the fields after the kind)
GRAMMAR: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "sync": ("sync", ("num_requests",)),
    "concurrency": ("concurrency", ("value", "num_requests")),
    "burst": ("burst", ("value",)),
    "warmburst": ("burst", ("value",)),
    "warmprate": ("rate", ("value", "num_requests", "passes")),
    "prate": ("rate", ("value", "num_requests")),
    "crate": ("rate", ("value", "num_requests")),
    "grate": ("rate", ("value", "num_requests", "shape")),
    "rates": (None, ("count", "seconds")),
    "profsync": ("sync", ("num_requests",)),
}


class SpecPoint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    kind: PointKind
    load: Load | None = None  # None for `rates`: placed once sync and burst are measured
    num_requests: int | None = None  # None for bursts: the burst's own size
    arrivals: Literal["constant", "poisson", "gamma"] = "constant"
    gamma_shape: float = 1.0  # grate: the gaps' gamma shape
    recorded: bool = True
    count: int | None = None
    seconds: float | None = None
    passes: int = 1  # warmprate: the most unrecorded passes
    profiled: bool = False  # profsync: run under the engine's profiler


def parse_point(text: str) -> SpecPoint:
    """One point of a spec; a bad one is a one-line UsageError naming it."""
    kind, *rest = text.strip().split(":")
    if kind not in GRAMMAR:
        raise UsageError(f"spec point {text!r}: unknown kind {kind!r} (use {', '.join(GRAMMAR)})")
    load_kind, names = GRAMMAR[kind]
    if len(rest) != len(names):
        raise UsageError(f"spec point {text!r}: {kind} takes {':'.join(n.upper() for n in names)}")
    try:
        fields = {n: (float(v) if n in ("value", "seconds", "shape") else int(v)) for n, v in zip(names, rest)}
    except ValueError:
        raise UsageError(f"spec point {text!r}: expected numbers after {kind}") from None
    try:
        load = None if load_kind is None else parse_load(
            "sync" if load_kind == "sync" else f"{load_kind}:{fields['value']:g}")
    except WorkloadError as exc:
        raise UsageError(f"spec point {text!r}: {exc}") from None
    n = fields.get("num_requests")
    if (n is not None and n < 1) or any(fields.get(k) is not None and fields[k] < 1 for k in ("count", "passes")):
        raise UsageError(f"spec point {text!r}: counts must be at least 1")
    if not GAMMA_SHAPE_MIN <= fields.get("shape", 1.0) <= GAMMA_SHAPE_MAX:
        raise UsageError(f"spec point {text!r}: the gamma shape must be from {GAMMA_SHAPE_MIN:g} to {GAMMA_SHAPE_MAX:g}")
    return SpecPoint(text=text, kind=kind, load=load, num_requests=n,
                     arrivals="poisson" if kind in ("prate", "warmprate") else "gamma" if kind == "grate" else "constant",
                     gamma_shape=fields.get("shape", 1.0),
                     recorded=not kind.startswith(("warm", "prof")), count=fields.get("count"), seconds=fields.get("seconds"),
                     passes=fields.get("passes", 1), profiled=kind == "profsync")
