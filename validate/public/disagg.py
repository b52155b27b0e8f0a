"""Published disaggregated prefill/decode measurements: the row schema and the importers.

One row per published number, SI units, with the layout spelled out per pool (instances, TP, EP, attention data
parallel, GPUs). Rebuilt deterministically from data/public/raw/disagg/ into data/public/disagg_rows.jsonl:

    .venv/bin/python -m validate.public.disagg [--check]

Sources (each raw file names its URL, commit and read date on top; data/public/README.md lists the ambiguities):
- `inferencex-disagg.jsonl`: the InferenceX benchmark-API objects with `disagg` true, fields unchanged;
- `lmsys-large-scale-ep.md`: the SGLang team's phase-alone numbers for DeepSeek-V3 on 96 H100s (transcribed);
- `vllm-issue-26072.md`: a user's vLLM xPyD table on 4 x A100 (transcribed).

Scored by scripts/score_disagg.py, which maps each row to capacity/disagg.py's layouts or says why it cannot.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from validate.errors import ImportFormatError, one_line
from validate.public.common import REPO_ROOT, join_notes, map_gpu, number, read_header, tables

RAW = REPO_ROOT / "data" / "public" / "raw" / "disagg"
ROWS = REPO_ROOT / "data" / "public" / "disagg_rows.jsonl"

Metric = Literal["output_tokens_per_s_per_gpu", "ttft_s", "tpot_s", "itl_s",
                 "prefill_input_tokens_per_s_per_gpu", "decode_output_tokens_per_s_per_gpu"]
UNITS: dict[str, str] = {
    "output_tokens_per_s_per_gpu": "output tokens/s per GPU of the whole layout (prefill + decode GPUs)",
    "ttft_s": "s",
    "tpot_s": "s",
    "itl_s": "s",
    "prefill_input_tokens_per_s_per_gpu": "prompt tokens/s per GPU of the prefill pool, measured alone",
    "decode_output_tokens_per_s_per_gpu": "output tokens/s per GPU of the decode pool, measured alone",
}
THROUGHPUTS = frozenset({"output_tokens_per_s_per_gpu", "prefill_input_tokens_per_s_per_gpu",
                         "decode_output_tokens_per_s_per_gpu"})


class Pool(BaseModel):
    """One pool of a layout as published: `instances` servers of `tp` × … GPUs each, `gpus` in all."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    instances: int = Field(ge=0, description="0 where the source gives no worker count (legacy objects)")
    tp: int = Field(ge=1)
    ep: int = Field(1, ge=1)
    dp_attention: bool = False
    gpus: int = Field(ge=1, description="all GPUs of the pool")

    @property
    def gpus_per_instance(self) -> float:
        return self.gpus / self.instances if self.instances else float("nan")


