"""`capacity` command line: estimate, gpus, models, sweep, size. Errors print one line and exit 2.

Every flag is parsed by a type below that checks its range, so a bad value is refused where it enters,
naming the flag; results are checked finite and non-negative before they are printed (`--json` is strict
JSON). Set LLMCAP_TRACEBACK=1 to see the traceback of an unexpected error (exit 3) instead of its one line.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from capacity.argtypes import LENGTH_MAX_TOKENS, float_in as _float_in, int_in as _int_in, output_file
from capacity.loads.draws import GAMMA_SHAPE_MAX, GAMMA_SHAPE_MIN, SEED_MAX
from capacity.engine import PROFILES
from capacity.errors import CapacityError, InputError, ResultError, flatten_validation_error, one_line, show_value
from capacity.estimate import Scenario, estimate
from capacity.load import parse_load
from capacity.model.architecture import load_model
from capacity.model.precision import PRECISION_CHOICES

LIST_MAX_ITEMS = 10_000
SWEEP_MAX_ROWS = 2_000_000


class CliParser(argparse.ArgumentParser):
    """argparse whose errors are one line (no usage block) raised as InputError, naming the flag."""

    def error(self, message: str):  # type: ignore[override]
        raise InputError(one_line(f"{self.prog}: {message} (see {self.prog} --help)"))


def _list_of(item):
    """Comma-separated values, each parsed by `item`; at least one, at most LIST_MAX_ITEMS."""

    def parse(text: str) -> list:
        parts = [x for x in text.split(",") if x.strip()]
        if not parts:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {show_value(text)}")
        if len(parts) > LIST_MAX_ITEMS:
            raise argparse.ArgumentTypeError(f"expected at most {LIST_MAX_ITEMS:,} values, got {len(parts):,}")
        return [item(x) for x in parts]

    parse.__name__ = "list"
    return parse


def _names(text: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names or len(names) > 1_000:
        raise argparse.ArgumentTypeError(f"expected 1 to 1,000 comma-separated names, got {show_value(text)}")
    return names


def _load(text: str) -> str:
    try:
        parse_load(text)
    except CapacityError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _choice(choices: tuple[str, ...]):
    def parse(text: str) -> str:
        if text.strip() not in choices:
            raise argparse.ArgumentTypeError(f"expected one of {', '.join(choices)}, got {show_value(text)}")
        return text.strip()

    parse.__name__ = "choice"
    return parse


_tp = _int_in(1, 1024)
_length = _int_in(1, LENGTH_MAX_TOKENS)
_price = _float_in(0.0, 1e4, lo_open=True)


def _scenario_args(p: argparse.ArgumentParser, with_load: bool = True) -> None:
    d = Scenario()
    p.add_argument("--model", default=d.model, help="catalog id or path to a config.json (default: %(default)s)")
    p.add_argument("--gpu", default=d.gpu, help="GPU id or path to a GPU TOML file (default: %(default)s)")
    p.add_argument("--num-gpus", type=_int_in(1, 4096), help="GPUs in all (default: one replica, tp × pp)")
    p.add_argument("--tp", type=_tp, default=1, help="tensor-parallel size (GPUs per pipeline stage)")
    p.add_argument("--pp", type=_int_in(1, 256), default=1,
                   help="pipeline-parallel stages of --tp GPUs each (a replica is tp × pp GPUs; default 1)")
    p.add_argument("--expert-parallel", action="store_true", help="split MoE experts across the TP GPUs")
    p.add_argument("--attention-dp", action="store_true",
                   help="attention data parallel over the TP GPUs (TensorRT-LLM DEP, SGLang --enable-dp-attention)")
    p.add_argument("--precision", default=d.precision, choices=PRECISION_CHOICES)
    p.add_argument("--kv-precision", default=d.kv_precision, choices=("bf16", "fp8"))
    p.add_argument("--engine", default=d.engine, choices=tuple(PROFILES))
    p.add_argument("--ideal", action="store_true", help="pure roofline: efficiencies 1, overheads 0")
    p.add_argument("--calibration", help="calibration JSON (default: the shipped one for engine/GPU/precision)")
    p.add_argument("--isl", type=_length, default=d.isl, help="input tokens per request")
    p.add_argument("--osl", type=_length, default=d.osl, help="output tokens per request")
    if with_load:
        p.add_argument("--load", type=_load, default=d.load, help="sync | concurrency:C | burst:N | rate:R (default: %(default)s)")
        p.add_argument("--num-requests", type=_int_in(1, 1_000_000),
                       help="requests in the test (rate: default 120 s of arrivals; concurrency: default endless)")
        p.add_argument("--method", default=d.method, choices=("auto", "closed-form", "simulate"),
                       help="closed forms, the step simulator, or auto (default): simulate what the closed forms "
                            "cannot express")
        p.add_argument("--arrivals", default=d.arrivals, choices=("constant", "poisson", "gamma"),
                       help="rate loads: gaps between arrivals (default: %(default)s)")
        p.add_argument("--gamma-shape", type=_float_in(GAMMA_SHAPE_MIN, GAMMA_SHAPE_MAX), default=d.gamma_shape,
                       help="gamma arrivals: shape (1 = Poisson, < 1 burstier)")
        p.add_argument("--length-dist", type=_length_dist, default=("fixed", 0.0),
                       help="fixed | uniform:R (±R × mean) | normal:R (σ = R × mean), as validate --length-dist")
        p.add_argument("--think-time-s", type=_float_in(0.0, 86_400.0), default=0.0,
                       help="closed loops: pause between a reply and the next request")
        p.add_argument("--seed", type=_int_in(0, SEED_MAX), default=0, help="simulator: arrivals and lengths")
    p.add_argument("--price-usd-per-gpu-hour", type=_price)
    p.add_argument("--price-usd-per-kwh", type=_float_in(0.0, 100.0),
                   help="electricity price: adds the energy per million output tokens at the GPUs' TDP (an upper bound)")
    _limit_args(p)
    p.add_argument("--spec-acceptance", type=_float_in(0.0, 1.0, hi_open=True), default=0.0, help="speculative decoding acceptance rate")
    p.add_argument("--spec-draft-tokens", type=_int_in(0, 64), default=0)
    p.add_argument("--spec-draft-cost", type=_float_in(0.0, 10.0), default=0.0, help="draft step time / target decode step time")
    p.add_argument("--spec-draft-model", help="a draft model (catalog id or config.json): priced from its own "
                                              "architecture, instead of --spec-draft-cost")


def _limit_args(p: argparse.ArgumentParser) -> None:
    """The engine limits and the cache state, shared by estimate, simulate, size and sweep."""
    p.add_argument("--gpu-memory-utilization", type=_float_in(0.0, 1.0, lo_open=True))
    p.add_argument("--max-num-seqs", type=_int_in(1, 1_000_000))
    p.add_argument("--max-num-batched-tokens", type=_int_in(1, 100_000_000))
    p.add_argument("--max-model-len", type=_int_in(1, 100_000_000))
    p.add_argument("--max-cudagraph-tokens", type=_int_in(0, 10_000_000), help="largest CUDA graph in tokens (0 = eager; default: the engine's)")
    p.add_argument("--recv-interval-steps", type=_int_in(1, 100_000), help="SGLang --scheduler-recv-interval: decode "
                   "steps between reads of new requests (default: the engine's, 1)")
    p.add_argument("--api-server-count", type=_int_in(1, 64), help="vLLM --api-server-count: front-end processes "
                   "streaming tokens (default: the engine's, 1)")
    p.add_argument("--attention-backend", help="SGLang --attention-backend: the attention kernels (aiter, triton, fa3, "
                   "...; default: the engine's own choice)")
    p.add_argument("--prefix-hit-rate", type=_float_in(0.0, 1.0, hi_open=True), default=0.0, help="share of prompt tokens already cached")


SWEEP_OPTIONS = ("gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens", "max_model_len",
                 "max_cudagraph_tokens", "recv_interval_steps", "api_server_count", "prefix_hit_rate", "expert_parallel",
                 "calibration")


def _length_dist(text: str) -> tuple[str, float]:
    kind, _, ratio = text.strip().partition(":")
    if kind == "fixed" and not ratio:
        return "fixed", 0.0
    if kind in ("uniform", "normal"):
        try:
            r = float(ratio)
        except ValueError:
            r = -1.0
        if 0.0 <= r < (1.0 if kind == "uniform" else 10.0):
            return kind, r
    raise argparse.ArgumentTypeError(f"expected fixed, uniform:R (0 <= R < 1) or normal:R (0 <= R < 10), got {text!r}")


def _scenario(a: argparse.Namespace, **extra) -> Scenario:
    fields = {k: getattr(a, k) for k in Scenario.model_fields if hasattr(a, k) and getattr(a, k) is not None}
    if isinstance(fields.get("length_dist"), tuple):
        fields["length_dist"], fields["length_ratio"] = fields["length_dist"]
    fields.update(extra)
    try:
        s = Scenario(**fields)
    except ValidationError as exc:  # named as the flag the user typed
        raise InputError(flatten_validation_error(exc, {k: "--" + k.replace("_", "-") for k in fields})) from None
    if s.expert_parallel and load_model(s.model).moe is None:  # a sweep's grid may mix models: there it is a no-op
        raise InputError(f"--expert-parallel: {s.model} has no experts (a dense model); leave the flag off")
    return s


def _bad_number(value: Any, path: str = "") -> str | None:
    """The path of the first number in a result that is not finite and non-negative, else None."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return None
    if isinstance(value, (int, float)):
        return None if math.isfinite(value) and value >= 0 else f"{path or 'value'} = {show_value(value)}"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
    for k, v in items:
        bad = _bad_number(v, f"{path}.{k}" if path else str(k))
        if bad:
            return bad
    return None


