"""Write both load models' predictions (closed forms and the step simulator) for a device campaign spec,
before it runs. Usage: python scripts/predict_spec.py SPEC.json OUT.jsonl

Each measured point of the spec (scripts/device/campaign.py's grammar) becomes one Scenario with the
point's request count, arrivals and length spread, predicted with the shipped calibration; warm-up
points are skipped."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from capacity import Scenario, estimate  # noqa: E402
from capacity import engines as capacity_engines  # noqa: E402
from capacity.errors import CapacityError  # noqa: E402
from validate.spec_points import parse_point  # noqa: E402

KEEP = ("kv_capacity_tokens", "ttft_s", "itl_s", "e2e_latency_s", "requests_per_s", "output_tokens_per_s",
        "running_requests", "calibration", "regime")


def points(spec: list[dict]):
    """(config, isl, osl, folder, load, num_requests, options) for every measured point of a spec."""
    for cfg in spec:
        # the server's flags, read by the engine's own flag table (as validate compare reads a run's argv)
        # a draft model's folder ({draft_dir}, prepared on the device) is named here by its catalog id
        argv = [a.replace("{draft_dir}", cfg.get("draft_model", "{draft_dir}")) for a in cfg.get("engine_args", [])]
        flags = capacity_engines.get(cfg.get("engine", "vllm")).flags.scenario(argv)
        flags = {k: v for k, v in flags.items() if k not in ("precision", "num_gpus", "data_parallel_size")}
        for isl, osl, *own in cfg["shapes"]:
            opts = own[1] if len(own) > 1 else {}
            args = list(opts.get("sweep_args", []))
            extra: dict = dict(flags)
            if "--length-dist" in args:
                kind, _, ratio = args[args.index("--length-dist") + 1].partition(":")
                extra.update(length_dist=kind, length_ratio=float(ratio or 0))
            if "--shared-prefix" in args:  # the share a prefix cache can serve: priced as the hit rate
                extra["prefix_hit_rate"] = float(args[args.index("--shared-prefix") + 1])
            for text in (own[0] if own else cfg["points"]):
                pt = parse_point(text)  # validate/spec_points.py, as campaign.py reads it
                if pt.load is None or not pt.recorded:  # rates are placed on the device; warm-ups are not measured
                    continue
                options = {**extra, "arrivals": pt.arrivals, "gamma_shape": pt.gamma_shape} if pt.load.kind == "rate" else extra
                yield cfg, isl, osl, opts.get("dir", f"{isl}x{osl}"), pt.load.label, pt.num_requests, options


def main() -> None:
    ap = argparse.ArgumentParser(description="both load models' predictions for a device campaign spec, before it runs")
    ap.add_argument("spec", help="a scripts/device/specs/*.json campaign spec")
    ap.add_argument("out", help="the predictions file to write (JSON lines)")
    a = ap.parse_args()
    try:
        spec, out = json.loads(Path(a.spec).read_text()), Path(a.out)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        print(f"{a.spec}: cannot read the campaign spec: {exc}", file=sys.stderr)
        sys.exit(2)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "capacity", "validate"],
                           capture_output=True, text=True).stdout.strip()
    commit += "+uncommitted" if dirty else ""  # the model that predicts must be named exactly
    with out.open("w") as f:
        for cfg, isl, osl, folder, load, n, extra in points(spec):
            for method in ("closed-form", "simulate"):
                # the server's engine: its profile and calibration
                # the server's flags (extra) say what the spec's own fields say, and win where both do
                fields = {"kv_precision": cfg.get("kv_precision", "bf16"), **extra}
                s = Scenario(model=cfg["model"], engine=cfg.get("engine", "vllm"), precision=cfg.get("precision", "bf16"),
                             gpu=cfg.get("gpu", "h200-sxm"), isl=isl, osl=osl, load=load,
                             num_requests=n, method=method, **fields)
                try:
                    e = estimate(s).model_dump()
                except CapacityError as exc:
                    e = {"error": str(exc)}
                f.write(json.dumps({"run": f"{cfg.get('name')}/{folder}", "model": s.model, "precision": s.precision,
                                    "kv_precision": s.kv_precision, "engine": s.engine,
                                    "isl": isl, "osl": osl, "load": load, "num_requests": n, "method": method, **extra,
                                    "predicted_at_commit": commit, "date": str(date.today()),
                                    **{k: e.get(k) for k in KEEP}, "error": e.get("error")}) + "\n")


if __name__ == "__main__":
    main()
