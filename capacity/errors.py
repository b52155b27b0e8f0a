"""Errors raised by the capacity model.

CapacityError
 ├── UnknownGpuError        an id that is not in the GPU catalog (closest ids suggested)
 ├── UnknownModelError      an id that is not in the model catalog and not a readable path
 ├── ConfigError            a config.json or spec file that is malformed or unsupported
 ├── WorkloadError          lengths, loads or prices that are negative, zero or absurd
 └── DoesNotFitError        weights and minimum KV cache do not fit in the GPUs' memory

The CLI prints ``Type: message`` and exits with code 2; nothing shows a traceback.
"""

from __future__ import annotations

import difflib


class CapacityError(Exception):
    """Base class of every error the capacity model raises on bad input."""


class UnknownGpuError(CapacityError):
    pass


class UnknownModelError(CapacityError):
    pass


class ConfigError(CapacityError):
    pass


class WorkloadError(CapacityError):
    pass


class DoesNotFitError(CapacityError):
    pass


def closest(name: str, choices: list[str], n: int = 3) -> str:
    """A ' (did you mean: a, b?)' hint, or '' when nothing is close."""
    lowered = {c.lower(): c for c in choices}
    hits = difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=0.4)
    if not hits:
        hits = [c for low, c in lowered.items() if name.lower() in low][:n]
    else:
        hits = [lowered[h] for h in hits]
    return f" (did you mean: {', '.join(hits)}?)" if hits else ""