def _checked(result: Any) -> Any:
    """A result, once every number in it is finite and non-negative (else ResultError: never print Infinity)."""
    bad = _bad_number(result)
    if bad:
        raise ResultError(f"the model gave a non-physical result for these inputs ({bad}); nothing printed")
    return result


def _print_json(result: Any) -> None:
    print(json.dumps(_checked(result), indent=2, allow_nan=False))


def _fmt_bytes(b: float) -> str:
    return f"{b / 1e9:,.2f} GB ({b / 2**30:,.2f} GiB)"


def _fmt(v, unit: str = "") -> str:
    if v is None:
        return "n/a"
    return f"{v:,.4g}{unit}"


def print_estimate_table(e) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{e.model} on {e.num_gpus}× {e.gpu} ({e.weight_format} weights, {e.kv_precision} KV, "
                    f"{e.engine}{', ideal' if e.ideal else ''}) — {e.isl} in / {e.osl} out, load {e.load}",
              show_header=True, header_style="bold")
    t.add_column("quantity")
    t.add_column("value", justify="right")
    rows = [
        ("parameters (total / active per token)", f"{e.total_params / 1e9:,.2f} B / {e.active_params_per_token / 1e9:,.2f} B"),
        ("weights per GPU" + (" (tightest stage)" if e.pp > 1 else ""), _fmt_bytes(e.weight_bytes_per_gpu)),
        ("KV cache per token", f"{e.kv_bytes_per_token:,.0f} bytes"),
        ("KV cache per GPU", _fmt_bytes(e.kv_cache_bytes_per_gpu)),
        ("KV capacity (tokens per replica)", f"{e.kv_capacity_tokens:,}"),
        ("max concurrent requests at isl+osl", f"{e.max_concurrent_requests:,}"),
        ("TTFT", _fmt(e.ttft_s * 1e3, " ms")),
        ("inter-token latency", _fmt(e.itl_s * 1e3, " ms")),
        ("end-to-end latency", _fmt(e.e2e_latency_s, " s")),
        ("requests/s", _fmt(e.requests_per_s)),
        ("output tokens/s", _fmt(e.output_tokens_per_s)),
        ("total tokens/s", _fmt(e.total_tokens_per_s)),
        ("requests running at once", _fmt(e.running_requests)),
        ("prefill / decode bound", f"{e.prefill_bound} / {e.decode_bound}{' (host-bound step)' if e.decode_host_bound else ''}"),
        ("ridge point", f"{e.ridge_point_flops_per_byte:,.0f} FLOP/byte"),
        ("decode turns compute-bound at batch", _fmt(e.decode_compute_bound_batch)),
        ("$/M output tokens", _fmt(e.usd_per_million_output_tokens)),
        ("$/M total tokens", _fmt(e.usd_per_million_total_tokens)),
        ("price per GPU-hour", _fmt(e.price_usd_per_gpu_hour, " $")),
        ("mean power, all GPUs (predicted)", _fmt(e.power_w, " W")),
        ("energy per output token (predicted)", _fmt(e.joules_per_output_token, " J")),
        ("energy per output token (at TDP, at most)", _fmt(e.joules_per_output_token_at_most, " J")),
        *([("$/M output tokens, electricity", _fmt(e.usd_per_million_output_tokens_energy))]
          if e.usd_per_million_output_tokens_energy is not None else []),
        ("calibration", e.calibration),
        ("load model", f"{e.method}: {e.regime}"),
    ]
    if e.card is None:  # the card's intervals are checked on held-out points; the fit residuals' are the fallback
        for k, (lo, hi) in e.intervals.items():
            rows.append((f"{k} 90 % interval (fit residuals)", f"{lo:,.4g} – {hi:,.4g}"))
    from capacity.card import card_rows
    rows += card_rows(e.card)  # the accuracy card: domain, slice, held-out error, intervals (capacity/card.py)
    for row in rows:
        t.add_row(*row)
    console = Console()
    console.print(t)
    for n in e.notes + (e.card.notes if e.card else []):
        console.print(f"[yellow]note:[/yellow] {n}")