class DisaggRow(BaseModel):
    """One published disaggregated measurement. `note` says what is ambiguous or assumed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    row_id: str
    source_id: str
    source_kind: Literal["inferencex", "transcribed"]
    source_url: str
    source_commit: str | None = Field(None, description="40-hex commit of the repository copy read; None for a web page")
    source_path: str
    published: str
    read_on: str
    engine: Literal["sglang", "trtllm", "vllm"]
    framework_published: str = Field(description="as the source names it (dynamo-trt, mori-sglang, ...)")
    engine_version: str
    gpu: str = Field(description="a hardware_specs/*.toml id")
    model: str = Field(description="a capacity/model_configs id")
    model_published: str
    weight_precision: Literal["bf16", "fp16", "fp8", "nvfp4", "mxfp4"]
    kv_precision: Literal["bf16", "fp16", "fp8", "unstated"]
    speculative: Literal["none", "mtp", "simulated-mtp"]
    prefill: Pool | None = Field(description="None where the prefill pool was not part of the test (decode alone)")
    decode: Pool | None = Field(description="None where the decode pool was not part of the test (prefill alone)")
    num_gpus: int = Field(ge=1, description="GPUs of the pools under test")
    kv_transfer: str = Field(description="KV connector / transfer engine as published, or 'unstated'")
    isl: int = Field(ge=1)
    osl: int = Field(ge=1)
    lengths: Literal["fixed", "distributed", "unstated"]
    length_range_ratio: float | None = Field(None, gt=0, le=1, description="lengths uniform in [r·L, L]")
    load: Literal["concurrency", "rate", "prefill-alone", "decode-alone"]
    concurrency: int | None = Field(None, ge=1)
    rate: float | None = Field(None, gt=0)
    num_requests: int | None = Field(None, ge=1)
    batch_per_gpu: int | None = Field(None, ge=1, description="phase-alone tests: sequences (decode) per GPU")
    metric: Metric
    statistic: Literal["mean", "median", "aggregate"]
    value: float = Field(gt=0)
    unit: str
    published_value: float = Field(description="the number as printed, before any unit or divisor change")
    published_unit: str
    note: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> "DisaggRow":
        if self.unit != UNITS[self.metric]:
            raise ValueError(f"unit {self.unit!r} does not match metric {self.metric}")
        if (self.metric in THROUGHPUTS) != (self.statistic == "aggregate"):
            raise ValueError(f"{self.metric} with statistic {self.statistic}: throughputs are aggregates")
        pools = [p for p in (self.prefill, self.decode) if p is not None]
        if not pools or self.num_gpus != sum(p.gpus for p in pools):
            raise ValueError("num_gpus must be the GPUs of the pools given")
        alone = {"prefill-alone": self.decode, "decode-alone": self.prefill}
        if self.load in alone and alone[self.load] is not None:
            raise ValueError(f"a {self.load} row gives only the pool under test")
        if self.load not in alone and (self.prefill is None or self.decode is None):
            raise ValueError("an end-to-end row needs both pools")
        if self.load == "concurrency" and self.concurrency is None:
            raise ValueError("a concurrency load needs `concurrency`")
        if self.load == "rate" and self.rate is None:
            raise ValueError("a rate load needs `rate`")
        if self.source_commit is not None and (len(self.source_commit) != 40
                                               or any(c not in "0123456789abcdef" for c in self.source_commit)):
            raise ValueError(f"source_commit {self.source_commit!r} is not a 40-hex commit")
        return self


def _row(**fields) -> DisaggRow:
    return DisaggRow(unit=UNITS[fields["metric"]], **fields)


# --- InferenceX -------------------------------------------------------------------------------------------------

IX_FILE = "inferencex-disagg.jsonl"
IX_ENGINES = {"dynamo-trt": "trtllm", "dynamo-sglang": "sglang", "mori-sglang": "sglang"}
IX_TRANSFER = {"dynamo-trt": "nixl (Dynamo)", "dynamo-sglang": "nixl (Dynamo)", "mori-sglang": "mori (AMD MoRI-IO)"}
IX_METRICS = (("output_tput_per_gpu", "output_tokens_per_s_per_gpu", "aggregate"),
              ("mean_ttft", "ttft_s", "mean"),
              ("mean_tpot", "tpot_s", "mean"))


class IxObject(BaseModel):
    """One InferenceX API object: the fields read (numbers positive and finite)."""

    model_config = ConfigDict(strict=True, extra="ignore")
    hardware: str
    framework: str
    model: str
    precision: Literal["fp8", "fp4"]
    spec_method: Literal["none", "mtp"]
    disagg: bool
    is_multinode: bool
    prefill_tp: int = Field(ge=1)
    prefill_ep: int = Field(ge=1)
    prefill_dp_attention: bool
    prefill_num_workers: int = Field(ge=0)
    decode_tp: int = Field(ge=1)
    decode_ep: int = Field(ge=1)
    decode_dp_attention: bool
    decode_num_workers: int = Field(ge=0)
    num_prefill_gpu: int = Field(ge=1)
    num_decode_gpu: int = Field(ge=1)
    isl: int = Field(ge=1)
    osl: int = Field(ge=1)
    conc: int = Field(ge=1)
    image: str | None = None
    date: str
    run_url: str
    metrics: dict[str, float]


def _ix_identity_holds(o: IxObject) -> bool:
    """tput_per_gpu·(P+D) = input_tput_per_gpu·P + output_tput_per_gpu·D: the multinode divisors of
    InferenceX's process_result.py (total ÷ all GPUs, input ÷ prefill GPUs, output ÷ decode GPUs)."""
    m, P, D = o.metrics, o.num_prefill_gpu, o.num_decode_gpu
    lhs = m["tput_per_gpu"] * (P + D)
    rhs = m["input_tput_per_gpu"] * P + m["output_tput_per_gpu"] * D
    return abs(lhs / rhs - 1) < 1e-6


