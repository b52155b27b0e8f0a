"""``validate import FILE... --out DIR``: one results folder per configuration the files hold.

Files of one configuration (several vllm-bench or AIPerf runs of one server, guidellm's or llm-d's reports)
become one folder, one point per load. InferenceX rows of several configurations become one subfolder of
DIR each, with a scenario.json. Warnings (a vllm-bench sweep that resent cached prompts) go to stderr, one
line each, and are kept in the metadata.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from validate.errors import UsageError
from validate.importers import import_files
from validate.importers.common import ImportedRun
from validate.progress import summary_table
from validate.results import ResultsDir
from capacity.argtypes import output_folder


def write_run(run: ImportedRun, out: Path) -> ResultsDir:
    results = ResultsDir(out)
    if results.points():
        raise UsageError(f"{results.path} already holds points; import into an empty folder")
    results.append_requests(run.requests)
    for point in run.points:
        results.append_point(point)
    if run.warnings:
        run.metadata.workload["import_warnings"] = run.warnings
    results.write_metadata(run.metadata)
    if run.scenario:
        (results.path / "scenario.json").write_text(json.dumps(run.scenario, indent=1) + "\n")
    return results


def import_command(args: argparse.Namespace) -> int:
    runs, warnings = import_files([Path(f) for f in args.files], args.argv)
    for run in runs:  # what the file cannot say, for validate compare
        if args.gpu:
            run.metadata.gpu_id = args.gpu
        if args.model:
            run.metadata.model_id = args.model
    out = Path(args.out)
    targets = [out / run.folder if len(runs) > 1 and run.folder else out for run in runs]
    for target in targets:  # refuse before anything is written
        if (target / "points.jsonl").is_file() and ResultsDir(target).points():
            raise UsageError(f"{target} already holds points; import into an empty folder")
    for line in warnings:
        print(line, file=sys.stderr)
    console = Console() if Console().is_terminal else Console(width=160)
    for run, target in zip(runs, targets):
        results = write_run(run, target)
        if len(runs) > 1:
            console.print(f"{results.path}:")
        console.print(summary_table(run.points))
    Console(stderr=True, soft_wrap=True).print(
        f"points: {out / 'points.jsonl'}" if len(runs) == 1 else f"{len(runs)} folders under {out}")
    return 0


def add_parser(sub: Any) -> None:
    imp = sub.add_parser("import", help="import vllm bench, guidellm, AIPerf, genai-perf, llm-d Benchmark Report "
                                        "or InferenceX files")
    imp.add_argument("files", nargs="+", metavar="FILE")
    imp.add_argument("--out", required=True, type=output_folder)
    imp.add_argument("--gpu", help="GPU id of the hardware catalog the files were measured on (for compare)")
    imp.add_argument("--model", help="model id of the catalog (for compare), when the file names it otherwise")
    imp.set_defaults(func=import_command)
