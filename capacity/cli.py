"""`capacity` command line: estimate, gpus, models, sweep, size. Errors print one line and exit 2."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pydantic import ValidationError

from capacity.engine import PROFILES
from capacity.errors import CapacityError, WorkloadError
from capacity.estimate import Scenario, estimate
from capacity.precision import PRECISION_CHOICES


def _scenario_args(p: argparse.ArgumentParser, with_load: bool = True) -> None:
    d = Scenario()
    p.add_argument("--model", default=d.model, help="catalog id or path to a config.json (default: %(default)s)")
    p.add_argument("--gpu", default=d.gpu, help="GPU id or path to a GPU TOML file (default: %(default)s)")
    p.add_argument("--num-gpus", type=int, default=1)
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel size (GPUs per replica)")
    p.add_argument("--expert-parallel", action="store_true", help="split MoE experts across the TP GPUs")
    p.add_argument("--precision", default=d.precision, choices=PRECISION_CHOICES)
    p.add_argument("--kv-precision", default=d.kv_precision, choices=("bf16", "fp8"))
    p.add_argument("--engine", default=d.engine, choices=tuple(PROFILES))
    p.add_argument("--ideal", action="store_true", help="pure roofline: efficiencies 1, overheads 0")
    p.add_argument("--calibration", help="calibration JSON (default: the shipped one for engine/GPU/precision)")
    p.add_argument("--isl", type=int, default=d.isl, help="input tokens per request")
    p.add_argument("--osl", type=int, default=d.osl, help="output tokens per request")
    if with_load:
        p.add_argument("--load", default=d.load, help="sync | concurrency:C | burst:N | rate:R (default: %(default)s)")
    p.add_argument("--price-usd-per-gpu-hour", type=float)
    p.add_argument("--gpu-memory-utilization", type=float)
    p.add_argument("--max-num-seqs", type=int)
    p.add_argument("--max-num-batched-tokens", type=int)
    p.add_argument("--max-model-len", type=int)
    p.add_argument("--max-cudagraph-tokens", type=int, help="largest CUDA graph in tokens (0 = eager; default: the engine's)")
    p.add_argument("--prefix-hit-rate", type=float, default=0.0, help="share of prompt tokens already cached")
    p.add_argument("--spec-acceptance", type=float, default=0.0, help="speculative decoding acceptance rate")
    p.add_argument("--spec-draft-tokens", type=int, default=0)
    p.add_argument("--spec-draft-cost", type=float, default=0.0, help="draft step time / target decode step time")


def _scenario(a: argparse.Namespace, **extra) -> Scenario:
    fields = {k: getattr(a, k) for k in Scenario.model_fields if hasattr(a, k) and getattr(a, k) is not None}
    fields.update(extra)
    return Scenario(**fields)


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
        ("weights per GPU", _fmt_bytes(e.weight_bytes_per_gpu)),
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
        ("calibration", e.calibration),
    ]
    for k, (lo, hi) in e.intervals.items():
        rows.append((f"{k} 90 % interval", f"{lo:,.4g} – {hi:,.4g}"))
    for row in rows:
        t.add_row(*row)
    console = Console()
    console.print(t)
    for n in e.notes:
        console.print(f"[yellow]note:[/yellow] {n}")


def cmd_estimate(a) -> int:
    e = estimate(_scenario(a))
    if a.json:
        print(json.dumps(e.model_dump(), indent=2))
    else:
        print_estimate_table(e)
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
    from capacity.architecture import catalog_ids, load_model
    from capacity.kv import kv_bytes_per_token
    from capacity.params import active_params_per_token, count_params

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
        print(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title)
    for k in rows[0]:
        t.add_column(k, justify="left" if isinstance(rows[0][k], str) else "right")
    for r in rows:
        t.add_row(*[(f"{v:,.4g}" if isinstance(v, float) else str(v if v is not None else "")) for v in r.values()])
    Console().print(t)


def _ints(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x]
    except ValueError:
        raise WorkloadError(f"expected comma-separated integers, got '{text}'") from None


def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x]
    except ValueError:
        raise WorkloadError(f"expected comma-separated numbers, got '{text}'") from None


def cmd_sweep(a) -> int:
    from capacity.sweep import sweep_grid

    df = sweep_grid(a.model.split(","), a.gpu.split(","), a.precision.split(","), _ints(a.isl), _ints(a.osl),
                    a.load_kind, _floats(a.load_values), _ints(a.tp), a.kv_precision, a.engine, a.ideal,
                    a.price_usd_per_gpu_hour)
    out = Path(a.out)
    if out.suffix == ".parquet":
        df.to_parquet(out, index=False)
    else:
        df.to_csv(out, index=False)
    print(f"wrote {len(df):,} rows to {out}")
    return 0


def cmd_size(a) -> int:
    from capacity.sizing import size

    opts = size(_scenario(a), a.target_rps, a.ttft_slo_s, a.itl_slo_s, _ints(a.tps))
    rows = [o.model_dump() for o in opts]
    if a.json:
        print(json.dumps(rows, indent=2))
    else:
        _print_rows(rows, False, f"GPUs for {a.target_rps:g} req/s, TTFT ≤ {a.ttft_slo_s:g} s, ITL ≤ {a.itl_slo_s * 1e3:g} ms")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="capacity", description="How many users, how fast, at what cost.")
    sub = p.add_subparsers(dest="cmd")
    e = sub.add_parser("estimate", help="predict memory, latency, throughput and cost for one configuration")
    _scenario_args(e)
    e.add_argument("--json", action="store_true")
    e.set_defaults(func=cmd_estimate)
    g = sub.add_parser("gpus", help="list the GPU catalog")
    g.add_argument("--json", action="store_true")
    g.set_defaults(func=cmd_gpus)
    m = sub.add_parser("models", help="list the model catalog")
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=cmd_models)
    s = sub.add_parser("sweep", help="vectorized grid to CSV or parquet")
    s.add_argument("--model", default=Scenario().model, help="comma-separated")
    s.add_argument("--gpu", default=Scenario().gpu, help="comma-separated")
    s.add_argument("--precision", default="bf16", help="comma-separated")
    s.add_argument("--kv-precision", default="bf16")
    s.add_argument("--tp", default="1", help="comma-separated")
    s.add_argument("--isl", default="128,1024", help="comma-separated")
    s.add_argument("--osl", default="128,1024", help="comma-separated")
    s.add_argument("--load-kind", default="concurrency", choices=("sync", "concurrency", "burst", "rate"))
    s.add_argument("--load-values", default="1,2,4,8,16,32,64,128,256")
    s.add_argument("--engine", default="vllm", choices=tuple(PROFILES))
    s.add_argument("--ideal", action="store_true")
    s.add_argument("--price-usd-per-gpu-hour", type=float)
    s.add_argument("--out", default="sweep.csv", help=".csv or .parquet")
    s.set_defaults(func=cmd_sweep)
    z = sub.add_parser("size", help="GPUs needed for a target request rate under TTFT and ITL objectives")
    _scenario_args(z, with_load=False)
    z.add_argument("--target-rps", type=float, required=True)
    z.add_argument("--ttft-slo-s", type=float, default=1.0)
    z.add_argument("--itl-slo-s", type=float, default=0.05)
    z.add_argument("--tps", default="1,2,4,8", help="tensor-parallel sizes to consider")
    z.add_argument("--json", action="store_true")
    z.set_defaults(func=cmd_size)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        args = parser.parse_args(["estimate", *(argv or [])])
    try:
        return args.func(args)
    except CapacityError as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    except ValidationError as exc:
        err = exc.errors()[0]
        print(f"InputError: {'.'.join(map(str, err['loc']))}: {err['msg']}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
