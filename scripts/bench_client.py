"""How fast is the validator's own client? Load a local stub server and print what it sustains.

The stub (validate/stub_server.py, a separate process) does no work per token, so the figures
are the client's ceiling on this machine:
  1. burst: N requests at once, tokens streamed back-to-back -> requests/s and tokens/s ceiling;
  2. paced: C concurrent streams at a fixed inter-token delay -> whether the measured ITL stays
     at the stub's delay while the client handles C * (1 / delay) tokens/s.
Also prints the client's CPU time per request and per token.

    python scripts/bench_client.py [--requests 2000] [--osl 64] [--streams 500] [--delay-s 0.02]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402

from validate.client import Client  # noqa: E402
from validate.engines.launcher import free_port  # noqa: E402
from validate.metrics import summarize  # noqa: E402
from validate.profiles import LoadOptions, LoadPoint, run_point  # noqa: E402
from validate.workload import PromptMaker, Workload  # noqa: E402


def start_stub(delay_s: float) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "validate.stub_server", "--port", str(port),
                             "--token-delay-s", str(delay_s)], cwd=Path(__file__).resolve().parents[1])
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            if httpx.get(url + "/health").status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("stub server did not start")


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measure(url: str, point: LoadPoint, num_requests: int, isl: int, osl: int) -> None:
    maker = PromptMaker(Workload(isl=isl, osl=osl))
    async with Client(url, "stub") as client:
        cpu0 = cpu_s()
        records = await run_point(client, point, maker, LoadOptions(num_requests=num_requests, warmup=0))
        cpu = cpu_s() - cpu0
    s = summarize(point.label, records, client.max_in_flight)
    print(f"  {point.label}: {s.completed} ok, {s.failed} failed in {s.duration_s:.2f} s -> "
          f"{s.requests_per_s:,.0f} requests/s, {s.output_tokens_per_s:,.0f} output tokens/s")
    print(f"    TTFT mean {s.mean_ttft_s * 1e3:.1f} ms, ITL mean {s.mean_itl_s * 1e3:.2f} ms "
          f"(p99 {s.p99_itl_s * 1e3:.2f} ms), client CPU {cpu / max(s.completed, 1) * 1e3:.2f} ms/request, "
          f"{cpu / max(s.total_output_tokens, 1) * 1e6:.1f} us/token")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--isl", type=int, default=128)
    parser.add_argument("--osl", type=int, default=64)
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--delay-s", type=float, default=0.02)
    args = parser.parse_args()
    print(f"client benchmark on {os.cpu_count()} CPUs (client and stub share them)")

    proc, url = start_stub(0.0)
    try:
        print(f"1. burst of {args.requests}, {args.osl} tokens each, no delay between tokens:")
        asyncio.run(measure(url, LoadPoint(kind="burst", value=args.requests), args.requests, args.isl, args.osl))
    finally:
        proc.terminate()
        proc.wait()

    proc, url = start_stub(args.delay_s)
    try:
        offered = args.streams / args.delay_s
        print(f"2. {args.streams} concurrent streams, {args.delay_s * 1e3:.0f} ms between tokens "
              f"(offered {offered:,.0f} tokens/s):")
        asyncio.run(measure(url, LoadPoint(kind="concurrency", value=args.streams), 2 * args.streams,
                            args.isl, args.osl))
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
