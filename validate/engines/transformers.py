"""Hugging Face Transformers as a baseline engine: ``transformers serve DIR`` (OpenAI-compatible).

It serves ``/v1/completions`` (transformers >= 5) but takes text prompts only and rejects unknown
fields, so the client uses its "transformers" dialect (text prompt + ``generation_config``). It
loads real weights: a folder without weights cannot be served (no dummy load format).
"""

from __future__ import annotations

import re

from pathlib import Path

from validate.engines.config import (HOST, EngineCommand, EngineConfig, EngineFacts, engine_flags, engine_python,
                                     package_version_argv)
from validate.engines.logparse import search

NAME = "transformers"  # its model half and flag table: capacity/engines/transformers.py
PYTHON_ENV = "LLMCAP_TRANSFORMERS_PYTHON"
DIALECT = "transformers"


def build_command(config: EngineConfig, workdir: Path | None = None) -> EngineCommand:
    flags = engine_flags(NAME, config)  # refuses what transformers serve cannot express (TP, KV dtype, limits)
    # `python -m transformers.cli.transformers` is the `transformers` console script.
    python = engine_python(config, PYTHON_ENV)
    argv = [python, "-m", "transformers.cli.transformers", "serve", config.model_dir,
            "--host", HOST, "--port", str(config.port), "--log-level", "info"] + flags
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    # With a pinned model, requests must name exactly that model (or none).
    # /v1/models scans the Hugging Face cache and fails where there is none: readiness is /health only.
    return EngineCommand(argv=argv + config.extra_args, version_argv=package_version_argv(python, 'transformers'),
                         served_model_name=config.model_dir, env=env,
                         ready_paths=["/health"])


VERSION = re.compile(r"transformers(?: version|==)\s*([\d][\w.+-]*)", re.IGNORECASE)


def parse_facts(log_text: str) -> EngineFacts:
    lines: list[str] = []
    m = search(VERSION, log_text, lines)
    return EngineFacts(engine="transformers", version=m[1] if m else None, lines=lines)