def cmd_estimate(a) -> int:
    e = estimate(_scenario(a))
    _checked(e.model_dump())
    if a.json:
        _print_json(e.model_dump())
    else:
        print_estimate_table(e)
    return 0


def _read_trace(path: str, load: str) -> dict:
    """A trace to replay: CSV with columns send_s (or start_s), input_tokens (or isl) and output_tokens (or osl) —
    a `validate` requests.csv works: its rows of the point named by --load — sorted by send time."""
    import pandas as pd

    try:
        df = pd.read_csv(path)
    except Exception as exc:  # noqa: BLE001  any unreadable file is one line
        raise InputError(f"{path}: not a readable CSV trace ({type(exc).__name__})") from None
    cols = {c.lower(): c for c in df.columns}
    if "load" in cols:  # a results file of several points: the one --load names
        labels = sorted(set(df[cols["load"]].astype(str)))
        df = df[df[cols["load"]].astype(str) == load]
        if not len(df):
            held = f"it holds {', '.join(labels)[:300]}" if labels else "it holds no requests"
            raise InputError(f"{path}: no requests of load {load!r} (--load); {held}")
    pick = lambda *names: next((cols[n] for n in names if n in cols), None)  # noqa: E731
    send, isl, osl = pick("send_s", "start_s"), pick("input_tokens", "isl"), pick("output_tokens", "osl")
    if not (send and isl and osl):
        raise InputError(f"{path}: a trace needs columns send_s (or start_s), input_tokens (or isl), output_tokens (or osl)")
    if len(df) == 0 or len(df) > 1_000_000:
        raise InputError(f"{path}: a trace holds 1 to 1,000,000 rows (got {len(df):,})")
    df = df[[send, isl, osl]].apply(pd.to_numeric, errors="coerce")
    for col, ok in ((send, lambda v: np.isfinite(v) & (v >= 0) & (v <= 1e9)),
                    (isl, lambda v: (v >= 1) & (v <= LENGTH_MAX_TOKENS) & (v == np.floor(v))),
                    (osl, lambda v: (v >= 1) & (v <= LENGTH_MAX_TOKENS) & (v == np.floor(v)))):
        bad = ~ok(df[col].to_numpy(dtype=float))  # NaN (not a number) fails every test
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            want = ("seconds from 0 to 1e9" if col == send else f"a whole number of tokens from 1 to {LENGTH_MAX_TOKENS:,}")
            raise InputError(f"{path}: row {df.index[row] + 2}: {col}: expected {want}, got {df[col].iloc[row].item()!r}")
    df = df.sort_values(send)
    return {"trace_send_s": tuple(float(x) for x in df[send]), "trace_isl": tuple(int(x) for x in df[isl]),
            "trace_osl": tuple(int(x) for x in df[osl])}


