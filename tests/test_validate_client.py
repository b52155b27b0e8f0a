"""The client against a real local HTTP server (validate.stub_server): streams, faults, accounting."""

from __future__ import annotations

import asyncio

import pytest

from validate.client import Client, StreamState, payload, token_gaps_s
from validate.engines.launcher import free_port
from validate.metrics import summarize
from validate.profiles import LoadOptions, LoadPoint, run_point
from validate.stub_server import StubOptions, StubThread
from validate.workload import PromptMaker, Workload


def run(url: str, point: LoadPoint, num_requests: int = 8, osl: int = 8, model: str = "stub"):
    async def main():
        async with Client(url, model) as client:
            maker = PromptMaker(Workload(isl=16, osl=osl, vocab_size=1000, special_ids=[0]))
            records = await run_point(client, point, maker, LoadOptions(num_requests=num_requests, warmup=0))
            return records, client.max_in_flight
    return asyncio.run(main())


def test_streams_are_timed_and_counted():
    port = free_port()
    with StubThread(port, StubOptions(ttft_s=0.05, token_delay_s=0.01)):
        records, max_in_flight = run(f"http://127.0.0.1:{port}", LoadPoint(kind="concurrency", value=4))
    assert len(records) == 8 and all(r.ok for r in records) and max_in_flight == 4
    for r in records:
        assert r.output_tokens == 8 and r.input_tokens == 16 and r.num_chunks == 8
        assert len(r.itls_s) == 7
        assert 0.05 <= r.ttft_s < 0.5
        assert r.e2e_latency_s >= r.ttft_s + sum(r.itls_s) - 1e-6
    s = summarize("concurrency:4", records, max_in_flight)
    assert 0.005 < s.mean_itl_s < 0.05


def test_http_errors_are_recorded_not_raised():
    port = free_port()
    with StubThread(port, StubOptions(status=500)):
        records, _ = run(f"http://127.0.0.1:{port}", LoadPoint(kind="burst", value=5))
    assert len(records) == 5 and all(r.error and r.error.startswith("HTTP 500") for r in records)
    assert summarize("burst:5", records).failed == 5


def test_wrong_model_name_is_a_failed_request():
    port = free_port()
    with StubThread(port, StubOptions()):
        records, _ = run(f"http://127.0.0.1:{port}", LoadPoint(kind="sync"), num_requests=2, model="nope")
    assert [r.error[:8] for r in records] == ["HTTP 404", "HTTP 404"]


def test_stream_cut_short_is_a_failed_request():
    port = free_port()
    with StubThread(port, StubOptions(cut_after=3)):
        records, _ = run(f"http://127.0.0.1:{port}", LoadPoint(kind="concurrency", value=2), num_requests=4)
    assert len(records) == 4
    for r in records:
        assert not r.ok and "RemoteProtocolError" in r.error and "after 3 token chunks" in r.error
        assert r.ttft_s is None and r.output_tokens == 0


def test_a_refused_connection_stops_the_point_early():
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    records, _ = run(url, LoadPoint(kind="rate", value=2.0), num_requests=50)
    assert 1 <= len(records) < 50 and all(r.error.startswith("ConnectError") for r in records)


def test_stream_state_reads_raw_sse_bytes_in_pieces():
    state = StreamState()
    stream = (b'data: {"choices":[{"text":" a","finish_reason":null}]}\r\n\r\n'
              b'data: {"choices":[{"text":" b","finish_reason":"length"}]}\n\n'
              b'data: {"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2}}\n\ndata: [DONE]\n\n')
    for i in range(0, len(stream), 7):
        state.feed(stream[i:i + 7], float(i))
    assert state.done and state.usage["completion_tokens"] == 2 and len(state.chunk_times) == 2


def test_transformers_final_chunk_is_not_a_token():
    state = StreamState()
    state.feed(b'data: {"choices":[{"text":"w1 w2","index":0}]}\n\n', 1.0)
    state.feed(b'data: {"choices":[{"text":"","finish_reason":"length"}],"usage":{"completion_tokens":2}}\n\n', 2.0)
    assert state.complete and state.chunk_times == [1.0]


def test_error_event_in_stream():
    state = StreamState()
    state.feed(b'data: {"error": "CUDA out of memory"}\n\n', 1.0)
    assert state.error.startswith("error in stream: CUDA out of memory")


def test_multi_token_chunks_split_their_gap():
    # chunk token counts known from token_ids: [1, 3, 1] over times 0, 0.3, 0.4
    assert token_gaps_s([0.0, 0.3, 0.4], [1, 3, 1], 5) == pytest.approx([0.1, 0.1, 0.1, 0.1])
    # unknown counts: usage says 7 tokens over 3 chunks -> 6 gaps spread over the 2 later chunks
    assert token_gaps_s([0.0, 0.3, 0.6], [1, 1, 1], 7) == pytest.approx([0.1] * 6)
    assert token_gaps_s([0.0], [1], 1) == []


def test_payload_pins_exact_lengths():
    spec = PromptMaker(Workload(isl=8, osl=5), salt=0).next()
    body = payload(spec, "m", "openai", None)
    assert body["prompt"] == spec.prompt_ids and body["max_tokens"] == body["min_tokens"] == 5
    assert body["ignore_eos"] is True and body["stream_options"] == {"include_usage": True}
    text = payload(spec, "m", "transformers", lambda ids: "w" * len(ids))
    assert text["prompt"] == "w" * 8 and '"max_new_tokens": 5' in text["generation_config"]
    assert "ignore_eos" not in text  # transformers serve rejects unknown fields


def test_idle_connections_are_dropped_before_the_server_drops_them():
    """The engines' HTTP servers (uvicorn) close a keep-alive connection idle for `timeout_keep_alive` seconds; the
    client must let its idle connections go first, or a request sent on one being closed fails (ReadError)."""
    import uvicorn

    from validate.client import KEEPALIVE_EXPIRY_S

    assert 0 < KEEPALIVE_EXPIRY_S < uvicorn.Config(app=None).timeout_keep_alive
    client = Client("http://127.0.0.1:1", "m")
    assert client._http()._transport._pool._keepalive_expiry == KEEPALIVE_EXPIRY_S
