"""The one launcher every engine shares: start, wait for readiness, keep the log, always stop.

The server runs in its own process group (so SIGTERM reaches its worker processes too), bound to
127.0.0.1, with stdout and stderr in one log file. Stopping sends SIGTERM to the group, then
SIGKILL after a grace period. A server is never left running: the context manager stops it, an
atexit hook stops any that are still alive, SIGTERM/SIGHUP to this process unwind through the
context manager, and on Linux the server gets SIGTERM if this process dies (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from types import TracebackType

import httpx

from validate.engines.config import EngineCommand
from validate.errors import EngineStartError

ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LIVE: set[EngineProcess] = set()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1
    except OSError:
        pass


def _raise_exit(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def _install_signal_handlers() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) in (signal.SIG_DFL, None):
            signal.signal(signum, _raise_exit)


@atexit.register
def _stop_all() -> None:
    for process in list(_LIVE):
        process.stop()


class EngineProcess:
    """A server subprocess. ``with EngineProcess(...) as engine:`` starts it and waits until ready."""

    def __init__(self, name: str, command: EngineCommand, base_url: str, log_path: Path,
                 startup_timeout_s: float = 900.0, stop_grace_s: float = 20.0) -> None:
        self.name = name
        self.command = command
        self.base_url = base_url.rstrip("/")
        self.log_path = Path(log_path)
        self.startup_timeout_s = startup_timeout_s
        self.stop_grace_s = stop_grace_s
        self.process: subprocess.Popen[bytes] | None = None
        self.ready_after_s: float | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        for path, text in self.command.files.items():
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.command.env}
        _install_signal_handlers()
        with open(self.log_path, "wb") as log:
            try:
                self.process = subprocess.Popen(
                    self.command.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env=env, start_new_session=True, preexec_fn=_die_with_parent)
            except OSError as err:
                raise EngineStartError(f"{self.name}: cannot run {self.command.argv[0]!r}: {err}") from None
        _LIVE.add(self)

    def wait_ready(self) -> float:
        """Seconds until every ready path answered 200; raises EngineStartError (and stops) if not."""
        started = time.monotonic()
        with httpx.Client(timeout=5.0) as client:
            while True:
                if self.process is not None and self.process.poll() is not None:
                    code = self.process.returncode
                    self.stop()
                    raise EngineStartError(
                        f"{self.name} exited with code {code} before it was ready; "
                        f"log {self.log_path}; last lines: {self.log_tail_line()}")
                if self._answers(client):
                    self.ready_after_s = time.monotonic() - started
                    return self.ready_after_s
                if time.monotonic() - started > self.startup_timeout_s:
                    self.stop()
                    raise EngineStartError(
                        f"{self.name} was not ready after {self.startup_timeout_s:.0f} s; "
                        f"log {self.log_path}; last lines: {self.log_tail_line()}")
                time.sleep(0.5)

    def _answers(self, client: httpx.Client) -> bool:
        try:
            return all(client.get(self.base_url + path).status_code == 200 for path in self.command.ready_paths)
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        """SIGTERM to the process group, SIGKILL after the grace period; safe to call twice."""
        _LIVE.discard(self)
        if self.process is None:
            return
        pgid = self.process.pid  # start_new_session: the group id is the leader's pid
        self._signal_group(pgid, signal.SIGTERM)
        try:
            self.process.wait(timeout=self.stop_grace_s)
        except subprocess.TimeoutExpired:
            self._signal_group(pgid, signal.SIGKILL)
            self.process.wait(timeout=30)
        # Workers that outlived the leader still belong to the group.
        self._signal_group(pgid, signal.SIGKILL)

    @staticmethod
    def _signal_group(pgid: int, signum: int) -> None:
        try:
            os.killpg(pgid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def log_text(self) -> str:
        try:
            return ANSI.sub("", self.log_path.read_text(errors="replace"))
        except OSError:
            return ""

    def log_tail(self, num_lines: int = 8) -> list[str]:
        lines = [line.strip() for line in self.log_text().splitlines() if line.strip()]
        return lines[-num_lines:]

    def log_tail_line(self, num_lines: int = 6) -> str:
        """The last log lines on one line (for one-line error messages)."""
        return " | ".join(line[:300] for line in self.log_tail(num_lines)) or "(empty log)"

    def __enter__(self) -> EngineProcess:
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
