"""Engine profiles by their old names: the engine objects live in capacity/engines/ (one module per engine);
this module keeps `engine_profile`, `EngineProfile`, `sglang_defaults`, `VLLM`, `SGLANG`, `IDEAL` and `PROFILES`
importable from here."""

from __future__ import annotations

from capacity.engines import engine_profile, names
from capacity.engines.base import EngineProfile
from capacity.engines.sglang import sglang_defaults

VLLM = engine_profile("vllm")
SGLANG = engine_profile("sglang")  # on its reference GPU (the H200), computed by sglang_defaults
IDEAL = engine_profile("ideal")
PROFILES = {name: engine_profile(name) for name in names()}

__all__ = ["EngineProfile", "IDEAL", "PROFILES", "SGLANG", "VLLM", "engine_profile", "sglang_defaults"]
