"""``validate run | sweep | import | export | compare | calibrate | fleet``: measure a real engine, or a running server,
or import a report; hold the capacity model against the measurements and fit its factors.

Bad input and engine failures print one line ``ErrorType: message`` to stderr and exit 2. Ctrl-C
stops the engine and keeps every finished point (exit 130).
"""

from __future__ import annotations

import argparse
import functools
import shlex
import sys
from pathlib import Path
from typing import NoReturn

from pydantic import ValidationError

from capacity.argtypes import LENGTH_MAX_TOKENS, float_in, int_in, output_folder
from capacity.loads.draws import GAMMA_SHAPE_MAX, GAMMA_SHAPE_MIN, SEED_MAX
from validate import commands, export, report
from validate.engines import ENGINES
from validate.errors import UsageError, ValidateError, one_line
from validate.importers import cli as importers_cli
from validate.fleet import command as fleet


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


MAX_TIMEOUT_S = 7 * 24 * 3600.0
_positive_seconds = float_in(0, MAX_TIMEOUT_S, lo_open=True, what="seconds")
_fraction = float_in(0, 1, hi_open=True, what="a fraction")


REQUESTS_MAX = 10_000_000  # requests (measured, warm-up, in flight) of one load point
DURATION_MAX_S = 7 * 86_400.0  # a week: longer is a typo, not a benchmark
SWEEP_RATES_MAX = 100  # rate points between sync and burst


def _length_dist(text: str) -> str:
    """--length-dist, checked (a length file read) while the command line is parsed, before any server is asked."""
    from validate.workload import parse_length_dist

    try:
        parse_length_dist(text)
    except UsageError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def _add_load_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("workload and load")
    g.add_argument("--isl", type=int_in(1, LENGTH_MAX_TOKENS), required=True, help="input tokens per request (mean)")
    g.add_argument("--osl", type=int_in(1, LENGTH_MAX_TOKENS), required=True, help="output tokens per request (mean), exact via ignore_eos")
    g.add_argument("--profile", default="sweep",
                   help="sweep | sync | burst:N | concurrency:C[,C...] | rate:R[,R...] (default sweep)")
    g.add_argument("--num-requests", type=int_in(1, REQUESTS_MAX),
                   help="measured requests per load point (default 100, or no limit with --duration-s)")
    g.add_argument("--duration-s", type=float_in(0, DURATION_MAX_S, lo_open=True, what="seconds"), help="seconds of arrivals per load point (with --num-requests: "
                   "whichever ends first)")
    g.add_argument("--warmup", type=int_in(0, REQUESTS_MAX), default=2, help="warm-up requests before each point, not measured")
    g.add_argument("--burst-size", type=int_in(1, REQUESTS_MAX), help="requests of the sweep's burst point (default --num-requests)")
    g.add_argument("--sweep-rates", type=int_in(1, SWEEP_RATES_MAX), default=5, help="rates between sync and burst in a sweep")
    g.add_argument("--arrivals", choices=["constant", "poisson", "gamma"], default="constant",
                   help="gaps between a rate point's arrivals (the step simulator draws the same ones for --seed)")
    g.add_argument("--gamma-shape", type=float_in(GAMMA_SHAPE_MIN, GAMMA_SHAPE_MAX),
                   help="with --arrivals gamma: the gaps' shape (default 1 = Poisson, < 1 burstier)")
    g.add_argument("--max-concurrency", type=int_in(1, REQUESTS_MAX), help="cap on requests in flight at rate points")
    g.add_argument("--length-dist", default="fixed", type=_length_dist, help="fixed | uniform:R | normal:R | file:PATH")
    g.add_argument("--shared-prefix", type=_fraction, default=0.0, metavar="F",
                   help="share of each prompt that is one prefix common to the run's requests, so a prefix cache "
                        "can hit it (default 0: every prompt unique from its first token)")
    g.add_argument("--seed", type=int_in(0, SEED_MAX), default=0)
    g.add_argument("--request-timeout-s", type=_positive_seconds,
                   help="timeout of one request, start to end of its stream (default: from the load: 60 s + the "
                        "requests in flight x the longest request's tokens / 1,000 tokens/s)")
    g.add_argument("--gpu", help="GPU id of the hardware catalog, recorded for compare (e.g. h200-sxm)")
    g.add_argument("--out", required=True, type=output_folder, help="results folder (rerun with the same folder to resume)")


