"""The engines the model knows, one module each (`vllm`, `sglang`, `trtllm`, `transformers`, `ideal`), found by
name: a module of this package that defines `ENGINE` is an engine. Adding one is adding its file here (and, for
an engine `validate` launches, its process half in validate/engines/).

Light (pydantic and the standard library): `validate` imports it where the capacity model cannot run.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from capacity.engines.base import Engine, EngineProfile, Flag, FlagTable, argv_value
from capacity.errors import WorkloadError

NOT_ENGINES = frozenset({"base", "flags"})


def names() -> tuple[str, ...]:
    """Every engine's name: vLLM first (the default), the ideal roofline last, the others alphabetically."""
    found = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name not in NOT_ENGINES)
    return tuple(sorted(found, key=lambda n: (n != "vllm", n == "ideal", n)))


def get(name: str) -> Engine:
    """The engine object of `name` (case-insensitive); WorkloadError names the known ones."""
    key = name.lower()
    if key not in names():
        raise WorkloadError(f"unknown engine '{name}'; choose one of {', '.join(names())}")
    return importlib.import_module(f"{__name__}.{key}").ENGINE


def engine_profile(name: str, gpu_memory_bytes: float | None = None, tp: int = 1, **overrides: Any) -> EngineProfile:
    """The engine's limits on a GPU of `gpu_memory_bytes` at this TP (None: its reference GPU); overrides
    (None = keep) come last."""
    return get(name).profile(gpu_memory_bytes, tp, **overrides)


__all__ = ["Engine", "EngineProfile", "Flag", "FlagTable", "argv_value", "engine_profile", "get", "names"]