def import_inferencex(path: Path) -> list[DisaggRow]:
    text = path.read_text()
    h = read_header(text)
    rows: list[DisaggRow] = []
    for number_, line in enumerate(text.splitlines(), 1):
        if not line.startswith("{"):
            continue
        try:
            o = IxObject.model_validate(json.loads(line))
        except (ValidationError, ValueError) as err:
            raise ImportFormatError(f"{path}:{number_}: {one_line(str(err))}") from None
        if not o.disagg or o.model != "dsr1":
            raise ImportFormatError(f"{path}:{number_}: expected only disaggregated dsr1 objects")
        gpu = map_gpu(o.hardware)
        weight = "fp8" if o.precision == "fp8" else ("mxfp4" if gpu.startswith("mi") else "nvfp4")
        identity = _ix_identity_holds(o)
        prefill = Pool(instances=o.prefill_num_workers, tp=o.prefill_tp, ep=o.prefill_ep,
                       dp_attention=o.prefill_dp_attention, gpus=o.num_prefill_gpu)
        decode = Pool(instances=o.decode_num_workers, tp=o.decode_tp, ep=o.decode_ep,
                      dp_attention=o.decode_dp_attention, gpus=o.num_decode_gpu)
        total = o.num_prefill_gpu + o.num_decode_gpu
        common = join_notes(
            "InferenceX's dsr1 is DeepSeek-R1-0528 (scored with the R1/V3 config)",
            "fp4 on AMD Instinct = MXFP4, on NVIDIA = NVFP4 (the API says only fp4)" if o.precision == "fp4" else "",
            "lengths uniform in [0.8 L, L] (sa-bench's default --random-range-ratio; the object does not record it)",
            "10 × C prompts after 2 × C warm-up (sa-bench defaults)",
            "KV precision not in the API object",
            "InferenceX's h200/h100 taken as the SXM parts" if o.hardware in ("h200", "h100") else "",
            "image is the Dynamo TensorRT-LLM runtime; the TensorRT-LLM release inside is not recorded"
            if o.framework == "dynamo-trt" else "",
            "no image recorded" if not o.image else "",
            "legacy object: no worker counts, TP equal to the pool's GPUs, per-GPU throughputs that do not satisfy "
            "the multinode divisor identity" if not identity else "",
            "is_multinode false although disaggregated" if not o.is_multinode else "")
        for key, metric, stat in IX_METRICS:
            if key not in o.metrics:
                continue
            published = float(o.metrics[key])
            if metric == "output_tokens_per_s_per_gpu":
                value = published * o.num_decode_gpu / total
                mnote = (f"published output_tput_per_gpu divides output tokens/s by the {o.num_decode_gpu} decode GPUs "
                         f"(process_result.py); here × {o.num_decode_gpu} ÷ {total} GPUs of the layout")
                punit = "output tokens/s per decode GPU"
            else:
                value = published
                mnote = ("TPOT = (e2e − TTFT)/(output tokens − 1) per request, averaged; ITL not used (engines stream "
                         "several tokens per chunk)" if metric == "tpot_s" else "")
                punit = "s"
            rows.append(_row(
                row_id=f"{h['source_id']}:{len(rows):04d}", source_id=h["source_id"], source_kind="inferencex",
                source_url=h["url"], source_commit=h["commit"], source_path=f"data/public/raw/disagg/{path.name}",
                published=f"InferenceX run of {o.date} ({o.run_url})", read_on=h["read"],
                engine=IX_ENGINES[o.framework], framework_published=o.framework,
                engine_version=o.image or "not recorded", gpu=gpu, model="deepseek-ai/DeepSeek-R1",
                model_published=o.model, weight_precision=weight, kv_precision="unstated", speculative=o.spec_method,
                prefill=prefill, decode=decode, num_gpus=total, kv_transfer=IX_TRANSFER[o.framework],
                isl=o.isl, osl=o.osl, lengths="distributed", length_range_ratio=0.8, load="concurrency",
                concurrency=o.conc, num_requests=10 * o.conc, metric=metric, statistic=stat, value=value,
                published_value=published, published_unit=punit, note=join_notes(common, mnote)))
    return rows


