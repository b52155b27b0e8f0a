"""From the requests of one load point to its summary (PointResult).

duration_s = last end - first start over the point's measured requests (warm-up excluded), so a
burst's throughput is completed / time until the last one finishes. Latency statistics use the
completed requests only; ITL statistics pool every inter-token gap of every completed request.
Percentiles are numpy's linear interpolation, as in vLLM's benchmark.
"""

from __future__ import annotations

import numpy as np

from validate.results import PointResult, RequestRecord


def _stats(name: str, values: list[float]) -> dict[str, float | None]:
    if not values:
        return {f"mean_{name}": None, f"median_{name}": None, f"p90_{name}": None, f"p99_{name}": None}
    array = np.asarray(values, dtype=float)
    p50, p90, p99 = np.percentile(array, [50, 90, 99])
    return {f"mean_{name}": float(array.mean()), f"median_{name}": float(p50), f"p90_{name}": float(p90),
            f"p99_{name}": float(p99)}


def tpot_s(record: RequestRecord) -> float | None:
    """Time per output token after the first: (e2e - ttft) / (output tokens - 1)."""
    if record.e2e_latency_s is None or record.ttft_s is None or record.output_tokens < 2:
        return None
    return (record.e2e_latency_s - record.ttft_s) / (record.output_tokens - 1)


def summarize(load: str, records: list[RequestRecord], max_concurrency: int | None = None,
              target_rate_per_s: float | None = None, warmup_requests: int = 0) -> PointResult:
    ok = [r for r in records if r.ok]
    duration_s = (max(r.end_s for r in records) - min(r.start_s for r in records)) if records else 0.0
    per_s = (lambda x: x / duration_s) if duration_s > 0 else (lambda x: 0.0)
    input_tokens = sum(r.input_tokens for r in ok)
    output_tokens = sum(r.output_tokens for r in ok)
    e2e = [r.e2e_latency_s for r in ok if r.e2e_latency_s is not None]
    tpots = [t for t in map(tpot_s, ok) if t is not None]
    errors = list(dict.fromkeys(r.error for r in records if r.error))[:5]
    return PointResult(
        load=load, completed=len(ok), failed=len(records) - len(ok), duration_s=duration_s,
        requests_per_s=per_s(len(ok)), output_tokens_per_s=per_s(output_tokens),
        total_tokens_per_s=per_s(input_tokens + output_tokens), input_tokens_per_s=per_s(input_tokens),
        **_stats("ttft_s", [r.ttft_s for r in ok if r.ttft_s is not None]),
        **_stats("itl_s", [gap for r in ok for gap in r.itls_s]),
        **_stats("tpot_s", tpots),
        **_stats("e2e_latency_s", e2e),
        isl=input_tokens / len(ok) if ok else None, osl=output_tokens / len(ok) if ok else None,
        total_input_tokens=input_tokens, total_output_tokens=output_tokens,
        target_rate_per_s=target_rate_per_s, max_concurrency=max_concurrency,
        mean_concurrency=per_s(sum(e2e)) if e2e else None, warmup_requests=warmup_requests, errors=errors)