def cmd_simulate(a) -> int:
    """The step simulator on one scenario: per-request latencies and the engine's own counters."""
    from capacity.estimate import calibration_for, plan_for, service_run, simulation_setup
    from capacity.load import parse_load
    from capacity.loadmodel.simulate import simulate

    s = _scenario(a, method="simulate")
    if s.pp > 1:
        raise InputError("--pp: capacity simulate runs one engine's batch; a pipeline's batches in flight are "
                         "priced by capacity estimate --pp N --method simulate")
    load = parse_load(s.load)
    trace = _read_trace(a.trace, str(load)) if a.trace else {}
    plan = plan_for(s)
    cal = calibration_for(s, plan)
    n = len(trace.get("trace_isl", ())) or load.shape.simulated_requests(load.value, s.num_requests)
    engine, traffic = simulation_setup(plan, cal, s, load.kind, load.value, n, trace)
    r = simulate(engine, traffic, s.isl, s.osl)
    # an endless closed loop's steady state is a service's: its clients out of step (as the estimate prices it)
    steady = (service_run(plan, cal, s, engine, traffic, load.kind, load.value) or r).summary("steady")
    ttft = r.first_token_s - r.send_s
    e2e = r.end_s - r.send_s
    gaps = np.maximum(r.osl - 1, 1)
    tpot = np.where(r.osl > 1, (r.end_s - r.first_token_s) / gaps, 0.0)
    pct = lambda x: {f"p{q}": float(np.percentile(x, q)) for q in (50, 90, 99)}  # noqa: E731
    out = {"model": s.model, "gpu": s.gpu, "engine": plan.profile.name, "load": str(load), "requests": int(len(r.isl)),
           "calibration": cal.label, "summary": r.summary(), "steady_state": steady,
           "ttft_s": pct(ttft), "tpot_s": pct(tpot), "e2e_latency_s": pct(e2e),
           "engine_steps": r.steps, "preemptions": r.preemptions, "mean_running": r.mean_running,
           "max_running": r.max_running, "kv_full_share": r.kv_full_share}
    _checked(out)
    if a.out:
        import pandas as pd

        pd.DataFrame({"send_s": r.send_s, "input_tokens": r.isl, "output_tokens": r.osl, "ttft_s": ttft,
                      "tpot_s": tpot, "e2e_latency_s": e2e}).to_csv(a.out, index=False)
    if a.json:
        _print_json(out)
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"simulated: {s.model} on {s.gpu} ({plan.profile.name}), {len(r.isl):,} requests, load {load}"
                    f"{', trace ' + a.trace if a.trace else ''}")
    for col in ("metric", "mean", "p50", "p90", "p99"):
        t.add_column(col, justify="right" if col != "metric" else "left")
    m = out["summary"]
    for name, key, scale, unit in (("TTFT", "ttft_s", 1e3, "ms"), ("time per output token", "tpot_s", 1e3, "ms"),
                                   ("end-to-end", "e2e_latency_s", 1.0, "s")):
        mean = m["itl_s"] if key == "tpot_s" else m[key]
        t.add_row(f"{name} ({unit})", *(f"{v * scale:,.4g}" for v in (mean, *out[key].values())))
    console = Console()
    console.print(t)
    console.print(f"requests/s {m['requests_per_s']:,.4g} (benchmark as run), {out['steady_state']['requests_per_s']:,.4g} "
                  f"(steady state); output tokens/s {m['output_tokens_per_s']:,.4g}; engine steps {r.steps:,}; "
                  f"preemptions {r.preemptions:,}; running {r.mean_running:,.1f} mean / {r.max_running:,} max; "
                  f"KV cache full {r.kv_full_share:.0%} of the time; calibration {cal.label}")
    return 0


