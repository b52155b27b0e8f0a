"""A tiny OpenAI-style streaming server on raw asyncio, for client benchmarks and fault tests.

It answers GET /health, GET /v1/models and POST /v1/completions (streamed as SSE over chunked
transfer encoding, one token per chunk, ``usage`` and ``[DONE]`` at the end) with HTTP/1.1
keep-alive. Knobs: time to first token, delay between tokens, an HTTP status to fail with, and
``cut_after`` to drop the connection mid-stream after that many token chunks. It generates nothing:
it is the cheapest possible server, so a benchmark against it measures the client.

    python -m validate.stub_server --port 8100 --token-delay-s 0.01
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading

from pydantic import BaseModel

MODEL = "stub"


class StubOptions(BaseModel):
    ttft_s: float = 0.0
    token_delay_s: float = 0.0
    status: int = 200
    cut_after: int | None = None


def _chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def _event(obj: object) -> bytes:
    return _chunk(b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n")


def _response(status: int, body: bytes, content_type: str = "application/json") -> bytes:
    reason = {200: "OK", 404: "Not Found", 500: "Internal Server Error"}.get(status, "Error")
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\ncontent-length: {len(body)}\r\n\r\n"
            .encode() + body)


class Ticker:
    """One timer for all streams: every ``period_s`` it wakes every stream waiting for a token, so a
    paced stub costs one wake-up per stream and tick, not one timer per token."""

    def __init__(self, period_s: float) -> None:
        self.period_s = period_s
        self.tick: asyncio.Future[None] | None = None

    async def wait(self) -> None:
        if self.tick is None or self.tick.done():
            loop = asyncio.get_running_loop()
            self.tick = loop.create_future()
            loop.call_later(self.period_s, self.tick.set_result, None)
        await asyncio.shield(self.tick)


async def _stream(writer: asyncio.StreamWriter, request: dict, options: StubOptions, ticker: Ticker) -> bool:
    """Streams one completion; False when the connection was cut on purpose."""
    max_tokens = int(request.get("max_tokens") or 16)
    prompt = request.get("prompt") or []
    prompt_tokens = len(prompt) if isinstance(prompt, list) else len(str(prompt).split())
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
    token = _event({"object": "text_completion", "model": MODEL,
                    "choices": [{"index": 0, "text": " w", "finish_reason": None}]})
    if options.ttft_s:
        await asyncio.sleep(options.ttft_s)
    for i in range(max_tokens):
        if options.cut_after is not None and i == options.cut_after:
            await writer.drain()
            writer.transport.abort()
            return False
        writer.write(token)
        if options.token_delay_s:
            await writer.drain()
            await ticker.wait()
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": max_tokens,
             "total_tokens": prompt_tokens + max_tokens}
    writer.write(_event({"object": "text_completion", "model": MODEL, "choices": [], "usage": usage}))
    writer.write(_chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
    await writer.drain()
    return True


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, options: StubOptions,
                  ticker: Ticker) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path = lines[0].split(" ")[:2]
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            if method == "GET" and path in ("/health", "/v1/models"):
                writer.write(_response(200, json.dumps({"object": "list", "data": [
                    {"id": MODEL, "object": "model", "owned_by": "stub"}]}).encode()))
            elif method == "POST" and path == "/v1/completions":
                request = json.loads(body or b"{}")
                if options.status != 200 or request.get("model") != MODEL:
                    status = options.status if options.status != 200 else 404
                    writer.write(_response(status, b'{"error":{"message":"stub error"}}'))
                elif not await _stream(writer, request, options, ticker):
                    return
            else:
                writer.write(_response(404, b"{}"))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, ValueError):
        pass
    finally:
        writer.close()


async def serve(port: int, options: StubOptions, ready: threading.Event | None = None,
                stop: asyncio.Event | None = None) -> None:
    ticker = Ticker(options.token_delay_s)
    server = await asyncio.start_server(lambda r, w: _handle(r, w, options, ticker), "127.0.0.1", port,
                                        backlog=4096)
    async with server:
        if ready is not None:
            ready.set()
        if stop is None:
            await server.serve_forever()
        else:
            await stop.wait()


class StubThread:
    """``with StubThread(port, StubOptions(...)):`` a stub server in a background thread (tests)."""

    def __init__(self, port: int, options: StubOptions) -> None:
        self.port, self.options = port, options
        self.ready = threading.Event()
        self.loop = asyncio.new_event_loop()
        self.stop_event: asyncio.Event | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self.stop_event = asyncio.Event()
            await serve(self.port, self.options, self.ready, self.stop_event)
            # connections still open: end their handlers here, while the loop runs, not when they are collected
            rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in rest:
                t.cancel()
            await asyncio.gather(*rest, return_exceptions=True)
        self.loop.run_until_complete(main())
        self.loop.close()

    def __enter__(self) -> StubThread:
        self.thread.start()
        if not self.ready.wait(10):
            raise RuntimeError("stub server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.stop_event is not None:
            self.loop.call_soon_threadsafe(self.stop_event.set)
        self.thread.join(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8100)
    parser.add_argument("--ttft-s", type=float, default=0.0)
    parser.add_argument("--token-delay-s", type=float, default=0.0)
    args = parser.parse_args()
    asyncio.run(serve(args.port, StubOptions(ttft_s=args.ttft_s, token_delay_s=args.token_delay_s)))


if __name__ == "__main__":
    main()
