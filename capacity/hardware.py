"""GPU specifications: one TOML file per GPU in ``hardware_specs/``, loaded into frozen pydantic models.

Datasheet numbers only (dense peaks, vendor bandwidth, label memory). Empirical efficiency factors
live in calibration files, never here. Every numeric field must name its source in ``[sources]``.
"""

from __future__ import annotations

import functools
import importlib.resources
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from capacity.errors import ConfigError, UnknownGpuError, closest

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
)


class DenseFlops(BaseModel):
    """Dense (no 2:4 sparsity) tensor-core peaks in FLOP/s; a missing precision is unsupported."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    bf16: float = Field(gt=0)
    fp8: float | None = Field(default=None, gt=0)
    fp4: float | None = Field(default=None, gt=0)
    int8: float | None = Field(default=None, gt=0)


class Gpu(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    vendor: str
    release_year: int
    memory_label: str = Field(description="vendor label, e.g. '141 GB HBM3e'")
    memory_bytes: float = Field(gt=0, description="vendor label capacity in bytes")
    usable_memory_bytes: float = Field(gt=0, description="what the driver reports (nvidia-smi total)")
    memory_bandwidth_bytes_per_s: float = Field(gt=0)
    dense_flops_per_s: DenseFlops
    fp4_formats: tuple[str, ...] = Field(default=(), description="'nvfp4', 'mxfp4' where FP4 tensor cores exist")
    interconnect_name: str
    interconnect_bytes_per_s_per_direction: float = Field(gt=0, description="scale-up bandwidth per GPU per direction")
    scale_up_domain_size: int = Field(ge=1)
    tdp_watts: float = Field(gt=0)
    price_usd_per_gpu_hour: float | None = Field(default=None, gt=0)
    price_date: str | None = None
    price_provider: str | None = None
    confidence: Literal["H", "M", "L"] = "M"
    notes: str = ""
    sources: dict[str, str]

    @model_validator(mode="after")
    def _every_number_has_a_source(self) -> "Gpu":
        missing = [f for f in SOURCED_FIELDS if f not in self.sources and getattr(self, f) is not None]
        if missing:
            raise ValueError(f"no source given for {', '.join(missing)}")
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

    @property
    def ridge_point_flops_per_byte(self) -> float:
        return self.dense_flops_per_s.bf16 / self.memory_bandwidth_bytes_per_s


def parse_gpu_file(path: Path | str) -> Gpu:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read GPU spec {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"GPU spec {path} is not valid TOML: {exc}") from None
    try:
        return Gpu.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "file"
        raise ConfigError(f"GPU spec {path}: {where}: {first['msg']}") from None


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
    if id_or_path.endswith(".toml") or Path(id_or_path).is_file():
        return parse_gpu_file(id_or_path)
    raise UnknownGpuError(f"unknown GPU '{id_or_path}'{closest(id_or_path, list(catalog))}")
