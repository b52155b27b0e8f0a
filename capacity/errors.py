"""Errors raised by the capacity model.

CapacityError
 ├── UnknownGpuError        an id that is not in the GPU catalog (closest ids suggested)
 ├── UnknownModelError      an id that is not in the model catalog and not a readable path
 ├── ConfigError            a config.json or spec file that is malformed or unsupported
 ├── WorkloadError          lengths, loads or prices that are negative, zero or absurd
 ├── InputError             a command-line flag with a bad value (named in the message)
 ├── ResultError            a result that came out non-finite or negative (refused, never printed)
 └── DoesNotFitError        weights and minimum KV cache do not fit in the GPUs' memory

The CLI prints ``Type: message`` on one line and exits with code 2; nothing shows a traceback.
"""

from __future__ import annotations

import difflib
import math
from typing import Any


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


class InputError(CapacityError):
    pass


class ResultError(CapacityError):
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


def one_line(text: str, limit: int = 600) -> str:
    """Newlines and runs of blanks collapsed to one space, cut to `limit` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def show_value(v: Any) -> str:
    """A short description of an offending value for an error message (never its whole repr)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        digits = len(str(abs(v))) if abs(v) < 10**1000 else 1001
        return f"a {digits:,}-digit number" if digits > 20 else str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return repr(v)
    if isinstance(v, str):
        return repr(v) if len(v) <= 40 else repr(v[:40]) + "…"
    if isinstance(v, (list, tuple)) and not v:
        return "an empty list"
    if isinstance(v, (list, tuple)):
        return f"a list of {len(v):,} item{'' if len(v) == 1 else 's'}"
    if isinstance(v, dict):
        return "an object"
    return f"a {type(v).__name__}"


def flatten_validation_error(exc: Any, rename: dict[str, str] | None = None) -> str:
    """A pydantic ValidationError as one line: the first error's field path, what was wrong and the value
    given. `rename` maps field names to what the user wrote (a flag, a file key)."""
    err = exc.errors(include_url=False)[0]
    loc = [str(x) for x in err.get("loc", ())]
    if loc and rename and loc[0] in rename:
        loc[0] = rename[loc[0]]
    where = ".".join(loc)
    msg = str(err.get("msg", "invalid value"))
    if err.get("type") == "missing":
        return f"{where}: lacks required field"
    if err.get("type") == "value_error":  # a rule between fields: its own words, no input to show
        msg, got = msg.removeprefix("Value error, "), ""
        field, sep, rest = msg.partition(": ")  # a rule's message names its field first: shown as the user wrote it
        if not where and sep and rename and field in rename:
            msg = f"{rename[field]}: {rest}"
    else:
        msg = msg.replace("Input should be ", "expected ", 1)
        got = "" if "got " in msg or "input" not in err else f", got {show_value(err['input'])}"
    extra = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return one_line(f"{where + ': ' if where else ''}{msg}{got}{extra}")
