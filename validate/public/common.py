"""Helpers shared by the importers: raw-file headers, markdown tables, and the name maps from what a source
prints to this project's catalog ids (with the note each mapping needs)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
RAW_DIR = REPO_ROOT / "data" / "public" / "raw"
ROWS_PATH = REPO_ROOT / "data" / "public" / "rows.jsonl"

# published model name (lower-cased, spaces collapsed) -> (catalog id, note); None = no catalog config (skipped)
MODEL_MAP: dict[str, tuple[str, str] | None] = {
    "llama v3.1 8b": ("meta-llama/Llama-3.1-8B", "published as Llama 3.1 8B (Instruct checkpoints); scored with the catalog's Llama-3.1-8B config, the same architecture"),
    "llama 3.1 8b": ("meta-llama/Llama-3.1-8B", "published as Llama 3.1 8B (Instruct checkpoints); scored with the catalog's Llama-3.1-8B config, the same architecture"),
    "llama v3.1 70b": ("meta-llama/Llama-3.3-70B-Instruct", "published as Llama 3.1 70B; scored with the Llama-3.3-70B-Instruct config (same architecture)"),
    "llama 3.1 70b": ("meta-llama/Llama-3.3-70B-Instruct", "published as Llama 3.1 70B; scored with the Llama-3.3-70B-Instruct config (same architecture)"),
    "llama 3.3 70b": ("meta-llama/Llama-3.3-70B-Instruct", ""),
    "llama v3.3 70b": ("meta-llama/Llama-3.3-70B-Instruct", ""),
    "llama-3.3-70b-instruct": ("meta-llama/Llama-3.3-70B-Instruct", ""),
    "llama v3.1 405b": ("meta-llama/Llama-3.1-405B", "published as Llama 3.1 405B (Instruct checkpoints); scored with the catalog's 405B config (8 KV heads)"),
    "llama 3.1 405b": ("meta-llama/Llama-3.1-405B", "published as Llama 3.1 405B (Instruct checkpoints); scored with the catalog's 405B config (8 KV heads)"),
    "llama3.1 405b": ("meta-llama/Llama-3.1-405B", "published as Llama 3.1 405B; scored with the catalog's 405B config (8 KV heads)"),
    "llama 3.1 405b fp8": ("meta-llama/Llama-3.1-405B", "published as Llama 3.1 405B FP8; scored with the catalog's 405B config (8 KV heads)"),
    "mistral 7b": ("mistralai/Mistral-7B-v0.1", "the source does not say which Mistral 7B release; scored as v0.1 (4,096-token sliding window)"),
    "mixtral 8x7b": ("mistralai/Mixtral-8x7B-v0.1", "published as Mixtral 8x7B (release not stated); scored with the v0.1 config"),
    "qwen3-235b-a22b": ("Qwen/Qwen3-235B-A22B", ""),
    "qwen3 235b a22b": ("Qwen/Qwen3-235B-A22B", ""),
    "qwen3-30b-a3b": ("Qwen/Qwen3-30B-A3B", ""),
    "qwen3 30b a3b": ("Qwen/Qwen3-30B-A3B", ""),
    "deepseek r1 0528": ("deepseek-ai/DeepSeek-R1", "DeepSeek-R1-0528 shares the R1/V3 architecture"),
    "nvidia/deepseek-r1-0528-fp4": ("deepseek-ai/DeepSeek-R1", "DeepSeek-R1-0528 shares the R1/V3 architecture"),
    "nvidia/deepseek-r1-fp4": ("deepseek-ai/DeepSeek-R1", ""),
    "deepseek-ai/deepseek-r1": ("deepseek-ai/DeepSeek-R1", ""),
    "gpt-oss 120b": ("openai/gpt-oss-120b", ""),
    "gpt-oss 20b": ("openai/gpt-oss-20b", ""),
    # no config in capacity/model_configs: rows are not imported (counted by build.py)
    "llama 4 scout": None,
    "llama 4 maverick": None,
    "llama v4 maverick": None,
    "mixtral 8x22b": None,
}

# published GPU name (lower-cased) -> hardware_specs id; None = no spec file (skipped)
GPU_MAP: dict[str, str | None] = {
    "h200 141gb hbm3": "h200-sxm", "h200": "h200-sxm",
    "h100 80gb hbm3": "h100-sxm", "h100": "h100-sxm",
    "b200": "b200", "gb200": "gb200", "l40s": "l40s", "a100-sxm4-80gb": "a100-80gb-sxm",
    "rtx 6000 pro": "rtx-pro-6000", "mi300x": "mi300x", "mi325x": "mi325x", "mi355x": "mi355x",
    "b300": "b300", "gb300": "gb300",
    "gh200 480gb": None,
}


def norm(name: str) -> str:
    return re.sub(r"\s+", " ", name.replace("**", "").strip()).lower()


def map_model(name: str) -> tuple[str, str] | None:
    key = norm(name)
    if key not in MODEL_MAP:
        raise KeyError(f"published model name {name!r} has no entry in MODEL_MAP")
    return MODEL_MAP[key]


def map_gpu(name: str) -> str | None:
    key = norm(name)
    if key not in GPU_MAP:
        raise KeyError(f"published GPU name {name!r} has no entry in GPU_MAP")
    return GPU_MAP[key]


@dataclass
class Header:
    """The source line(s) at the top of a raw file: `key: value` pairs in HTML comments or `#` lines."""
    fields: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, key: str) -> str:
        return self.fields[key]

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.fields.get(key, default)


def read_header(text: str) -> Header:
    h = Header()
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("<!--") and s.endswith("-->"):
            body = s[4:-3].strip()
        elif s.startswith("# "):
            body = s[2:].strip()
        else:
            continue
        for part in body.split(" | "):
            key, sep, value = part.partition(":")
            key, value = key.strip(), value.strip()
            if sep and re.fullmatch(r"[a-z_]+", key) and key not in h.fields:
                h.fields[key] = value.split(",")[0].split()[0] if key == "read" else value
    return h


def split_row(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|"):
        s = s[:-1]
    return [c.strip() for c in s.split("|")]


def is_separator(cells: list[str]) -> bool:
    return all(re.fullmatch(r":?-+:?", c) for c in cells if c) and any(cells)


def tables(text: str) -> list[tuple[str, list[list[str]]]]:
    """Every markdown table with the nearest heading above it: [(heading, [cells per row, separator dropped])]."""
    out: list[tuple[str, list[list[str]]]] = []
    heading, rows = "", []
    for line in text.splitlines() + [""]:
        s = line.strip()
        if s.startswith("|"):
            cells = split_row(s)
            if not is_separator(cells):
                rows.append(cells)
            continue
        if rows:
            out.append((heading, rows))
            rows = []
        if s.startswith("#") and not s.startswith("# source") and not s.startswith("<!--"):
            heading = s.lstrip("#").strip()
    return out


def headings(text: str) -> list[tuple[int, str]]:
    return [(i, line.lstrip("#").strip()) for i, line in enumerate(text.splitlines()) if line.startswith("#")]


def number(cell: str) -> float | None:
    c = cell.replace(",", "").replace("*", "").strip()
    if not c:
        return None
    return float(c)


def join_notes(*parts: str) -> str:
    return "; ".join(p for p in parts if p)
