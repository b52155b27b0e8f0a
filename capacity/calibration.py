"""Efficiency factors and overheads that turn the roofline into a prediction, read from a calibration file.

A calibration belongs to one (engine, GPU, weight precision). `validate calibrate` writes them from
measurements; `default.json` holds literature defaults (NVIDIA's planner uses 0.8 of HBM bandwidth;
large-GEMM efficiency 0.7-0.8 of dense peak); `IDEAL` switches every factor off (pure roofline).
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import math
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from capacity.errors import ConfigError, flatten_validation_error, one_line


class Efficiency(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="after")
    def _physical(self) -> Efficiency:
        return _check_efficiency(self)

    weight_bandwidth: float = Field(0.80, gt=0, le=1, description="share of peak HBM bandwidth when streaming weights")
    kv_bandwidth: float = Field(0.60, gt=0, le=1, description="share of peak bandwidth for paged KV reads in decode attention")
    matmul: float = Field(0.75, gt=0, le=1, description="share of dense peak FLOP/s in linear layers (large M)")
    moe_matmul: float = Field(0.50, gt=0, le=1, description="share of dense peak in grouped MoE expert GEMMs of a long "
                                                         "reduction (see moe_reduction_tokens)")
    moe_reduction_tokens: float = Field(
        700.0, ge=0, le=1e6, description="K0 of the grouped expert GEMMs: a projection reducing over K inputs runs at "
        "moe_matmul × K / (K + K0) of peak (each tile's pipeline fill and drain are a fixed share of a short reduction "
        "loop). Qwen3-30B-A3B's experts reduce over 2,048 and 768 and run at ~0.4 of dense peak, Mixtral's over 4,096 "
        "and 14,336 at ~0.55 (sitting 14's prompt ladder): K0 ≈ 700 from those two models, the other MoEs held out; "
        "0 = one share for every expert shape")
    attention_matmul: float = Field(0.50, gt=0, le=1, description="share of bf16 peak in prefill attention")
    link: float = Field(0.80, gt=0, le=1, description="share of per-direction scale-up bandwidth in all-reduce")
    link_latency_s: float = Field(8e-6, ge=0, description="fixed latency per collective")
    step_overhead_s: float = Field(1.0e-3, ge=0, description="fixed cost per engine step (scheduling, sampling, launch)")
    layer_overhead_s: float = Field(1.5e-5, ge=0, description="fixed cost per layer per step (kernel ramp/tail)")
    moe_layer_overhead_s: float = Field(1.5e-5, ge=0, description="extra fixed cost per MoE layer (router, top-k, align, grouped GEMMs)")
    mla_layer_overhead_s: float = Field(26e-6, ge=0, description="extra fixed cost per MLA attention layer: its "
                                        "split down-projections, latent norms, absorbed matmuls and RoPE split run "
                                        "~5 more small kernels than a GQA layer. Not fitted: DeepSeek-V2-Lite's three "
                                        "sync points on one H200 (vLLM 0.26, sitting 9) set it, a guess from one model")
    eager_layer_overhead_s: float = Field(3e-5, ge=0, description="CPU time per layer to launch a step with more tokens "
                                                                  "than the largest CUDA graph (op by op): a floor under "
                                                                  "the step, the GPU runs behind it")
    eager_moe_layer_overhead_s: float = Field(0.0, ge=0, description="the same per MoE layer, added to the step (the "
                                                                     "fused-MoE path launched op by op does not "
                                                                     "overlap)")
    eager_mla_layer_overhead_s: float = Field(2.04e-3, ge=0, description="the extra CPU time per MLA attention layer "
                                              "to launch a step op by op (its low-rank projections, the KV "
                                              "up-projection, the concatenations and padding around the attention "
                                              "kernel): a floor under the step beside the dense layers'. Not fitted "
                                              "by the plan: scripts/mla_eager.py set it from DeepSeek-V2-Lite's four "
                                              "eager lone prompts on one H200 (vLLM 0.26, sitting 14b), a guess from "
                                              "one model and one server; sittings 9, 15 and 30 and the public "
                                              "DeepSeek-R1 rows are held out")
    quant_linear_s: float = Field(0.0, ge=0, description="time per step of each linear layer whose activations are "
                                  "quantized (FP8 / FP4 compute: a dynamic activation-quantization kernel before "
                                  "its GEMM, a fixed small-kernel cost in a CUDA graph). vLLM 0.26's FP8 on one H200: "
                                  "fitted on Llama-3.1-8B alone (a guess), held out on DeepSeek-V2-Lite and Gemma 3")
    fp4_moe_layer_s: float = Field(0.0, ge=0, description="extra fixed cost per MoE layer whose experts are FP4 "
                                   "weights on a GPU without FP4 tensor cores (weight-only FP4: vLLM 0.26 runs MXFP4 "
                                   "experts on Hopper through Triton's matmul_ogs, with its own routing kernels, top-k, "
                                   "bitmatrix sums and memsets, per layer). Fitted on gpt-oss-20b's sync points alone "
                                   "(H200, sitting 9), held out on gpt-oss-120b (sitting 16); the two share one expert "
                                   "shape, so whether it grows with the expert bytes is not identified")
    sequence_overhead_s: float = Field(5e-6, ge=0, description="CPU cost per running sequence per step")
    host_token_s: float = Field(0.0, ge=0, description="host time per sampled token, pipelined with the GPU: a step "
                                                       "lasts at least this × its sequences (front-end and scheduler "
                                                       "throughput ceiling; 0 = none)")
    request_overhead_s: float = Field(5e-3, ge=0, description="added to TTFT: HTTP, input processing, first detokenize")
    idle_step_s: float = Field(0.0, ge=0, description="the least time of the first step after the engine idled: the "
                               "CPU work of a step (scheduling, input preparation, piecewise-graph launches, sampling, "
                               "output processing) that a busy engine overlaps with the step before it (vLLM's async "
                               "scheduling) has no step to hide behind when none is in flight (a lone request, a "
                               "burst's first step, each wave of a lockstep closed loop); it runs beside that step's "
                               "own GPU work, so the step lasts max(its GPU time, this)")
    prompt_token_overhead_s: float = Field(0.0, ge=0, description="added to TTFT per prompt token: the front end's "
                                           "tokenizing and input processing, outside the engine's step")
    admission_s: float = Field(0.0, ge=0, description="front-end time per request, serial: requests submitted together "
                                                      "wait for the whole group to be taken in before tokens flow")

    def front_end_s(self, prompt_tokens):
        """A request's time in the front end on its way to the engine and back: fixed + per prompt token."""
        return self.request_overhead_s + self.prompt_token_overhead_s * prompt_tokens


