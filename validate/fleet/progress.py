"""The live view of a fleet on stderr: jobs queued / running / done / failed, points done of the plan's, the time
elapsed and an estimate of the time left; one line per job that ends. On a terminal the summary and the running
jobs redraw in place (rich Live); in a log or pipe only the lines are printed.

Time left = (mean seconds of the attempts that finished here) x (queued jobs + half the running ones) / (jobs
running at once): engine start-up dominates a job, so jobs, not points, are counted. "-" until one job finished.
"""

from __future__ import annotations

import time

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from validate.fleet.jobs import Job


def clock(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class FleetView:
    def __init__(self, jobs: list[Job], live: bool | None = None) -> None:
        self.console = Console(stderr=True, highlight=False, soft_wrap=True)
        self.num_points = {j.job_id: j.num_points for j in jobs}
        self.states: dict[str, str] = {}
        self.points: dict[str, int] = {}
        self.attempts: dict[str, int] = {}
        self.started_s: dict[str, float] = {}
        self.durations_s: list[float] = []
        self.max_running = 1
        self.t0 = time.monotonic()
        use_live = self.console.is_terminal if live is None else live
        self.live = Live(self._render(), console=self.console, refresh_per_second=2, transient=True) \
            if use_live else None
        if self.live is not None:
            self.live.start()

    def kept(self, job: Job, state: str, points: int) -> None:
        """A job that this run does not start (finished, or failed in an earlier run)."""
        self.states[job.job_id], self.points[job.job_id] = state, points
        self.console.print(f"[dim]{state:>8}  {job.job_id}  {points} points (kept from an earlier run)[/dim]")

    def state(self, job_id: str, state: str, *, attempt: int | None = None, points: int | None = None,
              elapsed_s: float | None = None, error: str | None = None) -> None:
        self.states[job_id] = state
        if points is not None:
            self.points[job_id] = points
        if state == "running":
            self.started_s[job_id] = time.monotonic()
            self.attempts[job_id] = attempt or 1
            self.max_running = max(self.max_running, self.counts().get("running", 0))
            self.console.print(f"{'running':>8}  {job_id}  attempt {attempt}")
        elif state == "done":
            if elapsed_s is not None:
                self.durations_s.append(elapsed_s)
            self.console.print(f"[green]{'done':>8}[/green]  {job_id}  {points} points  {clock(elapsed_s)}")
        elif state in ("retrying", "failed"):
            colour = "yellow" if state == "retrying" else "red"
            self.console.print(f"[{colour}]{state:>8}[/{colour}]  {job_id}  {points} points kept  {error}")
        self._refresh()

    def tick(self, running_points: dict[str, int]) -> None:
        self.points.update(running_points)
        self._refresh()

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in self.states.values():
            key = "queued" if s == "retrying" else s
            out[key] = out.get(key, 0) + 1
        return out

    def eta_s(self) -> float | None:
        if not self.durations_s:
            return None
        c = self.counts()
        mean_s = sum(self.durations_s) / len(self.durations_s)
        return mean_s * (c.get("queued", 0) + 0.5 * c.get("running", 0)) / max(self.max_running, 1)

    def summary(self) -> str:
        c = self.counts()
        done = sum(min(self.points.get(j, 0), n) for j, n in self.num_points.items())
        return (f"jobs: {c.get('queued', 0)} queued, {c.get('running', 0)} running, {c.get('done', 0)} done, "
                f"{c.get('failed', 0)} failed · points {done}/{sum(self.num_points.values())} · elapsed "
                f"{clock(time.monotonic() - self.t0)} · left {clock(self.eta_s())}")

    def _render(self) -> Group:
        table = Table(box=None, show_header=False, pad_edge=False)
        now = time.monotonic()
        for job_id, state in self.states.items():
            if state == "running":
                table.add_row(f"  {job_id}", f"attempt {self.attempts.get(job_id, 1)}",
                              f"{self.points.get(job_id, 0)}/{self.num_points.get(job_id, 0)} points",
                              clock(now - self.started_s.get(job_id, now)))
        return Group(Text(self.summary(), style="bold"), table)

    def _refresh(self) -> None:
        if self.live is not None:
            self.live.update(self._render())

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
        self.console.print(self.summary())