def cmd_gpus(a) -> int:
    from capacity.hardware import gpu_catalog

    rows = [{"id": g.id, "name": g.name, "memory_GB": g.memory_bytes / 1e9, "bandwidth_TB_per_s": g.memory_bandwidth_bytes_per_s / 1e12,
             "bf16_TFLOPS": g.dense_flops_per_s.bf16 / 1e12,
             "fp8_TFLOPS": (g.dense_flops_per_s.fp8 or 0) / 1e12, "fp4_TFLOPS": (g.dense_flops_per_s.fp4 or 0) / 1e12,
             "usd_per_hour": g.price_usd_per_gpu_hour} for g in gpu_catalog().values()]
    _print_rows(rows, a.json, "GPUs (dense peaks)")
    return 0


def cmd_models(a) -> int:
    from capacity.model.architecture import catalog_ids, load_model
    from capacity.model.kv import kv_bytes_per_token
    from capacity.model.params import active_params_per_token, count_params

    rows = []
    for mid in catalog_ids():
        m = load_model(mid)
        rows.append({"id": mid, "params_B": count_params(m).total / 1e9, "active_B": active_params_per_token(m) / 1e9,
                     "layers": m.num_layers, "kv_heads": m.num_kv_heads,
                     "attention": "MLA" if m.mla else ("hybrid" if m.num_sliding_layers and m.num_full_layers else
                                                      ("sliding" if m.num_sliding_layers else "full")),
                     "moe": f"{m.moe.num_experts}x top-{m.moe.num_experts_per_token}" if m.moe else "",
                     "kv_bytes_per_token_bf16": kv_bytes_per_token(m, 2.0)})
    _print_rows(rows, a.json, "Models")
    return 0


