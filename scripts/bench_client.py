"""How fast is the validator's own client? Load a local stub server and print what it sustains.

The stub (validate/stub_server.py, a separate process) does no work per token, so the figures
are the client's ceiling on this machine (client and stub share its CPUs):
  1. requests/s: 64 streams in flight, 1 output token each;
  2. tokens/s: 64 streams in flight, 512 output tokens each, sent back-to-back;
  3. paced: C streams at a fixed inter-token delay -> does the measured ITL stay at the stub's
     delay while the client takes C / delay tokens/s?
Each is run twice on one client and the second run is shown (connections warm, as in a sweep).
Also prints the client's CPU time per request and per token.

    python scripts/bench_client.py [--streams 500] [--delay-s 0.02]
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
    options = LoadOptions(num_requests=num_requests, warmup=0)
    async with Client(url, "stub") as client:
        await run_point(client, point, maker, options)  # opens the connections
        cpu0 = cpu_s()
        records = await run_point(client, point, maker, options)
        cpu = cpu_s() - cpu0
    s = summarize(point.label, records, client.max_in_flight)
    print(f"  {point.label}: {s.completed} ok, {s.failed} failed in {s.duration_s:.2f} s -> "
          f"{s.requests_per_s:,.0f} requests/s, {s.output_tokens_per_s:,.0f} output tokens/s")
    itl = f"ITL mean {s.mean_itl_s * 1e3:.2f} ms (p99 {s.p99_itl_s * 1e3:.2f} ms)" if s.mean_itl_s else "no ITL"
    print(f"    TTFT mean {(s.mean_ttft_s or 0) * 1e3:.1f} ms, {itl}, "
          f"client CPU {cpu / max(s.completed, 1) * 1e3:.2f} ms/request, "
          f"{cpu / max(s.total_output_tokens, 1) * 1e6:.1f} us/token")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--isl", type=int, default=128)
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--delay-s", type=float, default=0.02)
    args = parser.parse_args()
    print(f"client benchmark on {os.cpu_count()} CPUs (client and stub share them)")
    in_flight_64 = LoadPoint(kind="concurrency", value=64)
    runs = [(0.0, "1. requests/s: 64 in flight, 1 output token each", in_flight_64, 3000, 1),
            (0.0, "2. tokens/s: 64 in flight, 512 output tokens each", in_flight_64, 256, 512),
            (args.delay_s, f"3. paced: {args.streams} streams, {args.delay_s * 1e3:.0f} ms between tokens "
             f"(offered {args.streams / args.delay_s:,.0f} tokens/s), 64 tokens each",
             LoadPoint(kind="concurrency", value=args.streams), 2 * args.streams, 64)]
    for delay_s, title, point, num_requests, osl in runs:
        proc, url = start_stub(delay_s)
        try:
            print(title)
            asyncio.run(measure(url, point, num_requests, args.isl, osl))
        finally:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
