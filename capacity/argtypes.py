"""argparse value types with one-line errors: whole numbers and numbers in a range, and the files and folders a
command writes, checked before any work is done (the capacity and validate command lines share them)."""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

from capacity.errors import show_value


LENGTH_MAX_TOKENS = 10_000_000  # the longest request length (input or output) any command or file may give


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


def _writable_folder(folder: Path, text: str) -> None:
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: its folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text}: its folder {str(folder)!r} is not writable")


def output_file(text: str) -> str:
    """A file the command will write: not a folder, in a folder that exists and can be written."""
    path = Path(text).expanduser()
    if not text.strip() or path.is_dir():
        raise argparse.ArgumentTypeError(f"{show_value(text)} is a folder: name a file to write")
    if path.exists() and not os.access(path, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text}: not writable")
    _writable_folder(path.parent.resolve(), text)
    return text


output_file.__name__ = "file"


def output_folder(text: str) -> str:
    """A folder the command will write into (made if missing): not a file, under a folder that can be written."""
    path = Path(text).expanduser()
    if not text.strip() or (path.exists() and not path.is_dir()):
        raise argparse.ArgumentTypeError(f"{show_value(text)} is a file: name a folder")
    if path.is_dir():
        _writable_folder(path.resolve(), text)
    else:
        parent = path.resolve().parent
        while not parent.exists() and parent != parent.parent:  # made with its parents: the first one that exists
            parent = parent.parent
        _writable_folder(parent, text)
    return text


output_folder.__name__ = "folder"


__all__ = ["LENGTH_MAX_TOKENS", "float_in", "int_in", "number_text", "output_file", "output_folder"]