def _print_rows(rows: list[dict], as_json: bool, title: str) -> None:
    if as_json:
        _print_json(rows)
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title)
    for k in rows[0]:
        t.add_column(k, justify="left" if isinstance(rows[0][k], str) else "right")
    for r in rows:
        t.add_row(*[(f"{v:,.4g}" if isinstance(v, float) else str(v if v is not None else "")) for v in r.values()])
    Console().print(t)


SWEEP_RESULT_COLUMNS = ("ttft_s", "itl_s", "e2e_latency_s", "requests_per_s", "output_tokens_per_s", "total_tokens_per_s")


def cmd_sweep(a) -> int:
    from capacity.sweep import sweep_grid

    for v in a.load_values:  # each value as the load it stands for (whole numbers for concurrency and bursts)
        try:
            parse_load(f"{a.load_kind}:{v!r}" if a.load_kind != "sync" else "sync")
        except CapacityError as exc:
            raise InputError(f"argument --load-values: {exc}") from None
    from capacity.hardware import load_gpu
    from capacity.model.architecture import load_model

    for flag, ids, load in (("--model", a.model, load_model), ("--gpu", a.gpu, load_gpu)):
        for one in ids:  # an unknown id or a bad file is an input error, not a row that does not fit
            try:
                load(one)
            except CapacityError as exc:
                raise InputError(f"argument {flag}: {exc}") from None
    rows = math.prod(map(len, (a.model, a.gpu, a.precision, a.tp, a.isl, a.osl, a.load_values)))
    if rows > SWEEP_MAX_ROWS:
        raise InputError(f"the grid has {rows:,} rows; at most {SWEEP_MAX_ROWS:,} per sweep: split it")
    options = {k: getattr(a, k) for k in SWEEP_OPTIONS if getattr(a, k) not in (None, False)}
    df = sweep_grid(a.model, a.gpu, a.precision, a.isl, a.osl, a.load_kind, a.load_values, a.tp, a.kv_precision,
                    a.engine, a.ideal, a.price_usd_per_gpu_hour, options)
    fitting = df[df["fits"].astype(bool)] if "fits" in df else df
    for col in SWEEP_RESULT_COLUMNS:
        if col in fitting and len(fitting):
            values = fitting[col].to_numpy(dtype=float)
            bad = fitting[~(np.isfinite(values) & (values >= 0))]
            if len(bad):
                raise ResultError(f"the model gave a non-physical {col} ({show_value(float(bad[col].iloc[0]))}) for "
                                  f"{bad['model'].iloc[0]} on {bad['gpu'].iloc[0]}; nothing written")
    out = Path(a.out)
    if out.suffix == ".parquet":
        df.to_parquet(out, index=False)
    else:
        df.to_csv(out, index=False)
    print(f"wrote {len(df):,} rows to {out}")
    return 0


