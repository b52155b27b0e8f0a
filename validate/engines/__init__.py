"""Engine adapters (the process half): each builds a server command from one EngineConfig and parses its startup
facts. The model half of each engine, with the flag table both halves read, is capacity/engines/<name>.py.

An adapter is the module of this package named like its engine, with ``build_command(config, workdir)`` and
``parse_facts(log_text)`` (and ``DIALECT`` where requests are worded differently). All of them share one
launcher (``launcher.EngineProcess``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
from pathlib import Path
from types import ModuleType

import capacity.engines as capacity_engines
from validate.engines.config import EngineCommand, EngineConfig, EngineFacts
from validate.errors import UsageError


def engine_names() -> tuple[str, ...]:
    """The engines `validate` can launch: those of capacity.engines that have an adapter here."""
    return tuple(n for n in capacity_engines.names() if importlib.util.find_spec(f"{__name__}.{n}") is not None)


ENGINES = engine_names()


def adapter(engine: str) -> ModuleType:
    if engine not in engine_names():
        raise UsageError(f"unknown engine {engine!r}; choose one of {', '.join(engine_names())}")
    return importlib.import_module(f"{__name__}.{engine}")


def build_command(engine: str, config: EngineConfig, workdir: Path) -> EngineCommand:
    return adapter(engine).build_command(config, workdir)


def parse_facts(engine: str, log_text: str) -> EngineFacts:
    return adapter(engine).parse_facts(log_text)


def installed_version(command: EngineCommand) -> str | None:
    """The engine's version from its own interpreter, for engines whose log does not say it."""
    if not command.version_argv:
        return None
    try:
        result = subprocess.run(command.version_argv, capture_output=True, text=True, timeout=60, check=False,
                                env={**os.environ, **command.env})
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() or None if result.returncode == 0 else None


def metric_names(engine: str | None) -> dict[str, tuple[str, ...]]:
    """The engine's Prometheus names per telemetry quantity (its adapter's METRICS); for a server whose engine is
    not known (attach mode), every adapter's names (they are prefixed per engine, so they do not collide)."""
    if engine in engine_names():
        return dict(getattr(adapter(engine), "METRICS", {}))
    merged: dict[str, tuple[str, ...]] = {}
    for name in engine_names():
        for quantity, names in getattr(adapter(name), "METRICS", {}).items():
            merged[quantity] = merged.get(quantity, ()) + tuple(names)
    return merged


def dialect(engine: str) -> str:
    """How the client words a request for this engine: 'openai' (token-id prompts) or 'transformers'."""
    return getattr(adapter(engine), "DIALECT", "openai")


__all__ = ["ENGINES", "EngineCommand", "EngineConfig", "EngineFacts", "adapter", "build_command", "dialect",
           "engine_names", "installed_version", "parse_facts"]
