"""Small helpers shared by the engines' log parsers."""

from __future__ import annotations

import re

GiB = 2**30
GB = 1e9


def number(text: str) -> float:
    """'1,048,576' -> 1048576.0"""
    return float(text.replace(",", ""))


def search(pattern: re.Pattern[str], text: str, lines: list[str]) -> re.Match[str] | None:
    """The first match of ``pattern`` in any line of ``text``; its line is appended to ``lines``."""
    for line in text.splitlines():
        if m := pattern.search(line):
            kept = line.strip()[:300]  # vLLM's config line runs to thousands of characters
            if kept not in lines:
                lines.append(kept)
            return m
    return None
