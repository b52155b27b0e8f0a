"""The row schema of the public corpus (one published number per row, SI units)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Metric = Literal["output_tokens_per_s", "output_tokens_per_s_per_gpu", "total_tokens_per_s", "requests_per_s",
                 "ttft_s", "itl_s", "tpot_s", "e2e_latency_s"]
UNITS: dict[str, str] = {
    "output_tokens_per_s": "output tokens/s (all GPUs of the row)",
    "output_tokens_per_s_per_gpu": "output tokens/s per GPU",
    "total_tokens_per_s": "input + output tokens/s (all GPUs of the row)",
    "requests_per_s": "requests/s",
    "ttft_s": "s",
    "itl_s": "s",
    "tpot_s": "s",
    "e2e_latency_s": "s",
}
THROUGHPUT_METRICS = frozenset({"output_tokens_per_s", "output_tokens_per_s_per_gpu", "total_tokens_per_s", "requests_per_s"})


class Row(BaseModel):
    """One published measurement. `note` says what is ambiguous or assumed; an empty note means nothing is."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    row_id: str = Field(description="<source_id>:<index>, stable for a given raw file")
    source_id: str
    source_kind: str = Field(description="the importer that read it (validate/public/<kind>.py)")
    source_url: str
    source_commit: str | None = Field(None, description="40-hex commit of the repository copy read; None for a web page")
    source_path: str = Field(description="data/public/raw/<file> the row was imported from")
    published: str = Field(description="version or date of the publication")
    read_on: str = Field(description="date the source was read (ISO)")
    engine: str = Field(description="trtllm, vllm, sglang, nim ... as published")
    engine_version: str
    gpu: str = Field(description="a hardware_specs/*.toml id")
    num_gpus: int = Field(ge=1)
    tp: int = Field(ge=1)
    ep: int = Field(1, ge=1)
    dp: int = Field(1, ge=1, description="attention data parallel (TensorRT-LLM attention DP, SGLang DP attention)")
    pp: int = Field(1, ge=1)
    model: str = Field(description="a capacity/model_configs id")
    model_published: str = Field(description="the model as the source names it")
    weight_precision: Literal["bf16", "fp16", "fp8", "nvfp4", "mxfp4"]
    kv_precision: Literal["bf16", "fp16", "fp8", "unstated"]
    isl: int = Field(ge=1)
    osl: int = Field(ge=1)
    lengths: Literal["fixed", "distributed", "unstated"]
    length_range_ratio: float | None = Field(None, gt=0, le=1, description="distributed lengths drawn uniformly from "
                                             "[r·L, L] (InferenceX, vLLM --random-range-ratio style); mean (1+r)/2·L")
    load: Literal["offline", "concurrency", "rate", "sync", "batch"] = Field(
        description="offline = all requests queued at once (max throughput); batch = one batch of `batch` requests "
                    "processed together (vLLM benchmark_latency); concurrency = closed loop of `concurrency` clients")
    concurrency: int | None = Field(None, ge=1)
    rate: float | None = Field(None, gt=0)
    batch: int | None = Field(None, ge=1)
    num_requests: int | None = Field(None, ge=1)
    max_num_seqs: int | None = Field(None, ge=1)
    metric: Metric
    statistic: Literal["mean", "median", "p90", "p99", "aggregate"] = Field(
        description="aggregate = a whole-run rate (throughput), not a per-request statistic")
    value: float = Field(gt=0)
    unit: str
    note: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> "Row":
        if self.unit != UNITS[self.metric]:
            raise ValueError(f"unit {self.unit!r} does not match metric {self.metric} ({UNITS[self.metric]!r})")
        if self.num_gpus % (self.tp * self.pp):
            raise ValueError(f"num_gpus {self.num_gpus} is not a multiple of tp {self.tp} × pp {self.pp}")
        if self.load == "concurrency" and self.concurrency is None:
            raise ValueError("a concurrency load needs `concurrency`")
        if self.load == "rate" and self.rate is None:
            raise ValueError("a rate load needs `rate`")
        if self.load == "batch" and self.batch is None:
            raise ValueError("a batch load needs `batch`")
        if (self.metric in THROUGHPUT_METRICS) != (self.statistic == "aggregate"):
            raise ValueError(f"{self.metric} with statistic {self.statistic}: throughputs are aggregates, latencies are not")
        if self.source_commit is not None and (len(self.source_commit) != 40
                                               or any(c not in "0123456789abcdef" for c in self.source_commit)):
            raise ValueError(f"source_commit {self.source_commit!r} is not a 40-hex commit")
        return self


def row(**fields) -> Row:
    """A Row with its unit filled from the metric."""
    return Row(unit=UNITS[fields["metric"]], **fields)
