"""A small OpenAI-compatible front for issue 22's 2xH200 runs (vLLM's own proxies live in its tests/ and examples/,
which its wheel does not ship). FastAPI, uvicorn and httpx only: the vLLM 0.26.0 wheel set and `validate` bring them.

  nixl      1P1D with NixlConnector: POST the request to the prefill server with max_tokens 1, stream off and
            kv_transfer_params {"do_remote_decode": true, ...}; send the original request with the kv_transfer_params of
            that reply to the decode server, and stream its reply back.
  p2pnccl   1P1D with P2pNcclConnector: both servers get the same X-Request-Id, which names the prefill and decode
            instances' KV addresses (___prefill_addr_IP:PORT___decode_addr_IP:PORT_UUID); prefill with max_tokens 1,
            then the decode server streams.
  rr        two aggregated replicas: each request goes to the next one in turn.

One JSON line per request goes to --log (seconds until the prefill reply, whether it carried kv_transfer_params), to
read next to the servers' own logs. usage: python3 disagg_proxy.py --mode nixl --port 8000 --prefill URL --decode URL
[--prefill-kv HOST:PORT --decode-kv HOST:PORT] --log FILE
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
import uuid

import httpx
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

NIXL_PREFILL_PARAMS = {"do_remote_decode": True, "do_remote_prefill": False, "remote_engine_id": None,
                       "remote_block_ids": None, "remote_host": None, "remote_port": None}


def prefill_body(body: dict, mode: str) -> dict:
    out = dict(body, stream=False, max_tokens=1)
    out.pop("stream_options", None)
    if "max_completion_tokens" in out:
        out["max_completion_tokens"] = 1
    if mode == "nixl":
        out["kv_transfer_params"] = dict(NIXL_PREFILL_PARAMS)
    return out


def build_app(a) -> FastAPI:
    app = FastAPI()
    client = httpx.AsyncClient(timeout=httpx.Timeout(3600.0), limits=httpx.Limits(max_connections=4096,
                                                                                   max_keepalive_connections=1024))
    targets = itertools.cycle([a.prefill, a.decode])
    log = open(a.log, "a", buffering=1)

    async def stream_from(url: str, body: dict, headers: dict) -> Response:
        req = client.build_request("POST", url, json=body, headers=headers)
        upstream = await client.send(req, stream=True)

        async def chunks():
            try:
                async for chunk in upstream.aiter_raw():
                    yield chunk
            finally:
                await upstream.aclose()

        return StreamingResponse(chunks(), status_code=upstream.status_code,
                                 media_type=upstream.headers.get("content-type", "application/json"))

    async def handle(request: Request, path: str) -> Response:
        body = await request.json()
        if a.mode == "rr":
            return await stream_from(next(targets) + path, body, {})
        t0 = time.perf_counter()
        headers = {}
        if a.mode == "p2pnccl":
            headers["X-Request-Id"] = f"___prefill_addr_{a.prefill_kv}___decode_addr_{a.decode_kv}_{uuid.uuid4().hex}"
        r = await client.post(a.prefill + path, json=prefill_body(body, a.mode), headers=headers)
        reply = r.json()
        if r.status_code != 200:
            return JSONResponse(reply, status_code=r.status_code)
        decode = dict(body)
        if a.mode == "nixl":
            decode["kv_transfer_params"] = reply.get("kv_transfer_params")
        log.write(json.dumps({"t": time.time(), "prefill_reply_s": time.perf_counter() - t0,
                              "kv_transfer_params": bool(reply.get("kv_transfer_params"))}) + "\n")
        return await stream_from(a.decode + path, decode, headers)

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        return await handle(request, "/v1/completions")

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        return await handle(request, "/v1/chat/completions")

    @app.get("/v1/models")
    async def models() -> Response:
        r = await client.get(a.decode + "/v1/models")
        return JSONResponse(r.json(), status_code=r.status_code)

    @app.get("/health")
    async def health() -> Response:
        for url in (a.prefill, a.decode):
            r = await client.get(url + "/health")
            if r.status_code != 200:
                return Response(f"{url} not ready", status_code=503)
        return Response("ok")

    return app


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=("nixl", "p2pnccl", "rr"), required=True)
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--prefill", required=True, help="prefill server (rr: the first replica)")
    p.add_argument("--decode", required=True, help="decode server (rr: the second replica)")
    p.add_argument("--prefill-kv", default="127.0.0.1:21001", help="p2pnccl: the prefill instance's KV address")
    p.add_argument("--decode-kv", default="127.0.0.1:22001", help="p2pnccl: the decode instance's KV address")
    p.add_argument("--log", default="proxy.jsonl")
    a = p.parse_args()
    uvicorn.run(build_app(a), host="127.0.0.1", port=a.port, log_level="warning")


if __name__ == "__main__":
    main()
