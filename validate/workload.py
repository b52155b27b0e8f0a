"""What each request asks for: input/output lengths and prompts as token-id lists.

Prompts are seeded random token ids that avoid the model's special ids. Each starts with a unique
prefix (a per-run salt token, then the request number in base len(allowed ids)), so no two requests
share a first KV block and prefix caching never helps. With ``shared_prefix`` F > 0 the first
round(F x isl) tokens of every prompt are one prefix common to the run (salted too, so another run on
the same server does not hit it), followed by the unique prefix and the body: a prefix cache can then
serve about F of the prompt tokens (whole KV blocks only). Lengths are fixed, uniform in
[L(1-r), L(1+r)] (vLLM's --random-range-ratio), normal with stdev r*L, or drawn from a file of
(input, output) pairs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from capacity.argtypes import LENGTH_MAX_TOKENS
from capacity.loads.draws import (BODIES_STREAM, SHARED_PREFIX_STREAM, WARMUP_LENGTHS_STREAM, lengths_rng,
                                  spread_lengths, stream_rng)
from validate.errors import UsageError, one_line

PREFIX_TOKENS = 3
# Used when the server's vocabulary is unknown (attach mode without --model-config): ids that exist in
# every common tokenizer and are not special in any of them.
UNKNOWN_VOCAB_SIZE = 30_000
UNKNOWN_VOCAB_RESERVED = 1_000


class LengthDist(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["fixed", "uniform", "normal", "file"] = "fixed"
    ratio: float = Field(default=0.0, ge=0.0)
    path: str | None = None

    def __str__(self) -> str:
        if self.kind == "file":
            return f"file:{self.path}"
        return self.kind if self.kind == "fixed" else f"{self.kind}:{self.ratio:g}"


def parse_length_dist(text: str) -> LengthDist:
    """'fixed' | 'uniform:R' | 'normal:R' | 'file:PATH'"""
    kind, _, arg = text.partition(":")
    if kind == "fixed" and not arg:
        return LengthDist()
    if kind == "file" and arg:
        if not Path(arg).is_file():
            raise UsageError(f"length file {arg} does not exist")
        read_length_pairs(arg)  # read now: a bad file is refused before any server is asked
        return LengthDist(kind="file", path=arg)
    if kind in ("uniform", "normal"):
        try:
            ratio = float(arg)
        except ValueError:
            ratio = -1.0
        if not 0.0 <= ratio < (1.0 if kind == "uniform" else 10.0):
            raise UsageError(f"--length-dist {text}: the ratio must be in [0, 1) for uniform, [0, 10) for normal")
        return LengthDist(kind=kind, ratio=ratio)
    raise UsageError(f"--length-dist {text!r}: use fixed, uniform:R, normal:R or file:PATH")


def read_length_pairs(path: str) -> list[tuple[int, int]]:
    """Lines of 'input output' or 'input,output'; '#' starts a comment; a header line is skipped."""
    pairs = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the length pairs: {one_line(exc)}") from None
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split("#")[0].replace(",", " ").split()
        if not fields:
            continue
        try:
            isl, osl = int(fields[0]), int(fields[1])
        except (ValueError, IndexError):
            if number == 1:
                continue
            raise UsageError(f"{path}:{number}: expected two integers (input, output)") from None
        if not (1 <= isl <= LENGTH_MAX_TOKENS and 1 <= osl <= LENGTH_MAX_TOKENS):
            raise UsageError(f"{path}:{number}: lengths must be from 1 to {LENGTH_MAX_TOKENS:,} tokens")
        pairs.append((isl, osl))
    if not pairs:
        raise UsageError(f"{path} holds no (input, output) length pairs")
    return pairs


class Workload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    isl: int = Field(gt=0, description="mean input tokens")
    osl: int = Field(gt=0, description="mean output tokens")
    length_dist: LengthDist = LengthDist()
    seed: int = 0
    shared_prefix: float = Field(default=0.0, ge=0.0, lt=1.0, description="share of each prompt common to all")
    vocab_size: int = UNKNOWN_VOCAB_SIZE
    special_ids: list[int] = Field(default_factory=lambda: list(range(UNKNOWN_VOCAB_RESERVED)))

    def describe(self) -> dict[str, object]:
        out: dict[str, object] = {"isl": self.isl, "osl": self.osl, "length_dist": str(self.length_dist),
                                  "seed": self.seed}
        if self.shared_prefix:  # only when set, so folders written before the option resume unchanged
            out["shared_prefix"] = self.shared_prefix
        return out


class RequestSpec(BaseModel):
    index: int
    prompt_ids: list[int]
    output_tokens: int


class PromptMaker:
    """Makes RequestSpecs one at a time: seeded lengths and token ids, unique prefixes."""

    def __init__(self, workload: Workload, salt: int | None = None) -> None:
        self.workload = workload
        specials = np.array(sorted(set(workload.special_ids)), dtype=np.int64)
        self.allowed = np.setdiff1d(np.arange(workload.vocab_size, dtype=np.int64), specials)
        if len(self.allowed) < 16:
            raise UsageError(f"vocabulary of {workload.vocab_size} has too few ordinary token ids")
        # three streams (capacity/loads/draws.py): the token ids, the measured requests' lengths (restarted at every
        # load point, as the step simulator draws a point's) and the warm-up requests' lengths
        self.rng = stream_rng(workload.seed, BODIES_STREAM)
        self.start_point()  # the two lengths' streams
        # The salt differs between runs (resumed runs too), so a server's prefix cache never matches.
        self.salt = int.from_bytes(os.urandom(4), "little") if salt is None else salt
        self.pairs = read_length_pairs(workload.length_dist.path) if workload.length_dist.path else None
        self.count = 0
        self.shared = self._shared_prefix()

    def _shared_prefix(self) -> list[int]:
        """The run's common prefix: the salt token, then tokens drawn from the salt (not from the lengths' rng,
        so the lengths and bodies are those of the same seed without a shared prefix)."""
        n = int(round(self.workload.shared_prefix * self.workload.isl))
        if n == 0:
            return []
        rng = np.random.default_rng([self.workload.seed, SHARED_PREFIX_STREAM, self.salt])  # its own numbered stream
        body = self.allowed[rng.integers(len(self.allowed), size=n - 1)].tolist()
        return [int(self.allowed[self.salt % len(self.allowed)])] + body

    def intended_hit_rate(self) -> float:
        """Share of prompt tokens a prefix cache can serve: the common prefix over the mean prompt."""
        return len(self.shared) / self.workload.isl

    def start_point(self) -> None:
        """A load point begins: its requests' lengths are the stream's from the first (the simulator's for the seed),
        and its warm-ups' too (a resumed run sends what an uninterrupted one does)."""
        self.length_rng = lengths_rng(self.workload.seed)
        self.warmup_rng = lengths_rng(self.workload.seed, WARMUP_LENGTHS_STREAM)

    def lengths(self, warmup: bool = False) -> tuple[int, int]:
        w, rng = self.workload, self.warmup_rng if warmup else self.length_rng
        if self.pairs:
            return self.pairs[int(rng.integers(len(self.pairs)))]
        isl, osl = spread_lengths(rng, np.array([w.isl, w.osl]), w.length_dist.kind, w.length_dist.ratio, 2)
        return int(isl), int(osl)

    def prefix(self, index: int) -> list[int]:
        base = len(self.allowed)
        digits = [self.salt % base, (index // base) % base, index % base]
        return [int(self.allowed[d]) for d in digits]

    def next(self, warmup: bool = False) -> RequestSpec:
        index, self.count = self.count, self.count + 1
        isl, osl = self.lengths(warmup)
        body = self.allowed[self.rng.integers(len(self.allowed), size=max(isl - PREFIX_TOKENS, 0))]
        ids = (self.shared[:max(isl - PREFIX_TOKENS, 0)] + self.prefix(index) + body.tolist())[:isl]
        return RequestSpec(index=index, prompt_ids=ids, output_tokens=osl)

    def max_total_tokens(self) -> int:
        """The longest input + output this workload can ask for (checked against max_model_len)."""
        if self.pairs:
            return max(i + o for i, o in self.pairs)
        w, dist = self.workload, self.workload.length_dist
        if dist.kind == "uniform":
            return int(w.isl * (1 + dist.ratio)) + int(w.osl * (1 + dist.ratio))
        if dist.kind == "normal":
            return int(w.isl * (1 + 4 * dist.ratio)) + int(w.osl * (1 + 4 * dist.ratio))
        return w.isl + w.osl
