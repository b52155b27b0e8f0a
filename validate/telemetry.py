"""The engine's own counters per load point, from its Prometheus ``/metrics``.

Before a point, every second during it and after it, the runner reads the server's ``/metrics`` and keeps the
quantities each engine adapter names in its ``METRICS`` table (validate/engines/<name>.py): requests running and
waiting, KV-cache usage, preemptions, prefix-cache queries and hits, speculative drafts and accepted tokens, prompt
and generation token counters, and the sums and counts of the engine's own latency histograms (time to first
token, time queued, time prefilling, as the engine clocks them from a request's arrival in its front-end). A point stores a summary (:class:`EngineTelemetry`: counter deltas over the point,
gauge means and peaks, and flags where the counters contradict the workload) and the series beside it
(telemetry.jsonl, one line per point). A server without ``/metrics`` (``transformers serve``) gives none: the
point says so, nothing is invented.

Counters are summed over label sets (one per engine core or model name); gauges likewise (running requests of
several engine cores add up) except the KV-cache usage, which is the mean over its label sets.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping

import httpx
from pydantic import BaseModel, ConfigDict, Field

# Latency histograms are read as their _sum and _count counters: the point's mean is delta(sum) / delta(count).
LATENCIES = ("ttft", "queue", "prefill")
COUNTERS = ("prompt_tokens", "generation_tokens", "prefix_cache_queries", "prefix_cache_hits", "preemptions",
            "spec_drafts", "spec_draft_tokens", "spec_accepted_tokens", "requests_finished",
            *(f"{name}_{part}" for name in LATENCIES for part in ("sum_s", "count")))
GAUGES = ("running", "waiting", "kv_usage")
QUANTITIES = COUNTERS + GAUGES
KV_FULL = 0.99  # KV-cache usage from which the cache counts as full
HIT_RATE_SLACK = 0.05  # a measured prefix-cache hit rate this far from the intended one is flagged
SCRAPE_TIMEOUT_S = 5.0


def parse_prometheus(text: str, names: Mapping[str, tuple[str, ...]]) -> dict[str, float]:
    """The quantities of ``names`` (quantity -> metric names, first found wins) from a Prometheus text page.

    Histogram buckets and _created series are not read (a histogram's _sum and _count are, where ``names`` names
    them); a value that is not a finite
    number is skipped. A counter may be exposed with or without its ``_total`` suffix."""
    by_metric: dict[str, list[float]] = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        head, _, rest = line.rpartition("}") if "}" in line else ("", "", line)
        if head:
            metric = head.split("{", 1)[0]
            fields = rest.split()
        else:
            metric, *fields = rest.split()
        if not fields or metric.endswith(("_bucket", "_created")):
            continue
        try:
            value = float(fields[0])
        except ValueError:
            continue
        if math.isfinite(value):
            by_metric.setdefault(metric, []).append(value)
    out: dict[str, float] = {}
    for quantity, candidates in names.items():
        for metric in candidates:
            values = by_metric.get(metric) or by_metric.get(metric + "_total")
            if values:
                out[quantity] = sum(values) / len(values) if quantity == "kv_usage" else sum(values)
                break
    return out


class Sample(BaseModel):
    """One read of /metrics: seconds since the point started (negative: before it) and the quantities found."""

    model_config = ConfigDict(frozen=True)

    t_s: float
    values: dict[str, float]


class TelemetrySeries(BaseModel):
    """telemetry.jsonl: the samples of one point, as columns (quantity -> one value or None per sample)."""

    model_config = ConfigDict(extra="forbid")

    load: str
    t_s: list[float]
    columns: dict[str, list[float | None]]

    @classmethod
    def of(cls, load: str, samples: list[Sample]) -> TelemetrySeries:
        found = [q for q in QUANTITIES if any(q in s.values for s in samples)]
        return cls(load=load, t_s=[round(s.t_s, 3) for s in samples],
                   columns={q: [s.values.get(q) for s in samples] for q in found})


class EngineTelemetry(BaseModel):
    """What the engine's counters say about one point (deltas from just before to just after it)."""

    model_config = ConfigDict(extra="forbid")

    samples: int = Field(ge=0)
    prompt_tokens: float | None = None
    generation_tokens: float | None = None
    prefix_cache_queries_tokens: float | None = None
    prefix_cache_hits_tokens: float | None = None
    prefix_cache_hit_rate: float | None = Field(default=None, description="hits / queries, in tokens")
    preemptions: float | None = None
    spec_drafts: float | None = None
    spec_draft_tokens: float | None = None
    spec_accepted_tokens: float | None = None
    spec_acceptance_rate: float | None = Field(default=None, description="accepted / drafted tokens")
    engine_mean_ttft_s: float | None = Field(
        default=None, description="the engine's own mean TTFT over the point's requests, from its arrival in the "
        "engine's front-end to the first token leaving it (the client's TTFT adds HTTP, queueing before the "
        "front-end and streaming)")
    engine_mean_queue_s: float | None = Field(default=None, description="the engine's mean time waiting to be scheduled")
    engine_mean_prefill_s: float | None = Field(default=None, description="the engine's mean time from first "
                                                "scheduled to first token")
    mean_running: float | None = None
    max_running: float | None = None
    mean_waiting: float | None = None
    max_waiting: float | None = None
    max_kv_usage: float | None = Field(default=None, description="0..1 of the KV cache")
    kv_full_fraction: float | None = Field(default=None, description=f"share of samples with KV usage >= {KV_FULL}")
    flags: list[str] = Field(default_factory=list, description="where the counters contradict the workload")

    def describe(self) -> str:
        """One line for tables: hit rate, preemptions, KV full, acceptance, flags."""
        parts = []
        if self.max_running is not None:
            parts.append(f"running up to {self.max_running:.0f}" + (f", waiting up to {self.max_waiting:.0f}"
                                                                    if self.max_waiting else ""))
        if self.prefix_cache_hit_rate is not None:
            parts.append(f"prefix-cache hit rate {self.prefix_cache_hit_rate:.0%}")
        if self.preemptions:
            parts.append(f"{self.preemptions:.0f} preemptions")
        if self.kv_full_fraction:
            parts.append(f"KV full for {self.kv_full_fraction:.0%} of the point")
        if self.engine_mean_ttft_s is not None:
            parts.append(f"engine TTFT {self.engine_mean_ttft_s * 1e3:.0f} ms" + (
                f" (queued {self.engine_mean_queue_s * 1e3:.0f} ms)" if self.engine_mean_queue_s is not None else ""))
        if self.spec_acceptance_rate is not None:
            parts.append(f"draft acceptance {self.spec_acceptance_rate:.0%}")
        parts += [f"FLAG {f}" for f in self.flags]
        return "; ".join(parts) or "no counters"