# --- transcriptions ---------------------------------------------------------------------------------------------

LMSYS_FILE = "lmsys-large-scale-ep.md"
VLLM_FILE = "vllm-issue-26072.md"


def _header_common(h, path: Path) -> dict:
    return dict(source_id=h["source_id"], source_kind="transcribed", source_url=h["url"], source_commit=h.get("commit"),
                source_path=f"data/public/raw/disagg/{path.name}", published=h["published"], read_on=h["read"])


def _one_table(path: Path, first_column: str) -> tuple[dict, list[list[str]]]:
    """A transcribed source: its header and the body of its one table, whose first column must be `first_column`."""
    text = path.read_text()
    h = read_header(text)
    (_, table), = tables(text)
    head, *body = table
    if head[0] != first_column:
        raise ImportFormatError(f"{path}: unexpected table heading {head}")
    return h, body


def import_lmsys(path: Path) -> list[DisaggRow]:
    h, body = _one_table(path, "phase")
    rows: list[DisaggRow] = []
    for cells in body:
        phase, nodes, ep, dpa, prompt, batch, kvlen, spec, per_node = cells
        gpus = int(nodes) * 8
        pool = Pool(instances=1, tp=1, ep=int(ep), dp_attention=dpa == "yes", gpus=gpus)
        prefill = phase == "prefill"
        value = float(per_node) / 8
        rows.append(_row(
            row_id=f"{h['source_id']}:{len(rows):04d}", **_header_common(h, path), engine="sglang",
            framework_published="SGLang PD disaggregation (Mooncake/NIXL RDMA transfer)", engine_version="not stated",
            gpu="h100-sxm", model="deepseek-ai/DeepSeek-V3", model_published="DeepSeek-V3", weight_precision="fp8",
            kv_precision="unstated", speculative=spec, prefill=pool if prefill else None,
            decode=None if prefill else pool, num_gpus=gpus, kv_transfer="Mooncake or NIXL (RDMA), which not stated",
            isl=int(prompt), osl=1 if prefill else int(kvlen), lengths="unstated",
            load="prefill-alone" if prefill else "decode-alone",
            batch_per_gpu=int(batch) if batch else None,
            metric="prefill_input_tokens_per_s_per_gpu" if prefill else "decode_output_tokens_per_s_per_gpu",
            statistic="aggregate", value=value, published_value=float(per_node), published_unit="tokens/s per node",
            note=join_notes(
                f"one instance of {gpus} GPUs over {nodes} nodes: attention data parallel on every GPU, expert "
                f"parallel {ep} (DeepEP), two-batch overlap, EPLB; TP per attention group not stated (taken as 1)",
                "per node ÷ 8 GPUs", "the other pool given unlimited resources (phase measured alone)",
                "weight precision not stated (DeepSeek-V3's released checkpoint is FP8)",
                "1K/2K/4K taken as 1,024/2,048/4,096 tokens" if prefill else
                "decode at 256 sequences per GPU, KV length 2,000; output length not stated (the KV length is used)",
                "simulated MTP: batch doubled, KV halved, attention padded with dummy kernels (not a real run)"
                if spec == "simulated-mtp" else "")))
    return rows