def _print_layouts(ans) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"Pareto front for {ans.target_rps:g} req/s of {ans.isl}/{ans.osl} tokens, TTFT ≤ {ans.ttft_slo_s:g} s, "
                    f"ITL ≤ {ans.itl_slo_s * 1e3:g} ms ({ans.model} on {ans.gpu}; {ans.layouts_within_slo:,} of "
                    f"{ans.layouts_evaluated:,} layouts within the objectives, searched in {ans.search_s * 1e3:.0f} ms)")
    for col in ("layout", "GPUs", "$/hour", "output tok/s per GPU", "tok/s per user", "TTFT ms", "ITL ms", "KV transfer ms"):
        t.add_column(col, justify="left" if col == "layout" else "right")
    for p in ans.pareto_front:
        t.add_row(p.name + (" ◀" if ans.chosen and p == ans.chosen else ""), f"{p.num_gpus:,}", _fmt(p.usd_per_hour),
                  f"{p.output_tokens_per_s_per_gpu:,.0f}", f"{p.tokens_per_s_per_user:,.0f}", f"{p.ttft_s * 1e3:,.1f}",
                  f"{p.itl_s * 1e3:,.2f}", f"{p.kv_transfer_s * 1e3:,.3f}" if p.kind == "disaggregated" else "–")
    console = Console()
    console.print(t)
    for label, p in (("chosen", ans.chosen), ("best aggregated", ans.best_aggregated),
                     ("best disaggregated", ans.best_disaggregated)):
        console.print(f"{label}: " + (f"{p.name}, {p.num_gpus:,} GPUs, {_fmt(p.usd_per_hour)} $/hour" if p else "none"))
    for tp, why in ans.unfit.items():
        console.print(f"[yellow]TP {tp} does not fit:[/yellow] {why}")
    for n in ans.notes:
        console.print(f"[yellow]note:[/yellow] {n}")
    if ans.launch:
        print("launch:", *ans.launch, sep="\n  ")  # unwrapped, to copy


def cmd_size(a) -> int:
    from capacity.sizing import size, size_layouts

    if a.num_gpus is not None:
        raise InputError("--num-gpus: size chooses the GPU count itself (replicas × tp × pp); give the "
                         "tensor-parallel sizes to try with --tps")

    if a.disagg:
        ans = size_layouts(_scenario(a), a.target_rps, a.ttft_slo_s, a.itl_slo_s, a.tps, link=a.link,
                           transfer=a.kv_transfer, router=a.router, prefix_groups=a.prefix_groups,
                           prefill_max_num_batched_tokens=a.prefill_max_num_batched_tokens,
                           decode_max_num_seqs=a.decode_max_num_seqs)
        out = _checked(ans.model_dump())
        if a.json:
            _print_json(out)
        else:
            _print_layouts(ans)
        return 0
    opts = size(_scenario(a), a.target_rps, a.ttft_slo_s, a.itl_slo_s, a.tps)
    rows = _checked([o.model_dump() for o in opts])
    if a.json:
        _print_json(rows)
    else:
        _print_rows(rows, False, f"GPUs for {a.target_rps:g} req/s, TTFT ≤ {a.ttft_slo_s:g} s, ITL ≤ {a.itl_slo_s * 1e3:g} ms")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = CliParser(prog="capacity", description="How many users, how fast, at what cost.")
    sub = p.add_subparsers(dest="cmd")
    e = sub.add_parser("estimate", help="predict memory, latency, throughput and cost for one configuration")
    _scenario_args(e)
    e.add_argument("--json", action="store_true")
    e.set_defaults(func=cmd_estimate)
    sim = sub.add_parser("simulate", help="the step simulator: per-request latency percentiles, preemptions, "
                                          "steady state vs the benchmark as run; --trace replays recorded arrivals")
    _scenario_args(sim)
    sim.add_argument("--trace", help="CSV of send_s, input_tokens, output_tokens (a validate requests.csv works)")
    sim.add_argument("--out", type=output_file, help="per-request results as CSV")
    sim.add_argument("--json", action="store_true")
    sim.set_defaults(func=cmd_simulate)
    g = sub.add_parser("gpus", help="list the GPU catalog")
    g.add_argument("--json", action="store_true")
    g.set_defaults(func=cmd_gpus)
    m = sub.add_parser("models", help="list the model catalog")
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=cmd_models)
    s = sub.add_parser("sweep", help="vectorized grid to CSV or parquet (the closed forms: each row is capacity "
                                     "estimate --method closed-form)")
    s.add_argument("--model", type=_names, default=[Scenario().model], help="comma-separated")
    s.add_argument("--gpu", type=_names, default=[Scenario().gpu], help="comma-separated")
    s.add_argument("--precision", type=_list_of(_choice(PRECISION_CHOICES)), default=["bf16"], help="comma-separated")
    s.add_argument("--kv-precision", default="bf16", choices=("bf16", "fp8"))
    s.add_argument("--tp", type=_list_of(_tp), default=[1], help="comma-separated")
    s.add_argument("--isl", type=_list_of(_length), default=[128, 1024], help="comma-separated")
    s.add_argument("--osl", type=_list_of(_length), default=[128, 1024], help="comma-separated")
    s.add_argument("--load-kind", default="concurrency", choices=("sync", "concurrency", "burst", "rate"))
    s.add_argument("--load-values", type=_list_of(_float_in(0.0, 1e7, lo_open=True)), default=[1, 2, 4, 8, 16, 32, 64, 128, 256])
    s.add_argument("--engine", default="vllm", choices=tuple(PROFILES))
    s.add_argument("--ideal", action="store_true")
    s.add_argument("--price-usd-per-gpu-hour", type=_price)
    s.add_argument("--expert-parallel", action="store_true", help="split MoE experts across the TP GPUs")
    s.add_argument("--calibration", help="calibration JSON (default: the shipped one for engine/GPU/precision)")
    _limit_args(s)
    s.add_argument("--out", default="sweep.csv", type=output_file, help=".csv or .parquet")
    s.set_defaults(func=cmd_sweep)
    z = sub.add_parser("size", help="GPUs needed for a target request rate under TTFT and ITL objectives")
    _scenario_args(z, with_load=False)
    z.add_argument("--target-rps", type=_float_in(0.0, 1e7, lo_open=True), required=True)
    z.add_argument("--ttft-slo-s", type=_float_in(0.0, 86_400.0, lo_open=True), default=1.0)
    z.add_argument("--itl-slo-s", type=_float_in(0.0, 3_600.0, lo_open=True), default=0.05)
    z.add_argument("--tps", type=_list_of(_tp), default=[1, 2, 4, 8], help="tensor-parallel sizes to consider")
    z.add_argument("--disagg", action="store_true", help="search aggregated and disaggregated prefill/decode layouts "
                                                         "(xPyD, TP per pool, replica counts) and print the Pareto front")
    z.add_argument("--link", type=_choice(("auto", "nvlink4", "nvlink5", "ib-ndr", "ib-xdr", "roce-400g", "pcie-gen5")),
                   default="auto", help="--disagg: KV-transfer link (auto: the GPU's scale-up link within a node, "
                                        "InfiniBand NDR across)")
    z.add_argument("--kv-transfer", type=_choice(("overlapped", "after-prefill")), default="overlapped",
                   help="--disagg: KV streamed layer by layer during the prefill, or sent after it")
    z.add_argument("--router", type=_choice(("round-robin", "random", "prefix-aware")), default="round-robin",
                   help="--disagg: how requests reach replicas and prefill instances")
    z.add_argument("--prefix-groups", type=_float_in(1.0, 1e9), default=64.0,
                   help="--disagg --router prefix-aware: distinct prefixes hashed to replicas")
    z.add_argument("--prefill-max-num-batched-tokens", type=_int_in(1, 100_000_000),
                   help="--disagg: the prefill pool's token budget per step (default: the engine's)")
    z.add_argument("--decode-max-num-seqs", type=_int_in(1, 1_000_000),
                   help="--disagg: the decode pool's sequence limit (default: the engine's)")
    z.add_argument("--json", action="store_true")
    z.set_defaults(func=cmd_size)
    return p


