"""validate.host_telemetry on this machine's real /proc: a listening process is found with its children, a
blocked event loop is seen as lag, CPU burnt is counted. Lower bounds only: a loaded machine can only add lag."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time

import pytest

from validate.host_telemetry import HostSampler, server_processes

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads Linux /proc")


def test_listener_and_its_children_are_the_server():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            procs, note = server_processes(f"http://127.0.0.1:{port}")
            assert note is None and os.getpid() in procs and child.pid in procs
        finally:
            child.kill()
            child.wait()
    procs, note = server_processes(f"http://127.0.0.1:{port}")  # closed now: nobody listens
    assert procs == {} and "no readable process listens" in note
    procs, note = server_processes("http://example.invalid:8000")
    assert procs == {} and "not on this machine" in note


def test_a_blocked_loop_and_burnt_cpu_are_counted():
    async def point() -> HostSampler:
        async with HostSampler("http://example.invalid:1") as host:
            await host.start()
            await asyncio.sleep(0.05)
            end = time.process_time() + 0.2
            while time.process_time() < end:  # 0.2 s of CPU with the loop blocked throughout
                pass
            await asyncio.sleep(0.05)
        return host

    t = asyncio.run(point()).summary()
    assert t is not None and t.duration_s >= 0.3
    assert t.client_loop_lag_max_s >= 0.19 and t.client_loop_lag_p99_s <= t.client_loop_lag_max_s
    assert 0.2 / t.duration_s * 0.9 <= t.client_cpu_cores
    assert t.server_cpu_cores == {} and "not on this machine" in t.server_note
    assert "loop lag" in t.describe()


def test_no_start_no_summary():
    async def never_started() -> HostSampler:
        async with HostSampler("http://127.0.0.1:1") as host:
            pass
        return host

    assert asyncio.run(never_started()).summary() is None
