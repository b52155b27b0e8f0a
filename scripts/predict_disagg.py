"""Predictions for issue 22's 2xH200 spec, written before it runs: every point of every config.
Usage: python scripts/predict_disagg.py [SPEC.json] [OUT.jsonl]
(defaults: scripts/device/specs/h200x2-disagg.json, data/predictions/h200x2-vllm-0.26.0-disagg.before.jsonl)

* layout 1p1d: capacity.disagg.one_p_one_d, prefill on one GPU and decode on the other, KV over the GPU's NVLink
  (the auto link within a node). vLLM's NixlConnector lets the decode instance read the KV after the prefill ends,
  P2pNcclConnector sends it layer by layer while the prefill runs: `ttft_s` assumes the first (after-prefill),
  `ttft_s_if_overlapped` the second. The proxy's extra HTTP hop is not modelled.
* layout 2agg: two aggregated replicas, requests alternating: each replica carries half the clients (concurrency C/2)
  or half the arrivals (rate R/2), closed forms with the shipped calibration; sync runs one request at a time.
Poisson arrivals: the 1p1d prefill queue is the closed forms' M/D/1-style wait, the aggregated rate points are the
closed forms (evenly spaced arrivals), which under-predict TTFT under Poisson traffic.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from capacity.disagg import one_p_one_d, resolve_link  # noqa: E402
from capacity.errors import CapacityError  # noqa: E402
from capacity.estimate import Scenario, calibration_for, plan_for, run_load  # noqa: E402
from capacity.hardware import load_gpu  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "scripts/device/specs/h200x2-disagg.json"
OUT = ROOT / "data/predictions/h200x2-vllm-0.26.0-disagg.before.jsonl"
GPUS = 2


def points(spec: list[dict]):
    """(config, isl, osl, point, load kind, value, num_requests) for every measured point (warm-ups skipped)."""
    for cfg in spec:
        for isl, osl, *own in cfg["shapes"]:
            for p in (own[0] if own else cfg["points"]):
                kind, *rest = p.split(":")
                if kind == "sync":
                    yield cfg, isl, osl, p, "sync", 1.0, int(rest[0])
                elif kind == "concurrency":
                    yield cfg, isl, osl, p, "concurrency", float(rest[0]), int(rest[1])
                elif kind in ("prate", "crate"):
                    yield cfg, isl, osl, p, "rate", float(rest[0]), int(rest[1])


def predict_1p1d(s: Scenario, kind: str, value: float) -> dict:
    node, _ = resolve_link("auto", load_gpu(s.gpu))
    after = one_p_one_d(s, kind, value, node, overlapped=False)
    over = one_p_one_d(s, kind, value, node, overlapped=True)
    return {"ttft_s": after.ttft_s, "ttft_s_if_overlapped": over.ttft_s, "itl_s": after.itl_s,
            "requests_per_s": after.requests_per_s, "prefill_ttft_s": after.prefill_ttft_s,
            "kv_transfer_s": after.kv_transfer_s, "kv_transfer_s_if_overlapped": over.kv_transfer_s,
            "kv_transfer_bytes": after.kv_transfer_bytes, "decode_batch": after.decode_batch,
            "saturated": after.saturated, "link": node.id, "method": "capacity.disagg.one_p_one_d (closed forms)"}


def predict_2agg(s: Scenario, kind: str, value: float, n: int) -> dict:
    plan = plan_for(s)
    cal = calibration_for(s, plan)
    each = s.model_copy(update={"num_requests": max(n // 2, 1) if kind != "sync" else None})
    v = value if kind == "sync" else value / 2
    r = run_load(plan, cal, each, s.isl, s.osl, kind, v)
    rps = float(r.requests_per_s) * (1 if kind == "sync" else 2)
    return {"ttft_s": float(r.ttft_s), "itl_s": float(r.itl_s), "requests_per_s": rps,
            "saturated": bool(r.saturated), "method": f"closed forms per replica at {kind} {v:g}, x2 (sync: x1)",
            "calibration": cal.label}


def main() -> None:
    spec_path = Path(sys.argv[1]) if len(sys.argv) > 1 else SPEC
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else OUT
    spec = json.loads(spec_path.read_text())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    rows = []
    for cfg, isl, osl, p, kind, value, n in points(spec):
        s = Scenario(model=cfg["model"], precision=cfg.get("precision", "bf16"), gpu=cfg.get("gpu", "h200-sxm"),
                     isl=isl, osl=osl)
        row = {"run": cfg["name"], "layout": cfg["layout"], "model": s.model, "isl": isl, "osl": osl, "point": p,
               "load": "sync" if kind == "sync" else f"{kind}:{value:g}", "num_requests": n,
               "arrivals": "poisson" if p.startswith("prate") else None, "gpus": GPUS}
        try:
            pred = predict_1p1d(s, kind, value) if cfg["layout"] == "1p1d" else predict_2agg(s, kind, value, n)
            if cfg["layout"] == "1p1d" and kind == "rate":  # a finite test: completed ÷ (last end − first send)
                pred["requests_per_s"] = n / (n / pred["requests_per_s"] + pred["ttft_s"] + (osl - 1) * pred["itl_s"])
            pred["requests_per_s_per_gpu"] = pred["requests_per_s"] / GPUS
            row.update(pred, error=None)
        except CapacityError as exc:
            row["error"] = str(exc)
        row.update(predicted_at_commit=commit, date=str(date.today()))
        rows.append(row)
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"wrote {len(rows)} predictions to {out}")


if __name__ == "__main__":
    main()