def _delta(before: Mapping[str, float], after: Mapping[str, float], key: str) -> float | None:
    if key in before and key in after:
        return max(after[key] - before[key], 0.0)
    return None


def _ratio(num: float | None, den: float | None) -> float | None:
    return num / den if num is not None and den else None


def summarize(samples: list[Sample], intended_hit_rate: float = 0.0) -> EngineTelemetry | None:
    """The point's summary from its samples (the first taken just before the point, the last just after);
    None when no sample had any quantity (no /metrics)."""
    samples = [s for s in samples if s.values]
    if not samples:
        return None
    first, last = samples[0].values, samples[-1].values
    d = {key: _delta(first, last, key) for key in COUNTERS}
    during = samples[1:-1] or samples

    def gauge(key: str) -> list[float]:
        return [s.values[key] for s in during if key in s.values]

    running, waiting, kv = gauge("running"), gauge("waiting"), gauge("kv_usage")
    out = EngineTelemetry(
        samples=len(samples), prompt_tokens=d["prompt_tokens"], generation_tokens=d["generation_tokens"],
        prefix_cache_queries_tokens=d["prefix_cache_queries"], prefix_cache_hits_tokens=d["prefix_cache_hits"],
        prefix_cache_hit_rate=_ratio(d["prefix_cache_hits"], d["prefix_cache_queries"]),
        preemptions=d["preemptions"], spec_drafts=d["spec_drafts"], spec_draft_tokens=d["spec_draft_tokens"],
        spec_accepted_tokens=d["spec_accepted_tokens"],
        spec_acceptance_rate=_ratio(d["spec_accepted_tokens"], d["spec_draft_tokens"]),
        mean_running=sum(running) / len(running) if running else None, max_running=max(running, default=None),
        mean_waiting=sum(waiting) / len(waiting) if waiting else None, max_waiting=max(waiting, default=None),
        max_kv_usage=max(kv, default=None),
        **{f"engine_mean_{name}_s": _ratio(d[f"{name}_sum_s"], d[f"{name}_count"]) for name in LATENCIES},
        kv_full_fraction=sum(u >= KV_FULL for u in kv) / len(kv) if kv else None)
    out.flags = contradictions(out, intended_hit_rate)
    return out


def contradictions(t: EngineTelemetry, intended_hit_rate: float) -> list[str]:
    """Where the engine's counters say the point did not run the workload it was meant to."""
    flags = []
    rate = t.prefix_cache_hit_rate
    if rate is not None and abs(rate - intended_hit_rate) > HIT_RATE_SLACK:
        flags.append(f"prefix-cache hit rate {rate:.0%} (intended {intended_hit_rate:.0%})")
    return flags


class Scraper:
    """Reads one server's /metrics; ``sample()`` never raises (a failed read is an empty sample)."""

    def __init__(self, base_url: str, names: Mapping[str, tuple[str, ...]], interval_s: float = 1.0) -> None:
        self.url = base_url.rstrip("/") + "/metrics"
        self.names = dict(names)
        self.interval_s = interval_s
        self.available = bool(self.names)

    async def read(self, http: httpx.AsyncClient) -> dict[str, float]:
        if not self.available:
            return {}
        try:
            response = await http.get(self.url)
        except httpx.HTTPError:
            return {}
        if response.status_code == 404:  # no /metrics on this server: stop asking
            self.available = False
            return {}
        return parse_prometheus(response.text, self.names) if response.status_code == 200 else {}


class PointSampler:
    """``async with PointSampler(scraper) as sampler:`` around one point, with ``await sampler.start()`` when its
    measured requests begin (after the warm-up, so warm-up requests are not counted): a sample then, one every
    interval during the point, one after. ``sampler.samples`` then holds them, times relative to the start."""

    def __init__(self, scraper: Scraper) -> None:
        self.scraper = scraper
        self.samples: list[Sample] = []
        self._task: asyncio.Task | None = None
        self._http: httpx.AsyncClient | None = None
        self._t0: float | None = None

    async def _take(self) -> None:
        assert self._http is not None and self._t0 is not None
        t = time.perf_counter() - self._t0
        self.samples.append(Sample(t_s=t, values=await self.scraper.read(self._http)))

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.scraper.interval_s)
            await self._take()

    async def start(self) -> None:
        self._t0 = time.perf_counter()
        await self._take()
        if self.scraper.available:
            self._task = asyncio.create_task(self._loop())

    async def __aenter__(self) -> PointSampler:
        self._http = httpx.AsyncClient(timeout=SCRAPE_TIMEOUT_S)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        if self._t0 is not None and exc[0] is None:
            await self._take()
        assert self._http is not None
        await self._http.aclose()
