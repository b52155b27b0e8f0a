"""The load generator's HTTP side: one streaming /v1/completions request -> one RequestRecord.

httpx over HTTP/1.1, one keep-alive connection per request in flight, no cap. Server-sent events
are parsed from raw bytes; each ``data:`` chunk that carries generated text (or token ids) is a
token chunk, stamped with time.perf_counter() when its bytes arrive. TTFT = first token chunk - request start. Output
tokens come from ``usage``. A chunk may carry several tokens (an engine that batches its stream):
its gap is split evenly over its tokens (from ``token_ids`` when sent, otherwise the tokens that
``usage`` reports beyond the chunk count are spread evenly over the chunks), so there is one
inter-token gap per output token after the first. HTTP errors, exceptions, streams that end
before ``[DONE]``/``usage`` and requests that outlive their timeout (start to end of the stream) become
a record with ``error`` set; nothing here raises.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import Callable
from typing import Any

import httpx

from validate.results import RequestRecord
from validate.workload import RequestSpec

DIALECTS = ("openai", "transformers")


def payload(spec: RequestSpec, model: str, dialect: str, text_of: Callable[[list[int]], str] | None) -> dict[str, Any]:
    """The request body: exact input (token ids) and exact output length (ignore_eos + min_tokens)."""
    if dialect == "transformers":
        # transformers serve takes text only and rejects unknown fields; its generation_config replaces
        # the model's, so without an eos id it generates exactly max_new_tokens.
        text = text_of(spec.prompt_ids) if text_of else " ".join(map(str, spec.prompt_ids))
        config = {"max_new_tokens": spec.output_tokens, "do_sample": False}
        return {"model": model, "prompt": text, "max_tokens": spec.output_tokens, "stream": True,
                "generation_config": json.dumps(config)}
    return {"model": model, "prompt": spec.prompt_ids, "max_tokens": spec.output_tokens,
            "min_tokens": spec.output_tokens, "ignore_eos": True, "temperature": 0.0, "stream": True,
            "stream_options": {"include_usage": True}}


class StreamState:
    """What one SSE stream said so far. Fed raw bytes; parses JSON only where it must.

    A token chunk is counted from its bytes alone; JSON is parsed only for chunks that carry
    ``usage``, an ``error``, a non-null ``finish_reason`` or ``token_ids`` (a few per request), which
    keeps the client's cost per token in the microseconds.
    """

    def __init__(self) -> None:
        self.buffer = b""
        self.chunk_times: list[float] = []
        self.chunk_tokens: list[int] = []
        self.usage: dict[str, Any] | None = None
        self.done = False
        self.error: str | None = None

    def feed(self, data: bytes, now: float) -> None:
        """Raw bytes as they arrive; every complete event is stamped with ``now``."""
        self.buffer += data.replace(b"\r\n", b"\n") if b"\r" in data else data
        while not self.done and self.error is None:
            end = self.buffer.find(b"\n\n")
            if end < 0:
                return
            event, self.buffer = self.buffer[:end], self.buffer[end + 2:]
            for line in event.split(b"\n"):
                if line.startswith(b"data:"):
                    self.feed_data(line[5:].strip(), now)

    def feed_data(self, data: bytes, now: float) -> None:
        if data == b"[DONE]":
            self.done = True
            return
        slow = (b'"usage":{' in data or b'"error":' in data or b'"token_ids":[' in data
                or (b'"finish_reason":' in data and b'"finish_reason":null' not in data))
        if not slow:
            if b'"choices":[{' in data:
                self.chunk_times.append(now)
                self.chunk_tokens.append(1)
            return
        try:
            event = json.loads(data)
        except ValueError:
            self.error = f"unparsable stream chunk: {data[:200]!r}"
            return
        if not isinstance(event, dict):
            return
        if "error" in event:
            self.error = f"error in stream: {str(event['error'])[:300]}"
            return
        if isinstance(event.get("usage"), dict):
            self.usage = event["usage"]
        choices = event.get("choices") or []
        if not choices or not isinstance(choices[0], dict):
            return
        choice = choices[0]
        token_ids = choice.get("token_ids")
        if choice.get("text") or token_ids or (choice.get("finish_reason") is None and self.usage is None):
            self.chunk_times.append(now)
            self.chunk_tokens.append(len(token_ids) if isinstance(token_ids, list) and token_ids else 1)

    @property
    def complete(self) -> bool:
        return self.done or self.usage is not None


def token_gaps_s(chunk_times: list[float], chunk_tokens: list[int], output_tokens: int) -> list[float]:
    """One inter-token gap per output token after the first (see the module docstring)."""
    if len(chunk_times) < 2:
        return []
    per_chunk = list(chunk_tokens[1:])
    missing = output_tokens - chunk_tokens[0] - sum(per_chunk)
    if missing > 0:
        base, extra = divmod(missing, len(per_chunk))
        per_chunk = [k + base + (1 if i < extra else 0) for i, k in enumerate(per_chunk)]
    gaps: list[float] = []
    for i, tokens in enumerate(per_chunk, start=1):
        gap = chunk_times[i] - chunk_times[i - 1]
        gaps.extend([gap / tokens] * tokens)
    return gaps


def _count(value: Any) -> int | None:
    """A token count from a server's ``usage``: a non-negative integer, or None for anything else."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


