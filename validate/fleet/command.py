"""``validate fleet PLAN --out DIR``: the subcommand's options and what it does (Ray is imported only here, and
only when a plan is run, so ``validate`` works without it).

Exit codes: 0 every job done, 1 some job failed (the others are done), 2 bad input (one line), 130 interrupted.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from validate.errors import UsageError
from validate.fleet.jobs import Job, expand, load_options
from validate.fleet.plan import FleetPlan, load_plan
from capacity.argtypes import output_folder


def _at_least(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer of at least {minimum} (got {text!r})")
        return value
    return parse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fleet", help="run a plan of many engine configurations at once on a Ray cluster")
    p.add_argument("plan", help="plan file (.toml, .yaml): axes, exclusions, load (docs/fleet.md)")
    p.add_argument("--out", type=output_folder, help="fleet folder: fleet.jsonl, jobs/<id>/ as `validate run` writes them, logs/ "
                                 "(rerun with the same folder to resume)")
    p.add_argument("--address", help="Ray cluster: auto (the one this machine belongs to) or ray://HOST:10001; "
                                     "default: start a local Ray")
    p.add_argument("--max-parallel", type=_at_least(1), help="jobs at once (default: as many as Ray can place)")
    p.add_argument("--retries", type=_at_least(0), default=2,
                   help="retries of a job whose worker died or engine crashed (default 2)")
    p.add_argument("--guided", type=_at_least(1), metavar="K",
                   help="per job, measure only the K candidate loads where the capacity model is least sure")
    p.add_argument("--retry-failed", action="store_true", help="run jobs failed in an earlier run again")
    p.add_argument("--dry-run", action="store_true", help="print the jobs and their points; start nothing")
    p.set_defaults(func=run)


def jobs_of(args: argparse.Namespace) -> tuple[list[Job], FleetPlan]:
    plan = load_plan(args.plan)
    base = Path(args.plan).resolve().parent
    jobs = expand(plan, base)
    if args.guided:
        from validate.fleet.guided import guided_profiles

        jobs = expand(plan, base, guided_profiles(plan, jobs, args.guided))
    return jobs, plan


def _print_jobs(jobs: list[Job]) -> None:
    table = Table(title=f"{len(jobs)} jobs (configuration: the axes that vary)")
    for name in ("job", "configuration", "profile", "GPUs", "CPUs", "resources"):
        table.add_column(name)
    varying = [k for k in (jobs[0].config if jobs else {}) if len({repr(j.config[k]) for j in jobs}) > 1]
    for j in jobs:
        shown = ", ".join(f"{k}={j.config[k]}" for k in varying) or "(one configuration)"
        table.add_row(j.job_id, shown, j.profile, f"{j.num_gpus:g}", f"{j.num_cpus:g}",
                      ", ".join(f"{k}={v:g}" for k, v in j.resources.items()) or "-")
    Console(width=200).print(table)


def run(args: argparse.Namespace) -> int:
    jobs, plan = jobs_of(args)
    if args.dry_run:
        _print_jobs(jobs)
        return 0
    if not args.out:
        raise UsageError("validate fleet: --out DIR is required (unless --dry-run)")
    from validate.fleet.progress import FleetView
    from validate.fleet.runner import Fleet, connect, import_ray
    from validate.fleet.store import FleetIndex

    ray = import_ray()
    index = FleetIndex(Path(args.out).resolve())
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    for warning in index.open():
        console.print(warning)
    view = FleetView(jobs)
    started_here = False
    try:
        fleet = Fleet(index, jobs, load_options(plan), retries=args.retries, max_parallel=args.max_parallel,
                      env=plan.env, view=view, retry_failed=args.retry_failed)
        todo = fleet.pending()
        if todo:  # nothing to run: no cluster to start or join
            started_here = connect(ray, args.address)
        done, failed = fleet.run(ray, todo) if todo else (fleet.done, fleet.failed)
    finally:
        view.close()
        if started_here:
            ray.shutdown()
    histories = index.histories()
    for job_id in failed:
        console.print(f"failed {job_id}: {histories[job_id].last.error}")
    console.print(f"{len(done)} jobs done, {len(failed)} failed; index {index.path}")
    return 1 if failed else 0
