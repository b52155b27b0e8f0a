"""The two measuring commands behind the CLI: run (launch + sweep) and sweep (attach); import and export live in
validate.importers.cli and validate.export."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import httpx
from rich.console import Console

from validate import __version__, engines, environment
from validate.engines.config import EngineConfig
from validate.engines.launcher import EngineProcess, free_port
from validate.errors import PointFailedError, UsageError
from validate.modeldir import ModelInfo, config_info, prepare_model_dir, text_decoder
from validate.profiles import LoadOptions, parse_profile
from validate.progress import RichReporter, summary_table
from validate.results import ResultsDir, RunMetadata
from validate.runner import Target, pending_points, run_profile, stored_points
from validate.workload import PromptMaker, Workload, parse_length_dist


def _options(args: argparse.Namespace) -> LoadOptions:
    parse_profile(args.profile)  # fail early on a malformed profile
    if args.gamma_shape is not None and args.arrivals != "gamma":
        raise UsageError(f"--gamma-shape {args.gamma_shape:g} needs --arrivals gamma (got --arrivals {args.arrivals})")
    num_requests = args.num_requests if args.num_requests or args.duration_s else 100
    return LoadOptions(num_requests=num_requests, duration_s=args.duration_s, warmup=args.warmup,
                       burst_size=args.burst_size, sweep_rates=args.sweep_rates, arrivals=args.arrivals,
                       gamma_shape=args.gamma_shape or 1.0,
                       max_concurrency=args.max_concurrency, seed=args.seed)


def _workload(args: argparse.Namespace, model: ModelInfo | None) -> Workload:
    extra = {"vocab_size": model.vocab_size, "special_ids": model.special_ids} if model else {}
    return Workload(isl=args.isl, osl=args.osl, length_dist=parse_length_dist(args.length_dist), seed=args.seed,
                    shared_prefix=args.shared_prefix, **extra)


def _check_lengths(workload: Workload, max_model_len: int | None) -> None:
    longest = PromptMaker(workload, salt=0).max_total_tokens()
    if max_model_len and longest > max_model_len:
        raise UsageError(f"requests of up to {longest} tokens (input + output) exceed the server's "
                         f"max model length {max_model_len}")


def _metadata(args: argparse.Namespace, workload: Workload, options: LoadOptions, **fields: object) -> RunMetadata:
    gpus = environment.gpu_names()
    return RunMetadata(
        validate_command=args.argv, started_at=environment.now_iso(), host=environment.host_name(),
        gpu_id=args.gpu, gpu_name=gpus[0] if gpus else None, gpu_count=len(gpus) or None,
        cpu_model=environment.cpu_model(), python=environment.python_version(), profile=args.profile,
        workload={**workload.describe(), **options.model_dump()}, validate_version=__version__, **fields)


def _finish(results: ResultsDir, points: list, measured: bool = True) -> int:
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)  # keep the table readable in logs and pipes
    console.print(summary_table(points))
    Console(stderr=True, soft_wrap=True).print(f"points: {results.path / 'points.jsonl'}")
    empty = [p for p in points if p.completed == 0]
    if measured and empty:
        raise PointFailedError(
            f"load point{'s' if len(empty) > 1 else ''} {', '.join(p.load for p in empty)} completed none of "
            f"{'their' if len(empty) > 1 else 'its'} requests ({empty[0].errors[0][:200] if empty[0].errors else '?'}); "
            "rerun the same command to measure them again (the other points are kept)")
    return 0


def run(args: argparse.Namespace) -> int:
    options = _options(args)
    results = ResultsDir(args.out)
    model = prepare_model_dir(args.model, results.path / "model")
    workload = _workload(args, model)
    config = EngineConfig(
        model_dir=str(Path(model.path).resolve()),
        served_model_name=args.served_model_name or model.model_id.split("/")[-1],
        dtype=args.dtype, quantization=args.quantization, kv_cache_dtype=args.kv_cache_dtype,
        tensor_parallel_size=args.tp, max_model_len=args.max_model_len,
        gpu_memory_utilization=args.gpu_memory_utilization, max_num_seqs=args.max_num_seqs,
        port=args.port or free_port(), load_format=args.load_format, extra_args=args.engine_args,
        engine_python=args.engine_python)
    command = engines.build_command(args.engine, config, results.path)
    _check_lengths(workload, args.max_model_len or model.max_position_embeddings)
    metadata = _metadata(args, workload, options, engine=args.engine, engine_argv=command.argv,
                         base_url=config.base_url, model_id=model.model_id,
                         served_model_name=command.served_model_name, config_sha256=model.config_sha256)
    done = stored_points(results, metadata)
    dialect = engines.dialect(args.engine)
    text_of = text_decoder(Path(model.path)) if dialect == "transformers" else None
    if not pending_points(args.profile, options, done):
        return _finish(results, list(done.values()))
    reporter = RichReporter()
    try:
        reporter.message(f"starting {args.engine}: {' '.join(command.argv)}")
        engine = EngineProcess(args.engine, command, config.base_url, results.path / "engine.log",
                               startup_timeout_s=args.startup_timeout_s)
        with engine:
            facts = engines.parse_facts(args.engine, engine.log_text())
            facts.version = facts.version or engines.installed_version(command)
            metadata = metadata.model_copy(update={"engine_facts": facts, "engine_version": facts.version,
                                                   "engine_ready_after_s": engine.ready_after_s})
            results.write_metadata(metadata)
            reporter.message(f"{args.engine} {facts.version or ''} ready after {engine.ready_after_s:.0f} s")
            target = Target(base_url=config.base_url, model=command.served_model_name, dialect=dialect,
                            request_timeout_s=args.request_timeout_s, health_path=command.ready_paths[0],
                            engine=args.engine)
            points = run_profile(target, workload, args.profile, options, results, done, reporter, engine, text_of)
    finally:
        reporter.close()
    return _finish(results, points)


VERSION_PATHS = ("/version", "/server_info")  # vLLM; SGLang (its /server_info carries "version")


def _served(base_url: str) -> tuple[list[dict], str | None]:
    """(models listed by /v1/models, engine version from /version or /server_info where the server has one)."""
    try:
        with httpx.Client(timeout=10.0) as http:
            models = http.get(base_url + "/v1/models")
            models.raise_for_status()
            found = None
            for path in VERSION_PATHS:
                version = http.get(base_url + path)
                try:
                    answer = version.json() if version.status_code == 200 else None
                except ValueError:  # a 200 that is not JSON
                    answer = None
                found = answer.get("version") if isinstance(answer, dict) else None
                if found:
                    break
    except httpx.HTTPError as err:
        raise UsageError(f"no OpenAI-compatible server at {base_url}: {type(err).__name__}: {err}") from None
    try:
        listed = models.json()
    except ValueError:
        listed = None
    data = listed.get("data") if isinstance(listed, dict) else None
    if not isinstance(data, list):
        raise UsageError(f"{base_url}/v1/models did not answer a model list ({models.text[:100]!r})")
    return [m for m in data if isinstance(m, dict)], found if isinstance(found, str) else None


def sweep(args: argparse.Namespace) -> int:
    options = _options(args)
    base_url = args.base_url.rstrip("/")
    if args.dialect == "transformers":
        # `transformers serve` lists models by scanning the Hugging Face cache, which fails where there is none;
        # a server started with a pinned model answers for that model whatever /v1/models says.
        entry: dict = {}
        version = None
    else:
        served, version = _served(base_url)
        names = [m.get("id") for m in served]
        if args.model not in names:
            raise UsageError(f"model {args.model!r} is not served at {base_url} (served: {', '.join(map(str, names))})")
        entry = served[names.index(args.model)]
    model = config_info(args.model_config) if args.model_config else None
    workload = _workload(args, model)
    max_len = entry.get("max_model_len")
    _check_lengths(workload, max_len if isinstance(max_len, int) else None)
    results = ResultsDir(args.out)
    metadata = _metadata(args, workload, options, engine=entry.get("owned_by"), engine_version=version,
                         base_url=base_url, model_id=model.model_id if model else args.model,
                         served_model_name=args.model, config_sha256=model.config_sha256 if model else None)
    done = stored_points(results, metadata)
    results.write_metadata(metadata)
    text_of: Callable[[list[int]], str] | None = None
    if args.dialect == "transformers" and model:
        text_of = text_decoder(Path(model.path))
    owner = entry.get("owned_by")
    target = Target(base_url=base_url, model=args.model, dialect=args.dialect, request_timeout_s=args.request_timeout_s,
                    engine=owner if isinstance(owner, str) else None)
    reporter = RichReporter()
    try:
        points = run_profile(target, workload, args.profile, options, results, done, reporter, None, text_of)
    finally:
        reporter.close()
    return _finish(results, points)