SHARE_MIN = 0.01  # an achieved share of a peak below 1 % is a typo, not a kernel (it would price hours per token)
OVERHEAD_MAX_S = 1.0  # a fixed cost per step, layer, sequence or request above a second is a typo too


def _check_efficiency(e: Efficiency) -> Efficiency:
    for name in SHARES:
        if getattr(e, name) < SHARE_MIN:
            raise ValueError(f"{name}: a share of peak below {SHARE_MIN} ({getattr(e, name):g}) is not physical")
    for name in type(e).model_fields:
        if name.endswith("_s") and getattr(e, name) > OVERHEAD_MAX_S:
            raise ValueError(f"{name}: {getattr(e, name):g} s is above {OVERHEAD_MAX_S:g} s")
    return e


SHARES = ("weight_bandwidth", "kv_bandwidth", "matmul", "moe_matmul", "attention_matmul", "link")


class ResidualStats(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    count: int = Field(ge=0)
    log_ratio_q05: float = Field(ge=-10, le=10, description="5th percentile of log(measured / predicted)")
    log_ratio_q95: float = Field(ge=-10, le=10)
    mean_abs_pct_error: float = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> ResidualStats:
        if self.log_ratio_q05 > self.log_ratio_q95:
            raise ValueError("log_ratio_q05 is above log_ratio_q95 (the interval would be inverted)")
        return self


class Calibration(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: str = "default"
    gpu: str = "any"
    precision: str = "any"
    efficiency: Efficiency = Efficiency()
    residuals: dict[str, ResidualStats] = Field(default_factory=dict, description="per metric: ttft_s, itl_s, requests_per_s")
    fitted_on: list[str] = Field(default_factory=list)
    held_out: list[str] = Field(default_factory=list)
    source: str = ""
    created: str = ""
    notes: str = ""
    extrapolated: str = Field("", description="set when applied beyond the GPU/precision it was fitted on")

    @property
    def label(self) -> str:
        return f"{self.engine}/{self.gpu}/{self.precision}"


IDEAL = Calibration(
    engine="ideal",
    efficiency=Efficiency(weight_bandwidth=1, kv_bandwidth=1, matmul=1, moe_matmul=1, attention_matmul=1, link=1,
                          link_latency_s=0, step_overhead_s=0, layer_overhead_s=0, moe_layer_overhead_s=0, eager_layer_overhead_s=0,
                          eager_mla_layer_overhead_s=0, sequence_overhead_s=0, host_token_s=0,
                          request_overhead_s=0, prompt_token_overhead_s=0, idle_step_s=0, admission_s=0),
    notes="pure roofline: every efficiency 1, every overhead 0",
)


def _non_finite(value, where: str = "") -> str | None:
    """The path of the first NaN or infinite number in parsed JSON, else None (a file must hold finite numbers)."""
    if isinstance(value, float) and not math.isfinite(value):
        return where or "value"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        found = _non_finite(v, f"{where}.{k}" if where else str(k))
        if found:
            return found
    return None


def parse_calibration_file(path: Path | str) -> Calibration:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError, RecursionError, ValueError) as exc:
        reason = "JSON nested too deeply" if isinstance(exc, RecursionError) else exc
        raise ConfigError(one_line(f"cannot read calibration {path}: {reason}")) from None
    bad = _non_finite(data)
    if bad:
        raise ConfigError(f"calibration {path}: {bad}: expected a finite number")
    try:
        return Calibration.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"calibration {path}: {flatten_validation_error(exc)}") from None