def build_parser() -> Parser:
    parser = Parser(prog="validate", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    run = sub.add_parser("run", help="launch an engine, sweep load, stop it")
    run.add_argument("--engine", choices=ENGINES, required=True)
    run.add_argument("--model", required=True, help="catalog id (org/name), config.json or model folder")
    e = run.add_argument_group("engine options")
    e.add_argument("--served-model-name", help="default: the model folder's name")
    e.add_argument("--dtype")
    e.add_argument("--quantization")
    e.add_argument("--kv-cache-dtype")
    e.add_argument("--tp", type=int, default=1, help="tensor-parallel size")
    e.add_argument("--max-model-len", type=int)
    e.add_argument("--gpu-memory-utilization", type=float)
    e.add_argument("--max-num-seqs", type=int)
    e.add_argument("--load-format", default="dummy", help="dummy (random weights, default) or auto")
    e.add_argument("--engine-arg", action="append", default=[],
                   help="extra engine flag(s), repeatable; write --engine-arg=--enforce-eager")
    e.add_argument("--engine-python", help="interpreter (or trtllm-serve executable) that runs the engine")
    e.add_argument("--port", type=int_in(1, 65_535), help="default: a free port")
    e.add_argument("--startup-timeout-s", type=float_in(0, DURATION_MAX_S, lo_open=True, what="seconds"), default=900.0)
    _add_load_options(run)
    run.set_defaults(func=commands.run)

    sweep = sub.add_parser("sweep", help="sweep load against a server that is already running")
    sweep.add_argument("--base-url", required=True)
    sweep.add_argument("--model", required=True, help="the served model name")
    sweep.add_argument("--model-config", help="catalog id, config.json or folder: vocabulary, special ids, hash")
    sweep.add_argument("--dialect", choices=["openai", "transformers"], default="openai")
    _add_load_options(sweep)
    sweep.set_defaults(func=commands.sweep)

    importers_cli.add_parser(sub)
    export.add_parser(sub)
    report.add_parsers(sub)
    fleet.add_parser(sub)
    return parser


def _engine_args(items: list[str]) -> list[str]:
    try:
        return [part for item in items for part in shlex.split(item)]
    except ValueError as err:  # unbalanced quotes
        raise UsageError(f"--engine-arg {items!r}: {err}") from None


@functools.cache
def _parser() -> Parser:
    """Built once per process (parse_args leaves it unchanged): main() is also called in-process, many times."""
    return build_parser()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = _parser().parse_args(argv)
        args.engine_args = _engine_args(getattr(args, "engine_arg", []))
        args.argv = ["validate", *argv]
        return int(args.func(args) or 0)
    except ValidationError as err:
        print(f"UsageError: {one_line(err, with_input=False)}", file=sys.stderr)
    except ValidateError as err:
        print(f"{type(err).__name__}: {one_line(err)}", file=sys.stderr)
    except OSError as err:  # a file or folder the user named could not be read or written
        if err.filename is None:
            raise
        print(f"{type(err).__name__}: {err.filename}: {err.strerror}", file=sys.stderr)
    except Exception as err:
        # compare/calibrate load the capacity model; its bad-input errors are one line too. The run and
        # sweep paths never import it (they run where only numpy/pydantic/httpx exist).
        errors = sys.modules.get("capacity.errors")
        if errors is None or not isinstance(err, errors.CapacityError):
            raise
        print(f"{type(err).__name__}: {one_line(err)}", file=sys.stderr)
    except KeyboardInterrupt:
        args_ = locals().get("args")
        out = getattr(args_, "out", None)
        kept = f"; finished points are kept in {Path(out)}" if out else ""
        stopped = "engine stopped" if getattr(args_, "command", None) == "run" else "stopped"
        print(f"Interrupted: {stopped}{kept}", file=sys.stderr)
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