def import_vllm_issue(path: Path) -> list[DisaggRow]:
    h, body = _one_table(path, "layout")
    rows: list[DisaggRow] = []
    for cells in body:
        layout, x, y, itl_ms, ttft_ms, out_tps = cells
        x, y = int(x), int(y)
        total = x + y
        base = dict(**_header_common(h, path), engine="vllm", framework_published="vLLM NixlConnector + toy proxy",
                    engine_version="not stated", gpu="a100-80gb-sxm", model="meta-llama/Llama-3.1-8B",
                    model_published="Llama 3.1 8B", weight_precision="bf16", kv_precision="unstated",
                    speculative="none", prefill=Pool(instances=x, tp=1, gpus=x), decode=Pool(instances=y, tp=1, gpus=y),
                    num_gpus=total, kv_transfer="nixl (vLLM NixlConnector)", isl=1000, osl=100, lengths="unstated",
                    load="rate", rate=25.0, num_requests=100)
        notes = join_notes(f"layout {layout}", "A100 variant not stated: taken as the 80 GB SXM",
                           "one GPU per instance (4 GPUs, the 2P2D layout uses all)",
                           "weights taken as BF16 (checkpoint not stated)",
                           "random dataset: whether lengths were fixed is not stated (scored as fixed)",
                           "100 prompts at 25 requests/s: a 4-second arrival window, a transient rather than a "
                           "steady state", "the reporter doubts the setup")
        for metric, stat, val, pub, punit in (
                ("output_tokens_per_s_per_gpu", "aggregate", number(out_tps) / total, number(out_tps),
                 "output tokens/s of the layout"),
                ("ttft_s", "median", number(ttft_ms) / 1e3, number(ttft_ms), "ms"),
                ("itl_s", "median", number(itl_ms) / 1e3, number(itl_ms), "ms")):
            rows.append(_row(row_id=f"{h['source_id']}:{len(rows):04d}", **base, metric=metric, statistic=stat,
                             value=val, published_value=pub, published_unit=punit,
                             note=join_notes(notes, f"÷ {total} GPUs of the layout"
                                             if metric == "output_tokens_per_s_per_gpu" else "")))
    return rows


IMPORTERS = ((IX_FILE, import_inferencex), (LMSYS_FILE, import_lmsys), (VLLM_FILE, import_vllm_issue))


def build(raw: Path = RAW) -> list[DisaggRow]:
    rows: list[DisaggRow] = []
    for name, fn in IMPORTERS:
        rows += fn(raw / name)
    ids = [r.row_id for r in rows]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate row ids")
    unread = sorted(p.name for p in raw.iterdir() if p.is_file() and p.name not in {n for n, _ in IMPORTERS}
                    and p.name != "README.md")
    if unread:
        raise ValueError(f"raw files no importer read: {unread}")
    from capacity.model.architecture import catalog_ids
    from capacity.hardware import gpu_catalog
    models, gpus = {m.lower() for m in catalog_ids()}, set(gpu_catalog())
    bad = sorted({f"{r.row_id}: {r.model} on {r.gpu}" for r in rows if r.model.lower() not in models or r.gpu not in gpus})
    if bad:
        raise ValueError(f"rows whose model or GPU is not in the catalogs: {bad[:5]}")
    return rows


def render(rows: list[DisaggRow]) -> str:
    return "".join(json.dumps(r.model_dump(mode="json"), ensure_ascii=False) + "\n" for r in rows)


def load_rows(path: Path = ROWS) -> list[DisaggRow]:
    return [DisaggRow.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="rebuild data/public/disagg_rows.jsonl from data/public/raw/disagg/")
    ap.add_argument("--out", type=Path, default=ROWS)
    ap.add_argument("--check", action="store_true", help="compare with the committed rows instead of writing")
    args = ap.parse_args(argv)
    text = render(build())
    if args.check:
        same = args.out.exists() and args.out.read_text() == text
        print("disagg_rows.jsonl is up to date" if same else "disagg_rows.jsonl differs from the raw files: rebuild it")
        return 0 if same else 1
    args.out.write_text(text)
    print(f"{text.count(chr(10))} rows -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
