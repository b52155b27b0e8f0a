"""Write the capacity model's predictions for a planned measurement campaign, before it runs.
Usage: python scripts/predict_campaign.py OUT.jsonl MODEL:PRECISION[,...] ISLxOSL[,...] LOAD[,...] [TP [ep]]
A LOAD may name the test's request count after @ (concurrency:512@512: one wave of 512)."""

import json
import subprocess
import sys
from datetime import date

from capacity import Scenario, estimate
from capacity.errors import CapacityError


def main() -> None:
    out, models, shapes, loads = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(","), sys.argv[4].split(",")
    tp = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    ep = len(sys.argv) > 6 and sys.argv[6] == "ep"
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    with open(out, "w") as f:
        for mp in models:
            model, _, precision = mp.partition(":")
            for shape in shapes:
                isl, osl = (int(x) for x in shape.split("x"))
                for spec in loads:
                    load, _, count = spec.partition("@")
                    s = Scenario(model=model, precision=precision or "bf16", isl=isl, osl=osl, load=load,
                                 tp=tp, num_gpus=tp, expert_parallel=ep, num_requests=int(count) if count else None)
                    try:
                        e = estimate(s).model_dump()
                    except CapacityError as exc:
                        e = {"error": str(exc)}
                    keep = {k: e.get(k) for k in ("kv_capacity_tokens", "ttft_s", "itl_s", "requests_per_s",
                                                  "output_tokens_per_s", "running_requests", "calibration", "error")}
                    f.write(json.dumps({"model": model, "precision": s.precision, "tp": tp, "expert_parallel": ep,
                                        "isl": isl, "osl": osl, "load": load, "num_requests": s.num_requests,
                                        "predicted_at_commit": commit, "date": str(date.today()), **keep}) + "\n")


if __name__ == "__main__":
    main()
