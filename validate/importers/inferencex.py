"""InferenceX (SemiAnalysis) benchmark-API result rows, one JSON object per line, read through the public
corpus' own reader (``validate.public.inferencex.read_results``).

A file holds many configurations; each (hardware, framework, model, precision, TP/EP/DP-attention, image,
ISL/OSL) becomes its own results folder, one point per concurrency, with a scenario.json that names the
model, GPU, engine and precision for ``validate compare``. The API gives means only (TTFT, TPOT, e2e
latency, output tokens/s per GPU); what a point also needs is derived and listed in its ``derived`` field:
requests/s by Little's law for a closed loop (concurrency / mean e2e latency), output tokens per request
from the TPOT definition (1 + (e2e - TTFT) / TPOT), input tokens as the harness draws them (uniform in
[0.8 ISL, ISL]: mean 0.9 ISL), ITL as the TPOT (no chunk gaps in the API), and InferenceX's 10 x
concurrency prompts per point.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from validate.importers.common import ImportedRun, make_metadata, make_point
from validate.public import inferencex as public
from validate.public.common import map_gpu

PROMPTS_PER_CLIENT = 10  # InferenceX's harness: 10 x conc prompts per point
MEAN_INPUT_FRACTION = 0.9  # lengths uniform in [0.8 L, L]
LENGTH_DIST = "uniform:0.1111"  # the same spread in this package's terms: [M(1 - r), M(1 + r)], M = 0.9 L, r = 1/9


def is_inferencex(value: Any) -> bool:
    return isinstance(value, dict) and {"hardware", "framework", "conc", "metrics"} <= set(value)


def _gpu(hardware: str) -> str | None:
    try:
        return map_gpu(hardware)
    except KeyError:
        return None


def _point(o: public.ApiResult, where: str) -> Any:
    m = o.metrics
    e2e, ttft, tpot = m.get("mean_e2el"), m.get("mean_ttft"), m.get("mean_tpot")
    derived = []
    rps = o.conc / e2e if e2e else 0.0
    derived.append("requests_per_s = conc / mean e2e latency (Little's law, closed loop)")
    tokens_out = 1 + (e2e - ttft) / tpot if e2e and ttft is not None and tpot and e2e > ttft else None
    if tokens_out is not None:
        derived.append("osl = 1 + (mean e2e - mean TTFT) / mean TPOT")
    if "output_tput_per_gpu" in m:
        output = m["output_tput_per_gpu"] * o.decode_tp
    else:
        output = rps * tokens_out if tokens_out else 0.0
        derived.append("output_tokens_per_s = requests_per_s x osl (no output_tput_per_gpu in the row)")
    isl = MEAN_INPUT_FRACTION * o.isl
    derived += ["mean_itl_s = mean TPOT (the API has no chunk gaps; as for guidellm and genai-perf)",
                "isl = 0.9 x ISL (InferenceX draws lengths uniformly in [0.8 L, L])",
                f"completed = {PROMPTS_PER_CLIENT} x conc (InferenceX's prompts per point); duration = completed / rps"]
    completed = PROMPTS_PER_CLIENT * o.conc
    return make_point(where, load=f"concurrency:{o.conc}", completed=completed, failed=0,
                      duration_s=completed / rps if rps else 0.0, requests_per_s=rps, output_tokens_per_s=output,
                      total_tokens_per_s=output + rps * isl, input_tokens_per_s=rps * isl, mean_ttft_s=ttft,
                      mean_tpot_s=tpot, mean_itl_s=tpot, mean_e2e_latency_s=e2e, isl=isl, osl=tokens_out,
                      source="inferencex", derived=derived, run_url=o.run_url, run_date=o.date)


def import_inferencex(path: Path, text: str, argv: list[str]) -> list[ImportedRun]:
    groups: dict[tuple, list[tuple[int, public.ApiResult]]] = {}
    for number, o in public.read_results(path, text):
        key = (o.hardware, o.framework, o.model, o.precision, o.spec_method, o.disagg, o.is_multinode, o.decode_tp,
               o.decode_ep, o.decode_dp_attention, o.image, o.isl, o.osl)
        groups.setdefault(key, []).append((number, o))
    runs = []
    for key, members in groups.items():
        o = members[0][1]
        model_id = public.MODELS.get(o.model, (o.model, ""))[0]
        engine = public.ENGINES.get(o.framework, o.framework)
        gpu = _gpu(o.hardware)
        precision, _ = public._precision(o.precision, o.hardware)
        by_conc: dict[int, Any] = {}
        for number, row in sorted(members, key=lambda m: (m[1].conc, m[1].date)):
            by_conc[row.conc] = _point(row, f"{path}:{number}")  # a later run of one concurrency replaces an earlier
        folder = "-".join(str(part) for part in (o.hardware, o.framework, o.model, o.precision, f"tp{o.decode_tp}",
                                                 f"ep{o.decode_ep}", "dpa" if o.decode_dp_attention else "",
                                                 "disagg" if o.disagg else "", "multinode" if o.is_multinode else "",
                                                 "" if o.spec_method == "none" else o.spec_method,
                                                 f"{o.isl}x{o.osl}", o.image or "no-image") if part)
        folder = re.sub(r"[^A-Za-z0-9._-]+", "_", folder)
        argv_engine = ["--tensor-parallel-size", str(o.decode_tp)] + (
            ["--expert-parallel-size", str(o.decode_ep)] if o.decode_ep > 1 else [])
        metadata = make_metadata(argv, "inferencex", engine=engine, engine_version=o.image, model_id=model_id,
                                 gpu_id=gpu, gpu_count=o.decode_tp, engine_argv=argv_engine,
                                 workload={"isl": round(MEAN_INPUT_FRACTION * o.isl),
                                           "osl": round(MEAN_INPUT_FRACTION * o.osl),
                                           "length_dist": LENGTH_DIST,
                                           "imported_from": str(path), "inferencex_model": o.model,
                                           "inferencex_hardware": o.hardware, "disagg": o.disagg,
                                           "multinode": o.is_multinode, "spec_method": o.spec_method})
        scenario = {"model": model_id, "gpu": gpu, "engine": engine, "precision": precision,
                    "engine_argv": argv_engine}
        runs.append(ImportedRun(list(by_conc.values()), [], metadata, folder=folder,
                                scenario={k: v for k, v in scenario.items() if v is not None}))
    return runs
