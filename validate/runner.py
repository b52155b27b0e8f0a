"""Run the load points of one profile against one server and store each as it completes.

Resume: points already in points.jsonl are skipped (a sweep recomputes its rates from the stored
sync and burst points). A torn last line in points.jsonl or requests.jsonl (a run killed mid-write) is
dropped first, with a warning. A point with failed requests triggers a liveness check of the server; if
it is gone the run stops with ServerLostError and that point is not stored, so a rerun redoes it. A
point that completed none of its requests while the server still answered is stored (it says what
failed) but is not done: a resume drops it, with a warning, and measures it again.

Each point also records the engine's own counters from its /metrics (validate.telemetry: a summary in the point,
the series in telemetry.jsonl, written before the point so a stored point always has its series) and, on a GPU
machine, power and energy (validate.gpu_telemetry), and the host's side: the client's CPU and event-loop lag and
the CPU of the server's processes when it runs here (validate.host_telemetry).

Requests time out after ``--request-timeout-s``; by default a time derived from the point's load
(profiles.request_timeout_s), so one hung request holds a sync point about a minute, not half an hour.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable

import httpx
from pydantic import BaseModel, ConfigDict

from validate.client import Client
from validate.engines import metric_names
from validate.engines.launcher import EngineProcess
from validate.errors import ResultsError, ServerLostError
from validate.gpu_telemetry import GpuSampler, open_reader
from validate.host_telemetry import HostSampler
from validate.metrics import summarize
from validate.telemetry import PointSampler, Scraper, TelemetrySeries
from validate.telemetry import summarize as summarize_telemetry
from validate.profiles import LoadOptions, LoadPoint, plan, request_timeout_s, run_point
from validate.progress import Reporter
from validate.results import PointResult, ResultsDir, RunMetadata
from validate.workload import PromptMaker, Workload

RESUME_KEYS = ("isl", "osl", "length_dist", "shared_prefix")


class Target(BaseModel):
    """The server to load: where, which model name, and how requests are worded."""

    model_config = ConfigDict(frozen=True)

    base_url: str
    model: str
    dialect: str = "openai"
    request_timeout_s: float | None = None  # None: derived from each point's load (profiles.request_timeout_s)
    health_path: str = "/v1/models"
    engine: str | None = None  # names its /metrics (validate/engines/<engine>.py METRICS); None: any engine's
    telemetry_interval_s: float = 1.0


def _warn(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def stored_points(results: ResultsDir, metadata: RunMetadata,
                  warn: Callable[[str], None] = _warn) -> dict[str, PointResult]:
    """Points of an earlier run of the same workload in this --out folder (ResultsError if it differs).

    Torn last lines are cut from both JSONL files, points that completed nothing are dropped (measured
    again), and requests of points that are not stored are removed: after this, appending is safe."""
    for warning in results.drop_torn_lines():
        warn(warning)
    points = results.points()
    earlier = results.read_metadata()
    if points and earlier is not None:
        for key in RESUME_KEYS:
            if earlier.workload.get(key) != metadata.workload.get(key):
                raise ResultsError(
                    f"{results.path} holds points of another workload ({key} {earlier.workload.get(key)} there, "
                    f"{metadata.workload.get(key)} now); use another --out folder")
        for key in ("model_id", "engine"):
            if getattr(earlier, key) and getattr(metadata, key) and getattr(earlier, key) != getattr(metadata, key):
                raise ResultsError(f"{results.path} holds points of {key} {getattr(earlier, key)!r}, "
                                   f"not {getattr(metadata, key)!r}; use another --out folder")
    failed = {p.load: p for p in points if p.completed == 0}
    for p in failed.values():
        warn(f"warning: load point {p.load} in {results.path} completed none of its {p.failed} requests in an "
             f"earlier run ({p.errors[0][:120] if p.errors else 'no error recorded'}); measuring it again")
    if failed:
        results.drop_points(set(failed))
    done = {p.load: p for p in points if p.load not in failed}
    results.drop_orphan_requests(set(done))
    return done


def pending_points(profile: str, options: LoadOptions, done: dict[str, PointResult]) -> bool:
    """Whether any point of the profile is still to run (so the engine must be started)."""
    try:
        return any(point.label not in done for point in plan(profile, options, done))
    except KeyError:  # a sweep whose sync or burst point is not stored yet
        return True


async def _server_alive(target: Target, engine: EngineProcess | None) -> bool:
    if engine is not None and not engine.alive():
        return False
    try:
        async with httpx.AsyncClient(timeout=10.0) as http:
            return (await http.get(target.base_url.rstrip("/") + target.health_path)).status_code == 200
    except httpx.HTTPError:
        return False


def _lost(target: Target, engine: EngineProcess | None, point: PointResult, results: ResultsDir, kept: int) -> str:
    where = f"{engine.name} (pid {engine.pid})" if engine is not None else f"the server at {target.base_url}"
    message = (f"{where} stopped answering during load point {point.load} ({point.failed} of "
               f"{point.failed + point.completed} requests failed: {point.errors[0] if point.errors else '?'}); "
               f"{kept} finished points are kept in {results.path}; rerun the same command to resume")
    if engine is not None:
        message += f"; engine log {engine.log_path}: {engine.log_tail_line(3)}"
    return message


def run_profile(target: Target, workload: Workload, profile: str, options: LoadOptions, results: ResultsDir,
                done: dict[str, PointResult], reporter: Reporter | None = None, engine: EngineProcess | None = None,
                text_of: Callable[[list[int]], str] | None = None) -> list[PointResult]:
    """Run every pending point of ``profile``; returns all points of the profile (stored + new)."""
    reporter = reporter or Reporter()
    maker = PromptMaker(workload)
    finished: list[PointResult] = []
    scraper = Scraper(target.base_url, {} if target.dialect == "transformers" else metric_names(target.engine),
                      target.telemetry_interval_s)
    gpu_reader, gpu_how = open_reader()

    async def main() -> None:
        async with Client(target.base_url, target.model, target.dialect, target.request_timeout_s or 60.0,
                          text_of) as client:
            for point in plan(profile, options, done):
                if point.label in done:
                    reporter.point_skipped(done[point.label])
                    finished.append(done[point.label])
                    continue
                finished.append(await _measure(client, point))

    async def _measure(client: Client, point: LoadPoint) -> PointResult:
        total = point.shape.requests(point.value, options.num_requests)
        reporter.point_started(point.label, None if options.duration_s and not point.shape.counts_itself(point.value)
                               else total)
        timeout_s = target.request_timeout_s or request_timeout_s(point, options, maker.max_total_tokens())
        async with PointSampler(scraper) as sampler, HostSampler(target.base_url) as host:
            async def started() -> None:
                await sampler.start()
                await host.start()

            with GpuSampler(gpu_reader) if gpu_reader is not None else contextlib.nullcontext() as gpu:
                records = await run_point(client, point, maker, options, reporter.request_done, timeout_s,
                                          on_start=started)
        summary = summarize(point.label, records, client.max_in_flight,
                            point.value if point.kind == "rate" else None, options.warmup)
        summary.seed = workload.seed
        if point.kind == "rate":
            summary.arrivals = options.arrivals
            summary.gamma_shape = options.gamma_shape if options.arrivals == "gamma" else None
        if summary.failed and not await _server_alive(target, engine):
            raise ServerLostError(_lost(target, engine, summary, results, len(done)))
        summary.engine_telemetry = summarize_telemetry(sampler.samples, maker.intended_hit_rate())
        notes = [] if summary.engine_telemetry else [f"no engine counters ({scraper.url} gave none)"]
        if gpu is not None:
            summary.gpu_telemetry = gpu.summary(summary.duration_s, summary.total_output_tokens, summary.completed)
        else:
            notes.append(gpu_how)
        summary.host_telemetry = host.summary()
        summary.telemetry_note = "; ".join(notes) or None
        results.append_requests(records)
        if summary.engine_telemetry:
            results.append_telemetry(TelemetrySeries.of(point.label, sampler.samples))
        results.append_point(summary)
        done[point.label] = summary
        reporter.point_done(summary)
        return summary

    asyncio.run(main())
    return finished