@functools.cache
def shipped_calibrations() -> dict[tuple[str, str, str], Calibration]:
    folder = importlib.resources.files("capacity.calibrations")
    out = {}
    for entry in folder.iterdir():
        # card.json: the accuracy card (capacity/card.py); power.json: the power model (capacity/model/power.py)
        if entry.name.endswith(".json") and entry.name not in ("card.json", "power.json"):
            cal = parse_calibration_file(Path(str(entry)))
            out[(cal.engine, cal.gpu, cal.precision)] = cal
    return out


CALIBRATED_GPU = "h200-sxm"  # the only GPU measured here so far
NEAREST_PRECISION = {"bf16": "bf16", "fp8": "fp8", "nvfp4": "fp8", "mxfp4": "fp8", "int4": "bf16"}
FP4_SIBLING = {"nvfp4": "mxfp4", "mxfp4": "nvfp4"}
# the GPU whose calibration is the nearest stand-in: the same silicon in another package or at another power
NEAREST_GPU = {"b300": "b200", "gb300": "gb200", "gb200": "b200", "h200-nvl": "h200-sxm", "h100-pcie": "h100-sxm",
               "h100-nvl": "h100-sxm"}


def transfer_gemm_shares(eff: Efficiency, fitted_gpu: str, gpu: str, precision: str) -> tuple[Efficiency, str]:
    """A calibration's GEMM efficiencies are shares of its own GPU's datasheet peak; another GPU reaches a different
    share of its own (its clocks under GEMM load: an MI300X's best measured matmul is 54 % of its bf16 peak, an
    H200's 80 %). Scale matmul and moe_matmul by the two GPUs' measured maximum-achievable shares at the compute
    precision (FP4 takes FP8's, none being published), attention_matmul by their bf16 shares; unchanged where
    either GPU has no measured figure. Returns the factors and what was done, for the calibration's note."""
    from capacity.hardware import gpu_catalog  # the hardware catalog; imported here, it imports nothing of this module

    catalog = gpu_catalog()
    if fitted_gpu == gpu or fitted_gpu not in catalog or gpu not in catalog:  # a user's own GPU: no measured figure
        return eff, ""
    src, dst = catalog[fitted_gpu], catalog[gpu]
    key = "bf16" if precision in ("bf16", "fp16", "int4") else "fp8"
    a, b = src.achievable_matmul_share(key), dst.achievable_matmul_share(key)
    a16, b16 = src.achievable_matmul_share("bf16"), dst.achievable_matmul_share("bf16")
    if not (a and b and a16 and b16):
        return eff, ""
    r, r16 = b / a, b16 / a16
    eff = eff.model_copy(update={"matmul": min(eff.matmul * r, 1.0), "moe_matmul": min(eff.moe_matmul * r, 1.0),
                                 "attention_matmul": min(eff.attention_matmul * r16, 1.0)})
    return eff, (f"; GEMM shares scaled x{r:.2f} ({key}) and attention x{r16:.2f} by the two GPUs' measured "
                 "maximum-achievable matmul")


def find_calibration(engine: str, gpu: str, precision: str) -> Calibration:
    """The shipped calibration for (engine, gpu, precision). Failing that, the same engine's calibration from the
    same GPU at another precision, else from its nearest GPU (NEAREST_GPU), else from the measured GPU, marked as
    an extrapolation (its factors are shares of each GPU's own peaks, its overheads mostly CPU-side); else the
    literature defaults."""
    cals = shipped_calibrations()
    if (engine, gpu, precision) in cals:
        return cals[(engine, gpu, precision)]
    near = NEAREST_PRECISION.get(precision, "bf16")
    for g in dict.fromkeys((gpu, NEAREST_GPU.get(gpu, gpu), CALIBRATED_GPU)):
        # the other FP4 format first, then the nearest precision, then any fitted one
        for p in dict.fromkeys(tuple(filter(None, (FP4_SIBLING.get(precision), near))) + ("bf16", "fp8", "nvfp4")):
            if (engine, g, p) in cals:
                c = cals[(engine, g, p)]
                eff, scaled = transfer_gemm_shares(c.efficiency, g, gpu, precision)
                return c.model_copy(update={"efficiency": eff,
                                            "extrapolated": f"{engine} calibration fitted on {g} in {p}, "
                                                            f"applied to {gpu} {precision}: an extrapolation{scaled}"})
    return cals.get(("default", "any", "any"), Calibration())
