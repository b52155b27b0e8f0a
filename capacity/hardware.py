"""GPU specifications: one TOML file per GPU in ``hardware_specs/``, loaded into frozen pydantic models.

Datasheet numbers only (dense peaks, vendor bandwidth, label memory). Empirical efficiency factors
live in calibration files, never here. Every numeric field must name its source in ``[sources]``.
"""

from __future__ import annotations

import functools
import importlib.resources
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from capacity.errors import ConfigError, UnknownGpuError, closest, flatten_validation_error, one_line

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ComputePrecision = Literal["bf16", "fp8", "fp4", "int8"]

SOURCED_FIELDS = (
    "memory_bytes",
    "usable_memory_bytes",
    "memory_bandwidth_bytes_per_s",
    "dense_flops_per_s",
    "interconnect_bytes_per_s_per_direction",
    "tdp_watts",
    "price_usd_per_gpu_hour",
    "achievable_matmul_flops_per_s",
)


# Physical ranges a spec's numbers must fall in: far beyond any GPU made (B300: 288 GB, 8 TB/s, 10 PFLOP/s
# dense FP4), yet small enough that every time, throughput and cost computed from them stays finite.
MEMORY_BYTES = (1e6, 1e15)  # 1 MB … 1 PB
BANDWIDTH_BYTES_PER_S = (1e6, 1e15)  # 1 MB/s … 1 PB/s
FLOPS_PER_S = (1e6, 1e18)  # 1 MFLOP/s … 1 EFLOP/s
LINK_BYTES_PER_S = (1e3, 1e15)
TDP_WATTS = (1.0, 1e6)
PRICE_USD_PER_GPU_HOUR = (1e-6, 1e4)
SPEC_FILE_MAX_BYTES = 2**20


def _within(lo_hi: tuple[float, float], **kw) -> Any:
    lo, hi = lo_hi
    return Field(ge=lo, le=hi, strict=True, **kw)


class DenseFlops(BaseModel):
    """Dense (no 2:4 sparsity) tensor-core peaks in FLOP/s; a missing precision is unsupported."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
    bf16: float = _within(FLOPS_PER_S)
    fp8: float | None = _within(FLOPS_PER_S, default=None)
    fp4: float | None = _within(FLOPS_PER_S, default=None)
    int8: float | None = _within(FLOPS_PER_S, default=None)


class AchievableFlops(BaseModel):
    """The best dense GEMM rate measured on the part (a maximum-achievable-matmul sweep over shapes), in FLOP/s: what
    its clocks under GEMM load really give, an upper bound for real layers."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
    bf16: float = _within(FLOPS_PER_S)
    fp8: float | None = _within(FLOPS_PER_S, default=None)


