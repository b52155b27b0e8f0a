"""Number formats: bytes per weight (block scales included) and the tensor-core rate they run at.

Weight formats (per quantized linear weight):
- bf16 / fp16: 2 bytes.
- fp8 (E4M3, per-tensor or per-channel scale, or DeepSeek's 128x128 block scale): 1 byte (+ negligible scales).
- int4 weight-only (AWQ/GPTQ, group 128 with an fp16 scale and zero): 0.5 + 4/128 bytes.
- nvfp4: 0.5 byte + one FP8 (E4M3) scale per 16 values = 0.5625 bytes.
- mxfp4: 0.5 byte + one E8M0 scale per 32 values = 0.53125 bytes.
Embeddings, the LM head, norms and MoE routers stay in bf16 in every quantized checkpoint/engine path here.
"""

from __future__ import annotations

from typing import Literal

from capacity.errors import WorkloadError

WeightFormat = Literal["bf16", "fp8", "int4", "nvfp4", "mxfp4"]
KvFormat = Literal["bf16", "fp8"]
PRECISION_CHOICES = ("bf16", "fp16", "fp8", "fp4", "nvfp4", "mxfp4", "int4", "native")

BYTES_PER_WEIGHT: dict[str, float] = {
    "bf16": 2.0,
    "fp8": 1.0,
    "int4": 0.5 + 4 / 128,
    "nvfp4": 0.5 + 1 / 16,
    "mxfp4": 0.5 + 1 / 32,
}
HIGH_PRECISION_BYTES = 2.0
KV_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0}


def resolve_weight_format(precision: str, fp4_formats: tuple[str, ...], native: str | None) -> WeightFormat:
    """Map a user's --precision to a concrete weight format on a GPU.

    'fp4' means NVFP4 on GPUs with NVFP4 tensor cores, MXFP4 where only MXFP4 exists, and MXFP4
    weight-only (dequantized to bf16 in the kernel) on GPUs without FP4 tensor cores.
    'native' keeps the checkpoint's own format (gpt-oss: mxfp4, DeepSeek-V3: fp8).
    """
    p = precision.lower()
    if p == "native":
        p = native or "bf16"
    if p == "fp16":
        return "bf16"
    if p == "fp4":
        return "nvfp4" if "nvfp4" in fp4_formats else "mxfp4"
    if p in BYTES_PER_WEIGHT:
        return p  # type: ignore[return-value]
    raise WorkloadError(f"unknown precision '{precision}'; choose one of {', '.join(PRECISION_CHOICES)}")


def compute_precision(weight_format: str, fp4_formats: tuple[str, ...], has_fp8: bool) -> str:
    """Which tensor-core rate the linear layers run at for a weight format on a GPU.

    fp8 weights run W8A8 at the FP8 rate where the GPU has FP8 tensor cores, else weight-only (bf16 rate).
    nvfp4/mxfp4 run at the FP4 rate where the GPU supports that format, else weight-only at bf16.
    int4 (AWQ/GPTQ) is weight-only: bf16 rate.
    """
    if weight_format == "fp8":
        return "fp8" if has_fp8 else "bf16"
    if weight_format in ("nvfp4", "mxfp4"):
        return "fp4" if weight_format in fp4_formats else "bf16"
    return "bf16"


def kv_bytes_per_element(kv_precision: str) -> float:
    try:
        return KV_BYTES[kv_precision.lower()]
    except KeyError:
        raise WorkloadError(f"unknown KV precision '{kv_precision}'; choose bf16 or fp8") from None