@functools.cache
def _parser() -> argparse.ArgumentParser:
    return build_parser()  # built once per process (5 ms); parse_args keeps no state between calls


def main(argv: list[str] | None = None) -> int:
    try:
        parser = _parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            args = parser.parse_args(["estimate", *(argv or [])])
        with warnings.catch_warnings():  # numeric warnings are not for the user: every result is checked finite
            warnings.simplefilter("ignore", RuntimeWarning)
            return args.func(args)
    except CapacityError as exc:
        return _fail(type(exc).__name__, str(exc))
    except ValidationError as exc:
        return _fail("InputError", flatten_validation_error(exc))
    except RecursionError:
        return _fail("InputError", "an input file is nested too deeply")
    except BrokenPipeError:  # the reader stopped (`| head`): quiet, as Python's docs advise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (OSError, ValueError) as exc:  # an output path that cannot be written, a file that cannot be decoded
        return _fail(type(exc).__name__, str(exc))
    except Exception as exc:  # noqa: BLE001  a bug, not bad input: still one line, exit 3
        if os.environ.get("LLMCAP_TRACEBACK"):
            raise
        return _fail("InternalError", f"{type(exc).__name__}: {exc} (a bug: please report the command line)", 3)


def _fail(kind: str, message: str, code: int = 2) -> int:
    print(one_line(f"{kind}: {message}", limit=2000), file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