class Gpu(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    id: str = Field(min_length=1, max_length=200)
    name: str = Field(max_length=200)
    vendor: str = Field(max_length=200)
    release_year: int = Field(ge=1990, le=2200, strict=True)
    memory_label: str = Field(max_length=200, description="vendor label, e.g. '141 GB HBM3e'")
    memory_bytes: float = _within(MEMORY_BYTES, description="vendor label capacity in bytes")
    usable_memory_bytes: float = _within(MEMORY_BYTES, description="what the driver reports (nvidia-smi total)")
    memory_bandwidth_bytes_per_s: float = _within(BANDWIDTH_BYTES_PER_S)
    dense_flops_per_s: DenseFlops
    fp4_formats: tuple[str, ...] = Field(default=(), description="'nvfp4', 'mxfp4' where FP4 tensor cores exist")
    interconnect_name: str
    interconnect_bytes_per_s_per_direction: float = _within(LINK_BYTES_PER_S, description="scale-up bandwidth per GPU per direction")
    scale_up_domain_size: int = Field(ge=1, le=100_000, strict=True)
    tdp_watts: float = _within(TDP_WATTS)
    price_usd_per_gpu_hour: float | None = _within(PRICE_USD_PER_GPU_HOUR, default=None)
    price_date: str | None = None
    price_provider: str | None = None
    achievable_matmul_flops_per_s: AchievableFlops | None = Field(
        default=None, description="measured maximum-achievable dense matmul (None: not published)")
    confidence: Literal["H", "M", "L"] = "M"
    notes: str = ""
    sources: dict[str, str]

    @model_validator(mode="after")
    def _every_number_has_a_source(self) -> "Gpu":
        missing = [f for f in SOURCED_FIELDS if f not in self.sources and getattr(self, f) is not None]
        if missing:
            raise ValueError(f"no source given for {', '.join(missing)}")
        a = self.achievable_matmul_flops_per_s
        if a is not None and (a.bf16 > self.dense_flops_per_s.bf16
                              or (a.fp8 is not None and (self.dense_flops_per_s.fp8 is None
                                                         or a.fp8 > self.dense_flops_per_s.fp8))):
            raise ValueError("achievable_matmul_flops_per_s exceeds the dense peak (or names fp8 without an fp8 peak)")
        if self.usable_memory_bytes > self.memory_bytes * 1.1:
            raise ValueError("usable_memory_bytes exceeds the labelled memory by more than 10 %")
        return self

    def peak_flops_per_s(self, precision: str) -> float:
        """Dense peak for a compute precision; falls back to the next wider supported format."""
        order = {"fp4": ("fp4", "fp8", "bf16"), "fp8": ("fp8", "bf16"), "int8": ("int8", "bf16"), "bf16": ("bf16",)}
        for p in order[precision]:
            value = getattr(self.dense_flops_per_s, p)
            if value is not None:
                return value
        raise ConfigError(f"{self.id} has no bf16 peak")  # unreachable: bf16 is required

    def achievable_matmul_share(self, precision: str) -> float | None:
        """Measured maximum-achievable matmul over the dense peak, at bf16 or fp8 (fp8's falls back to bf16's where
        only that is published); None where nothing is."""
        a = self.achievable_matmul_flops_per_s
        if a is None:
            return None
        if precision != "bf16" and a.fp8 is not None and self.dense_flops_per_s.fp8:
            return a.fp8 / self.dense_flops_per_s.fp8
        return a.bf16 / self.dense_flops_per_s.bf16

    @property
    def ridge_point_flops_per_byte(self) -> float:
        return self.dense_flops_per_s.bf16 / self.memory_bandwidth_bytes_per_s


def parse_gpu_file(path: Path | str) -> Gpu:
    """One GPU spec TOML file; any fault raises ConfigError on one line naming the file and the field."""
    path = Path(path)
    try:
        if path.stat().st_size > SPEC_FILE_MAX_BYTES:
            raise ConfigError(f"GPU spec {path}: larger than 1 MiB; no GPU spec is that big")
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # ValueError: not a path (a NUL byte)
        if isinstance(exc, tomllib.TOMLDecodeError):
            raise ConfigError(one_line(f"GPU spec {path}: not valid TOML: {exc}")) from None
        raise ConfigError(one_line(f"GPU spec {path}: cannot read: {exc}")) from None
    except RecursionError:
        raise ConfigError(f"GPU spec {path}: not a GPU spec: TOML nested too deeply") from None
    try:
        return Gpu.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"GPU spec {path}: {flatten_validation_error(exc)}") from None


@functools.cache
def gpu_catalog() -> dict[str, Gpu]:
    folder = importlib.resources.files("hardware_specs")
    gpus = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            gpu = parse_gpu_file(Path(str(entry)))
            gpus[gpu.id] = gpu
    return gpus


def load_gpu(id_or_path: str) -> Gpu:
    """A catalog id (``h200-sxm``) or a path to a user's own TOML file."""
    catalog = gpu_catalog()
    if id_or_path in catalog:
        return catalog[id_or_path]
    lowered = {k.lower(): v for k, v in catalog.items()}
    if id_or_path.lower() in lowered:
        return lowered[id_or_path.lower()]
    try:
        is_file = Path(id_or_path).is_file()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        is_file = False
    if id_or_path.endswith(".toml") or is_file:
        return parse_gpu_file(id_or_path)
    raise UnknownGpuError(one_line(f"unknown GPU {id_or_path[:200]!r}{closest(id_or_path[:200], list(catalog))}"))
