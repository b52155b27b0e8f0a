"""Importer for InferenceX (SemiAnalysis) benchmark-API objects (data/public/raw/inferencex-*.jsonl): one JSON
object per line, the API's own field names, values unchanged. Only single-node, aggregated, non-speculative results
are kept in the raw file; each gives TTFT, TPOT and end-to-end latency means and, where the API has it, output
tokens/s per GPU, at a closed-loop concurrency of `conc` with 10 × conc prompts."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from validate.errors import ImportFormatError, one_line
from validate.public.common import join_notes, map_gpu, read_header
from validate.public.schema import Row, row

KIND = "inferencex"
FILES = ("inferencex-fixture-sample.jsonl",)
MODELS = {"dsr1": ("deepseek-ai/DeepSeek-R1", "InferenceX's dsr1 is DeepSeek-R1-0528 (same architecture as R1)")}
ENGINES = {"sglang": "sglang", "vllm": "vllm", "trt": "trtllm"}
METRICS = (("mean_ttft", "ttft_s", "mean", ""),
           ("mean_tpot", "tpot_s", "mean", "TPOT = (e2e − TTFT)/(output tokens − 1); ITL is not used because SGLang "
                                           "streams several tokens per chunk"),
           ("mean_e2el", "e2e_latency_s", "mean", ""),
           ("output_tput_per_gpu", "output_tokens_per_s_per_gpu", "aggregate", "output tokens/s divided by TP"))


Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
PositiveInt = Annotated[int, Field(ge=1, le=10**9)]


class ApiResult(BaseModel):
    """One InferenceX benchmark-API object: the fields read, checked (numbers positive and finite)."""

    model_config = ConfigDict(strict=True, extra="ignore")

    hardware: str
    framework: str
    model: str
    precision: str
    spec_method: str
    disagg: bool
    is_multinode: bool
    decode_tp: PositiveInt
    decode_ep: PositiveInt
    decode_dp_attention: bool
    isl: PositiveInt
    osl: PositiveInt
    conc: PositiveInt
    image: str | None = None
    date: str
    run_url: str
    metrics: dict[str, Positive]


def read_results(path: Path, text: str | None = None) -> list[tuple[int, ApiResult]]:
    """(line number, object) of every ``{`` line; any fault is ImportFormatError ``FILE:LINE: field: expected``."""
    found = []
    for number, line in enumerate((path.read_text() if text is None else text).splitlines(), 1):
        if not line.startswith("{"):
            continue
        try:
            found.append((number, ApiResult.model_validate(json.loads(line))))
        except ValidationError as err:
            raise ImportFormatError(f"{path}:{number}: {one_line(err)}") from None
        except (ValueError, RecursionError) as err:
            raise ImportFormatError(f"{path}:{number}: cannot read the line as JSON: {one_line(err)}") from None
    return found


def _precision(p: str, gpu: str) -> tuple[str, str]:
    if p == "fp8":
        return "fp8", ""
    if p == "fp4":
        if gpu.startswith("mi"):
            return "mxfp4", "FP4 on AMD Instinct = an MXFP4 checkpoint (the API says only fp4)"
        return "nvfp4", "FP4 on NVIDIA = an NVFP4 checkpoint (the API says only fp4)"
    return p, ""


# The KV cache dtype InferenceX's DeepSeek-R1 SGLang launch scripts set (SemiAnalysisAI/InferenceX): fp8_e4m3 on B200
# and B300 (benchmarks/single_node/dsr1_fp4_b200.sh @ 64c20b6b5ba0, dsr1_fp4_b300.sh @ 9ebeafb4e31a) and on MI355X from
# single_node/dsr1_fp4_mi355x.sh @ 8d81e0bf40ac (2026-02-19) on; none in benchmarks/dsr1_fp4_mi355x_docker.sh @
# a25544f73cba (in force on 2025-10-06), so SGLang's "auto": the checkpoint's bf16 activations. Other rows: unstated.
# A date between two listed versions takes the earlier one; only the corpus's own dates were checked against the
# scripts' history.
KV_BY_SCRIPT = (("sglang", "b200", "2025-09-21", "fp8"), ("sglang", "b300", "2026-02-25", "fp8"),
                ("sglang", "mi355x", "2026-02-19", "fp8"), ("sglang", "mi355x", "2025-10-02", "bf16"))


def script_kv(framework: str, hardware: str, date: str) -> tuple[str, str]:
    """(KV precision, note) from the launch script in force on the run's date (KV_BY_SCRIPT: the latest version
    at or before it), or ("unstated", why)."""
    found = [(since, kv) for fw, hw, since, kv in KV_BY_SCRIPT if fw == framework and hw == hardware and since <= date]
    if not found:
        return "unstated", "KV precision not in the API object"
    since, kv = max(found)
    return kv, f"KV precision {kv} from InferenceX's launch script in force on the run's date (version of {since})"


# runners/launch_mi355x-amd.sh from 15b7c00b0 (2025-10-06 23:58 UTC) to d053ae24e (2026-01-21) sent 20 × conc
# prompts (1k/8k) or 50 × conc (other shapes) for DeepSeek-R1; whether the runs of 2025-10-06 had it is not known.
AMBIGUOUS_PROMPT_COUNT = {("mi355x", "2025-10-06"): "10 × conc prompts assumed; the runner's DeepSeek-R1 override "
                          "(20 × conc at 1k/8k, 50 × at 8k/1k) landed the same day: ambiguous"}


# The benchmark client's tokenizer mismatch: InferenceX's bench_serving fix for transformers 5 tokenizers (#937,
# ef01c2205d51, 2026-03-27) did nothing when --model was a Hugging Face repo id, so with the transformers 5 that
# SGLang 0.5.10 images carry the client counted its random prompts with a broken tokenizer and the server received
# ~5x the nominal input ("~5x client/server tokenizer mismatch", #1381, 5fe6d56ee77c, 2026-05-15; the maintainers
# re-ran the B200/B300 SGLang configs on 2026-05-19, afb49f5a3af8). A helper reproduced 5.3x at 1k and 4.7x at 8k with
# the 9ebeafb4e client and transformers 5.3.0. Such objects measured another workload than their lengths say.
TOKENIZER_MISMATCH_IMAGES = ("sglang:v0.5.10",)
TOKENIZER_FIXED_ON = "2026-05-15"
TOKENIZER_MISMATCH = ("client tokenizer mismatch: ~5x the nominal prompt reached the server (InferenceX #1381, "
                      "fixed 2026-05-15)")


def client_tokenizer_mismatch(o: ApiResult) -> bool:
    """An object whose client sent ~5x its nominal prompt lengths (TOKENIZER_MISMATCH_IMAGES before the fix)."""
    return (o.framework == "sglang" and o.date < TOKENIZER_FIXED_ON
            and any(tag in (o.image or "") for tag in TOKENIZER_MISMATCH_IMAGES))


# Objects whose API record names no image: what InferenceX's DeepSeek-R1 workflow (.github/workflows/dsr1-tmpl.yml) and
# launch scripts named at the last commit before the run (SemiAnalysisAI/InferenceX, read 2026-12-07). The API's
# decode_ep / decode_dp_attention are not written by that era's utils/process_result.py (it records neither), so where
# a script sets them they come from the script.
# - SGLang on MI355X, 5de26a26924a (2025-10-06, before 03:00 UTC): image
#   rocm/7.0:rocm7.0_ubuntu_22.04_sgl-dev-v0.5.2-rocm7.0-mi35x-20250915 (from about 2025-09-20 until 332fec529ff3,
#   2025-12-16, which moved to lmsysorg/sglang:v0.5.6.post1-rocm700-mi35x and added --attention-backend aiter with an
#   FP8 KV cache); benchmarks/dsr1_fp4_mi355x_docker.sh sets no --attention-backend and no --kv-cache-dtype.
# - TensorRT-LLM on H200 and B200, e06929c701a0 (2025-11-01): image nvcr.io/nvidia/tensorrt-llm/release:1.1.0rc2.post2;
#   benchmarks/dsr1_fp8_h200_trt_slurm.sh runs EP = TP (attention DP only above 64 clients, or 32 at 8k/1k);
#   dsr1_fp4_b200_trt_slurm.sh at TP 4 runs EP 1 up to 32 clients and EP 4 above, with attention DP from 256 clients
#   (1k/1k, 1k/8k) or above 32 (8k/1k).
MI355X_AITER_SINCE = "2025-12-16"  # 332fec529ff3: --attention-backend aiter (and v0.5.6.post1) from this date on


class Launch(BaseModel):
    model_config = ConfigDict(frozen=True)

    image: str
    commit: str
    ep: int | None = None  # None: the API object's value stands
    attention_dp: bool | None = None
    note: str = ""


def launch_for(o: ApiResult) -> Launch | None:
    """What the launch configuration in force on the object's date ran, for objects whose API record names no image."""
    if o.image:
        return None
    if o.framework == "sglang" and o.hardware == "mi355x" and "2025-09-20" <= o.date < MI355X_AITER_SINCE:
        return Launch(image="rocm/7.0:rocm7.0_ubuntu_22.04_sgl-dev-v0.5.2-rocm7.0-mi35x-20250915", commit="5de26a26924a",
                      note="SGLang dev 0.5.2 (AMD's build of 2025-09-15); no --attention-backend set: SGLang picks "
                           "aiter on ROCm only at 16 or 128 attention heads per GPU, so Triton attention at TP 4")
    if o.framework == "trt" and o.hardware in ("h200", "b200") and "2025-10-29" <= o.date < "2025-11-03":
        image, commit = "nvcr.io/nvidia/tensorrt-llm/release:1.1.0rc2.post2", "e06929c701a0"
        tp, conc = int(o.decode_tp), int(o.conc)
        if o.hardware == "h200":
            dp = conc > (32 if o.isl > o.osl else 64)
            return Launch(image=image, commit=commit, ep=tp, attention_dp=dp,
                          note=f"EP {tp}{' and attention DP' if dp else ''} from the launch script (EP = TP)")
        if tp == 4:
            ep = 4 if conc > 32 else 1
            dp = conc > 32 if o.isl > o.osl else conc >= 256
            return Launch(image=image, commit=commit, ep=ep, attention_dp=dp,
                          note=f"EP {ep}{' and attention DP' if dp else ''} from the launch script")
        return Launch(image=image, commit=commit)
    return None


