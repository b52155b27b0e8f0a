"""Decode step times read from vLLM's own periodic stats lines.

vLLM logs every ~10 s "Avg prompt throughput: P tokens/s, Avg generation throughput: G tokens/s, Running: N reqs,
Waiting: W reqs, GPU KV cache usage: U %". In a window with P = 0 and W = 0 every step decodes the N running
sequences, so one step takes N / G seconds, and (for a model without sliding-window layers) the mean context is
U × (KV cache tokens) / N. These windows isolate the decode step from the client's view (waves, queueing), which is
what separates GPU time from host time at large batch.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from pathlib import Path

STATS = re.compile(r"Avg prompt throughput: ([\d.]+) tokens/s, Avg generation throughput: ([\d.]+) tokens/s, "
                   r"Running: (\d+) reqs, Waiting: (\d+) reqs, GPU KV cache usage: ([\d.]+)%")


@dataclass(frozen=True)
class DecodeWindow:
    running: int
    step_s: float
    kv_usage: float  # share of the KV cache in use


def decode_windows(log_text: str, min_running: int = 8) -> list[DecodeWindow]:
    """Every pure-decode stats window of a vLLM server log."""
    out = []
    for m in STATS.finditer(log_text):
        prompt, gen, running, waiting, usage = float(m[1]), float(m[2]), int(m[3]), int(m[4]), float(m[5]) / 100
        if prompt == 0 and gen > 0 and running >= min_running and waiting == 0:
            out.append(DecodeWindow(running, running / gen, usage))
    return out


def server_log_text(run_dir: Path) -> str | None:
    """The server log of a campaign run folder (server.log.gz or server.log), if any."""
    for name in ("server.log.gz", "server.log"):
        path = run_dir / name
        if path.is_file():
            opener = gzip.open if name.endswith(".gz") else open
            with opener(path, "rt", errors="replace") as f:
                return f.read()
    return None
