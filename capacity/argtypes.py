"""argparse value types with one-line errors: whole numbers and numbers in a range (the capacity and validate
command lines share them)."""

from __future__ import annotations

import argparse
import math

from capacity.errors import show_value


def int_in(lo: int, hi: int):
    expected = f"an integer from {lo:,} to {hi:,}"

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:  # not a number, or more than 4,300 digits
            raise argparse.ArgumentTypeError(f"expected {expected}, got {show_value(text)}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {show_value(value)}")
        return value

    parse.__name__ = "integer"
    return parse


def number_text(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


def float_in(lo: float, hi: float, lo_open: bool = False, hi_open: bool = False, what: str = "a number"):
    """A number in [lo, hi] (open ends as asked); `what` names it in the error ("seconds", "US dollars per ...")."""
    expected = f"{what} {'>' if lo_open else '≥'} {number_text(lo)} and {'<' if hi_open else '≤'} {number_text(hi)}"

    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {show_value(text)}") from None
        below = value <= lo if lo_open else value < lo
        above = value >= hi if hi_open else value > hi
        if not math.isfinite(value) or below or above:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {show_value(value)}")
        return value

    parse.__name__ = "number"
    return parse


__all__ = ["float_in", "int_in", "number_text"]
