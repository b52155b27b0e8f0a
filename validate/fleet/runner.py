"""The driver of ``validate fleet``: one Ray task per job attempt, retries, and the index.

Each attempt is a Ray task asking for ``num_gpus = tp`` (none with ``devices = "cpu"``, which asks for
``num_cpus_per_job`` CPUs instead) and, where the plan maps the job's GPU kind to a custom resource, ``tp`` of it,
so Ray places it on a node of that kind. Ray's own task retries are off (``max_retries=0``): the driver retries, so
every attempt is one line in the index. An attempt that ends in a worker death, an engine that crashed or did not
start, or a lost server is retried up to ``retries`` times, then the job is failed with its last log lines. Input
errors (a bad option, an unknown model, an engine that refused its flags) are failed at once: a retry would fail
the same way.

A job is finished when its folder holds every point of its profile: a rerun skips it, whatever the index says.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

from validate.errors import UsageError, one_line
from validate.fleet.jobs import Job
from validate.fleet.progress import FleetView
from validate.fleet.store import FleetIndex, IndexRecord, count_points
from validate.fleet.worker import AttemptResult, AttemptSpec, log_tail, run_attempt
from validate.profiles import LoadOptions
from validate.results import ResultsDir
from validate.runner import pending_points

NO_RETRY = {"UsageError", "EngineConfigError", "ModelDirError", "ResultsError", "PlanError", "FleetStoreError"}
# An engine that exits with code 2 before it is ready refused its command line (argparse's usage-error code; vLLM,
# SGLang and trtllm-serve parse flags with argparse or click, which use 2 too): a retry would fail the same way.
USAGE_EXIT = "exited with code 2 before it was ready"
POLL_S = 0.5


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UsageError("validate fleet needs Ray: pip install 'llm-capacity[fleet]' (or pip install ray)") from None
    return ray


def connect(ray: Any, address: str | None) -> bool:
    """Join the cluster at ``address`` (auto, ray://host:port) or start a local Ray; True if started here."""
    kwargs: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
    try:
        if address:
            ray.init(address=address, **kwargs)
            return False
        ray.init(include_dashboard=False, **kwargs)
        return True
    except (ConnectionError, ValueError, RuntimeError) as err:
        raise UsageError(f"--address {address or '(local)'}: cannot start or reach Ray: {one_line(err)}") from None


class Board:
    """A Ray actor the attempts report their start to (worker pid and node), for the index and the view."""

    def __init__(self) -> None:
        self.starts: dict[tuple[str, int], tuple[int, str]] = {}

    def started(self, job_id: str, attempt: int, pid: int, node: str) -> None:
        self.starts[(job_id, attempt)] = (pid, node)

    def snapshot(self) -> dict[tuple[str, int], tuple[int, str]]:
        return dict(self.starts)


def finished(job: Job, folder: Path, options: LoadOptions) -> bool:
    if not (folder / "points.jsonl").exists():
        return False
    done = {p.load: p for p in ResultsDir(folder).points() if p.completed > 0}
    return not pending_points(job.profile, options, done)


class Fleet:
    def __init__(self, index: FleetIndex, jobs: list[Job], options: LoadOptions, *, retries: int,
                 max_parallel: int | None, env: dict[str, str], view: FleetView, retry_failed: bool = False) -> None:
        self.ray: Any = None
        self.index, self.jobs, self.options = index, {j.job_id: j for j in jobs}, options
        self.retries, self.max_parallel, self.env, self.view = retries, max_parallel, env, view
        self.retry_failed = retry_failed
        self.histories = index.histories()
        self.tries: dict[str, int] = {}
        self.attempt_of: dict[str, int] = {}
        self.seen_running: set[tuple[str, int]] = set()
        self.done: list[str] = []
        self.failed: list[str] = []

    def pending(self) -> deque[Job]:
        """The jobs to run; finished ones and earlier failures are kept as they are (and shown)."""
        todo: deque[Job] = deque()
        for job in self.jobs.values():
            folder = self.index.job_folder(job.job_id)
            history = self.histories.get(job.job_id)
            if finished(job, folder, self.options):
                if history is None or history.last.state != "done":
                    self.index.append(IndexRecord(job_id=job.job_id, state="done", points=count_points(folder)))
                self.done.append(job.job_id)
                self.view.kept(job, "done", count_points(folder))
            elif history is not None and history.last.state == "failed" and not self.retry_failed:
                self.failed.append(job.job_id)
                self.view.kept(job, "failed", count_points(folder))
            else:
                todo.append(job)
        return todo

    def _submit(self, job: Job, board: Any, task: Any) -> Any:
        history = self.histories.get(job.job_id)
        attempt = (history.attempts if history else 0) + self.tries.get(job.job_id, 0) + 1
        self.tries[job.job_id] = self.tries.get(job.job_id, 0) + 1
        self.attempt_of[job.job_id] = attempt
        spec = AttemptSpec(job_id=job.job_id, attempt=attempt, argv=job.argv, fleet_dir=str(self.index.folder),
                           out=str(self.index.job_folder(job.job_id)),
                           log_path=str(self.index.log_path(job.job_id, attempt)),
                           lock_path=str(self.index.lock_path(job.job_id)), env=self.env)
        return task.options(num_cpus=job.num_cpus, num_gpus=job.num_gpus, resources=job.resources or None,
                            max_retries=0).remote(spec, board)

    def _note_running(self, actor: Any) -> None:
        for (job_id, attempt), (pid, node) in self.ray.get(actor.snapshot.remote()).items():
            if (job_id, attempt) not in self.seen_running and self.attempt_of.get(job_id) == attempt:
                self.seen_running.add((job_id, attempt))
                self.index.append(IndexRecord(job_id=job_id, state="running", attempt=attempt, node=node, pid=pid))
                self.view.state(job_id, "running", attempt=attempt)

    def _ended(self, job: Job, result: AttemptResult | None, crash: str | None, todo: deque[Job]) -> None:
        attempt = self.attempt_of[job.job_id]
        folder = self.index.job_folder(job.job_id)
        if result is not None and result.rc == 0 and finished(job, folder, self.options):
            self.index.append(IndexRecord(job_id=job.job_id, state="done", attempt=attempt, points=result.points,
                                          elapsed_s=result.elapsed_s))
            self.done.append(job.job_id)
            self.view.state(job.job_id, "done", points=result.points, elapsed_s=result.elapsed_s)
            return
        if result is not None:
            error = f"{result.error_type}: {result.error}" if result.error_type else result.error
            kind, tail, elapsed = result.error_type, result.log_tail, result.elapsed_s
        else:
            error, kind, elapsed = f"Ray worker lost: {crash}", None, None
            tail = log_tail(self.index.log_path(job.job_id, attempt))
        usage = kind == "EngineStartError" and USAGE_EXIT in (error or "")
        retry = kind not in NO_RETRY and not usage and self.tries[job.job_id] <= self.retries
        state = "retrying" if retry else "failed"
        self.index.append(IndexRecord(job_id=job.job_id, state=state, attempt=attempt, points=count_points(folder),
                                      elapsed_s=elapsed, error=error, log_tail=tail))
        self.view.state(job.job_id, state, points=count_points(folder), error=error)
        if retry:
            todo.appendleft(job)
        else:
            self.failed.append(job.job_id)

    def run(self, ray: Any, todo: deque[Job]) -> tuple[list[str], list[str]]:
        """Run the pending jobs on the connected Ray; returns (done job ids, failed job ids) of all jobs."""
        self.ray = ray
        for job in todo:
            self.index.append(IndexRecord(job_id=job.job_id, state="queued", config=job.config, argv=job.argv,
                                          num_points=job.num_points))
            self.view.state(job.job_id, "queued")
        actor = board = ray.remote(num_cpus=0)(Board).remote()
        task = ray.remote(run_attempt)
        in_flight: dict[Any, Job] = {}
        try:
            while todo or in_flight:
                while todo and (self.max_parallel is None or len(in_flight) < self.max_parallel):
                    job = todo.popleft()
                    in_flight[self._submit(job, board, task)] = job
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=POLL_S)
                self._note_running(actor)
                for ref in ready:
                    job = in_flight.pop(ref)
                    try:
                        result, crash = ray.get(ref), None
                    except ray.exceptions.RayError as err:
                        result, crash = None, one_line(err)[:300]
                    self._ended(job, result, crash, todo)
                self.view.tick({j.job_id: count_points(self.index.job_folder(j.job_id)) for j in in_flight.values()})
        finally:
            for ref in in_flight:
                ray.cancel(ref, force=True)
        return self.done, self.failed