# An idle connection is dropped before the server drops it: vLLM, SGLang and TensorRT-LLM serve through uvicorn, which
# closes a keep-alive connection idle for 5 s; a request sent on one the server is closing that moment fails with a
# ReadError (seen as 3 failed requests after a pause between two load points against the CPU vLLM server).
KEEPALIVE_EXPIRY_S = 2.0


class Client:
    """``async with Client(url, model) as client: record = await client.send(spec, load, t0)``"""

    def __init__(self, base_url: str, model: str, dialect: str = "openai", request_timeout_s: float = 1800.0,
                 text_of: Callable[[list[int]], str] | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.dialect = dialect
        self.text_of = text_of
        self.request_timeout_s = request_timeout_s  # whole request, start to end of stream
        self.timeout = httpx.Timeout(request_timeout_s, connect=min(30.0, request_timeout_s), pool=None)
        # One small httpx client per request in flight, reused: httpcore's pool scans all its
        # connections for every request, which costs O(connections) per request at high concurrency.
        self.idle: list[httpx.AsyncClient] = []
        self.verify: ssl.SSLContext | bool = ssl.create_default_context() if base_url.startswith("https") else False
        self.in_flight = 0
        self.max_in_flight = 0

    def _http(self) -> httpx.AsyncClient:
        if self.idle:
            return self.idle.pop()
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1, keepalive_expiry=KEEPALIVE_EXPIRY_S)
        return httpx.AsyncClient(base_url=self.base_url, http1=True, http2=False, limits=limits,
                                 timeout=self.timeout, verify=self.verify)

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        idle, self.idle = self.idle, []
        for http in idle:
            await http.aclose()

    async def send(self, spec: RequestSpec, load: str, t0: float, timeout_s: float | None = None) -> RequestRecord:
        """One streamed request; never raises for HTTP or network trouble (see RequestRecord.error).
        ``timeout_s``: this request's timeout (default: the client's)."""
        http = self._http()
        body = payload(spec, self.model, self.dialect, self.text_of)
        state = StreamState()
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        limit_s = self.request_timeout_s if timeout_s is None else timeout_s
        timeout = httpx.Timeout(limit_s, connect=min(30.0, limit_s), pool=None)
        start = time.perf_counter()
        try:
            async with asyncio.timeout(limit_s), http.stream("POST", "/v1/completions", json=body,
                                                             timeout=timeout) as response:
                if response.status_code != 200:
                    text = (await response.aread()).decode(errors="replace")
                    state.error = f"HTTP {response.status_code}: {' '.join(text.split())[:300]}"
                else:
                    # Read to the end of the body even after [DONE]: a fully read response lets the
                    # connection be reused; breaking early would close it (a new TCP connection each time).
                    async for data in response.aiter_raw():
                        state.feed(data, time.perf_counter())
                        if state.error:
                            break
                    if not state.complete and state.error is None:
                        state.error = f"stream cut short after {len(state.chunk_times)} token chunks"
        except httpx.HTTPError as err:
            state.error = f"{type(err).__name__}: {err}" + (
                f" (after {len(state.chunk_times)} token chunks)" if state.chunk_times else "")
        except TimeoutError:
            state.error = f"Timeout: no complete response within the request timeout of {limit_s:g} s" + (
                f" (after {len(state.chunk_times)} token chunks)" if state.chunk_times else "")
        finally:
            self.in_flight -= 1
            self.idle.append(http)
        end = time.perf_counter()
        return self._record(spec, load, t0, start, end, state)

    def _record(self, spec: RequestSpec, load: str, t0: float, start: float, end: float,
                state: StreamState) -> RequestRecord:
        usage = state.usage or {}
        output_tokens = _count(usage.get("completion_tokens")) or sum(state.chunk_tokens)
        input_tokens = _count(usage.get("prompt_tokens")) or len(spec.prompt_ids)
        ok = state.error is None
        gaps = token_gaps_s(state.chunk_times, state.chunk_tokens, output_tokens) if ok else []
        return RequestRecord(
            load=load, index=spec.index, start_s=start - t0, end_s=end - t0,
            ttft_s=state.chunk_times[0] - start if ok and state.chunk_times else None,
            e2e_latency_s=end - start if ok else None,
            itls_s=[round(g, 7) for g in gaps] if ok else [],
            num_chunks=len(state.chunk_times), input_tokens=input_tokens if ok else 0,
            output_tokens=output_tokens if ok else 0, requested_input_tokens=len(spec.prompt_ids),
            requested_output_tokens=spec.output_tokens, error=state.error)
