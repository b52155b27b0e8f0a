"""Engine adapters: each builds a server command from one EngineConfig and parses its startup facts.

All of them share one launcher (``launcher.EngineProcess``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from validate.engines import sglang, transformers, trtllm, vllm
from validate.engines.config import EngineCommand, EngineConfig, EngineFacts
from validate.errors import UsageError

ENGINES = ("vllm", "sglang", "trtllm", "transformers")


def build_command(engine: str, config: EngineConfig, workdir: Path) -> EngineCommand:
    if engine == "vllm":
        return vllm.build_command(config)
    if engine == "sglang":
        return sglang.build_command(config)
    if engine == "trtllm":
        return trtllm.build_command(config, workdir)
    if engine == "transformers":
        return transformers.build_command(config)
    raise UsageError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")


def parse_facts(engine: str, log_text: str) -> EngineFacts:
    parsers = {"vllm": vllm.parse_facts, "sglang": sglang.parse_facts, "trtllm": trtllm.parse_facts,
               "transformers": transformers.parse_facts}
    return parsers[engine](log_text)


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


def dialect(engine: str) -> str:
    """How the client words a request for this engine: 'openai' (token-id prompts) or 'transformers'."""
    return transformers.DIALECT if engine == "transformers" else "openai"


__all__ = ["ENGINES", "EngineCommand", "EngineConfig", "EngineFacts", "build_command", "dialect", "installed_version",
           "parse_facts"]