def import_file(path: Path) -> tuple[list[Row], dict[str, int]]:
    text = path.read_text()
    h = read_header(text)
    rows: list[Row] = []
    skipped: Counter[str] = Counter()
    for _, o in read_results(path, text):
        if o.disagg or o.is_multinode or o.spec_method != "none" or o.model not in MODELS:
            skipped["disaggregated, multinode, speculative or unknown model"] += 1
            continue
        if client_tokenizer_mismatch(o):
            skipped[TOKENIZER_MISMATCH] += 1
            continue
        model_id, model_note = MODELS[o.model]
        weight, wnote = _precision(o.precision, o.hardware)
        gpu_note = "InferenceX's h200 is the H200 SXM (HGX)" if o.hardware == "h200" else ""
        tp, ep, dp = int(o.decode_tp), int(o.decode_ep), o.decode_dp_attention
        launch = launch_for(o)
        version, launch_note = o.image or "image not recorded in the API object", ""
        if launch is not None:
            version = f"{launch.image} (InferenceX's workflow @ {launch.commit}; the API object names none)"
            ep = launch.ep if launch.ep is not None else ep
            dp = launch.attention_dp if launch.attention_dp is not None else dp
            launch_note = launch.note
        kv, kv_note = script_kv(o.framework, o.hardware, o.date)
        for key, metric, stat, mnote in METRICS:
            if key not in o.metrics:
                continue
            rows.append(row(
                row_id=f"{h['source_id']}:{len(rows):04d}", source_id=h["source_id"], source_kind=KIND,
                source_url=h["url"], source_commit=h["commit"], source_path=f"data/public/raw/{path.name}",
                published=f"InferenceX run of {o.date} ({o.run_url})", read_on=h["read"],
                engine=ENGINES[o.framework], engine_version=version, gpu=map_gpu(o.hardware), num_gpus=tp, tp=tp, ep=ep,
                dp=tp if dp else 1, pp=1, model=model_id, model_published=o.model,
                weight_precision=weight, kv_precision=kv, isl=int(o.isl), osl=int(o.osl),
                lengths="distributed", length_range_ratio=0.8, load="concurrency", concurrency=int(o.conc),
                num_requests=10 * int(o.conc), metric=metric, statistic=stat, value=float(o.metrics[key]),
                note=join_notes(model_note, wnote, mnote, "lengths uniform in [0.8 L, L] (InferenceX's harness)",
                                kv_note, gpu_note, AMBIGUOUS_PROMPT_COUNT.get((o.hardware, o.date), ""),
                                "expert parallel " + str(ep) if ep > 1 else "",
                                launch_note, "engine version not recorded" if not (o.image or launch) else ""),
            ))
    return rows, dict(skipped)
