"""Importer for TensorRT-LLM's performance-overview tables (docs/source/performance/perf-overview.md and its
successor docs/source/developer-guide/perf-overview.md), pinned copies in data/public/raw/trtllm-perf-*.md.

Three table layouts occur across versions:
- v0.17: one wide table, GPUs across, rows of (model, TP, "isl, osl"), a Precision row under the GPU names;
- v0.20: one table per "#### <model> <precision>" heading with a GPU row (blank = same GPU) and a TP row;
- v1.0 and later: one table per model heading, each column header "<GPU><br/><parallel> (<precision>)" where
  parallel is TPn, DEPn (attention data parallel + expert parallel over n GPUs) or TPa,PPb / DEPa,PPb, and the
  RTX 6000 Pro tables name the GPU count ("**8 GPUs**").
Every value is an offline trtllm-bench throughput (all requests queued at once, fixed lengths); the request count
per shape comes from the doc's own num_requests table.
"""

from __future__ import annotations

import re
from pathlib import Path

from validate.public.common import Header, join_notes, map_gpu, map_model, number, read_header, tables
from validate.public.schema import Row, row

KIND = "trtllm_perf"

# What each doc version says its numbers are (read from the doc's text; the raw file header repeats it).
VERSIONS = {
    "trtllm-perf-v0.17.md": dict(published="TensorRT-LLM v0.17 perf overview", engine_version="0.17",
                                 metric="output_tokens_per_s",
                                 metric_note="the doc says token throughput in tokens/s; its example trtllm-bench output "
                                             "shows that figure equals requests/s × output length, i.e. output tokens/s "
                                             "of the whole TP group"),
    "trtllm-perf-v0.20.md": dict(published="TensorRT-LLM v0.20 perf overview", engine_version="0.20",
                                 metric="output_tokens_per_s",
                                 metric_note="`Total Output Throughput (tokens/sec)`: all GPUs of the run together"),
    "trtllm-perf-v1.0.md": dict(published="TensorRT-LLM v1.0 perf overview", engine_version="1.0",
                                metric="output_tokens_per_s",
                                metric_note="`Total Output Throughput (tokens/sec)`: all GPUs of the run together"),
    "trtllm-perf-v1.2.md": dict(published="TensorRT-LLM perf overview (developer-guide, rendered as 1.2.0 docs)",
                                engine_version="1.2 (doc version; the file names none)",
                                metric="output_tokens_per_s_per_gpu", metric_note=""),
}


def _num_requests(text: str) -> dict[tuple[int, int], int]:
    out: dict[tuple[int, int], int] = {}
    for heading, rows in tables(text):
        if heading != "num_requests":
            continue
        for cells in rows[1:]:
            out[(int(cells[0]), int(cells[1]))] = int(cells[-1])
    return out


def _precision(label: str, model_id: str) -> tuple[str, str]:
    p = label.strip().upper()
    if p == "FP8":
        if model_id.startswith("openai/gpt-oss"):
            return "fp8", ("column labelled FP8; gpt-oss ships MXFP4 expert weights and Hopper has no FP4 tensor cores, "
                           "so what runs in FP8 (weights, activations or KV) is not stated; scored as FP8 weights")
        return "fp8", ""
    if p == "FP16":
        return "fp16", ""
    if p == "FP4":
        if model_id.startswith("openai/gpt-oss"):
            return "mxfp4", "column labelled FP4; gpt-oss's own checkpoint format is MXFP4"
        return "nvfp4", "FP4 = NVIDIA ModelOpt NVFP4 checkpoint"
    raise ValueError(f"unknown precision label {label!r}")


def _kv(version_file: str, weight: str, model_id: str, gpu: str) -> tuple[str, str]:
    if version_file == "trtllm-perf-v0.17.md":
        if weight == "fp8":
            return "fp8", "the doc says FP8 quantization sets the KV cache to FP8"
        return "fp16", ""
    if version_file == "trtllm-perf-v1.2.md":
        blackwell = gpu in ("b200", "gb200", "b300", "gb300", "rtx-pro-6000")
        if model_id == "deepseek-ai/DeepSeek-R1" or (model_id.startswith("openai/gpt-oss") and blackwell):
            return "fp8", "KV dtype fp8 per the doc's llm_options for this model"
    return "unstated", "KV-cache precision not stated (ModelOpt checkpoints usually carry an FP8 KV cache)"


def _parallel(spec: str) -> dict:
    """'TP4' / 'DEP4' / 'TP2,PP2' / 'DEP2,PP2' -> tp, ep, dp, pp and a note."""
    tp = ep = dp = pp = 1
    note = ""
    for part in spec.replace(" ", "").split(","):
        m = re.fullmatch(r"(DEP|TP|PP)(\d+)", part)
        if not m:
            raise ValueError(f"bad parallel spec {spec!r}")
        kind, n = m.group(1), int(m.group(2))
        if kind == "TP":
            tp = n
        elif kind == "PP":
            pp = n
        else:
            tp, ep, dp = n, n, n
            note = (f"DEP{n}: attention data-parallel over {n} GPUs with expert parallel {n} "
                    f"(trtllm-bench --tp {n} --ep {n}, enable_attention_dp)")
    return dict(tp=tp, ep=ep, dp=dp, pp=pp, note=note)


class _Ctx:
    def __init__(self, path: Path, text: str, header: Header):
        self.path, self.text, self.header = path, text, header
        self.meta = VERSIONS[path.name]
        self.nreq = _num_requests(text)
        self.rows: list[Row] = []
        self.skipped: dict[str, int] = {}

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1

    def add(self, model_name: str, gpu_name: str, precision_label: str, par: dict, num_gpus: int,
            isl: int, osl: int, value: float, extra_note: str = "") -> None:
        m = map_model(model_name)
        if m is None:
            self.skip(f"no model config for {model_name}")
            return
        gpu = map_gpu(gpu_name)
        if gpu is None:
            self.skip(f"no GPU spec for {gpu_name}")
            return
        model_id, model_note = m
        weight, wnote = _precision(precision_label, model_id)
        kv, kvnote = _kv(self.path.name, weight, model_id, gpu)
        nreq = self.nreq.get((isl, osl))
        pp_note = (f"pipeline parallel {par['pp']} (how many micro-batches the run kept in flight is not stated)"
                   if par["pp"] > 1 else "")
        self.rows.append(row(
            row_id=f"{self.header['source_id']}:{len(self.rows):04d}", source_id=self.header["source_id"],
            source_kind=KIND, source_url=self.header["url"], source_commit=self.header["commit"],
            source_path=f"data/public/raw/{self.path.name}", published=self.meta["published"],
            read_on=self.header["read"], engine="trtllm", engine_version=self.meta["engine_version"], gpu=gpu,
            num_gpus=num_gpus, tp=par["tp"], ep=par["ep"], dp=par["dp"], pp=par["pp"], model=model_id,
            model_published=model_name, weight_precision=weight, kv_precision=kv, isl=isl, osl=osl, lengths="fixed",
            load="offline", num_requests=nreq, metric=self.meta["metric"], statistic="aggregate", value=value,
            note=join_notes(self.meta["metric_note"], model_note, wnote, kvnote, par["note"], pp_note, extra_note,
                            "" if nreq else "request count for this shape not in the doc's num_requests table"),
        ))


def _v017(ctx: _Ctx) -> None:
    (_, rows), = [t for t in tables(ctx.text) if t[0] != "num_requests"]
    gpus = rows[0][3:]
    precisions = rows[1][3:]
    model = tp = None
    for cells in rows[3:]:
        model = cells[0] or model
        tp = int(cells[1]) if cells[1] else tp
        isl, osl = (int(x) for x in cells[2].split(","))
        for gpu, prec, cell in zip(gpus, precisions, cells[3:]):
            v = number(cell)
            if v is not None:
                ctx.add(model, gpu, prec, dict(tp=tp, ep=1, dp=1, pp=1, note=""), tp, isl, osl, v)


def _v020(ctx: _Ctx) -> None:
    for heading, rows in tables(ctx.text):
        if heading == "num_requests":
            continue
        model, prec = heading.rsplit(" ", 1)
        gpu_row, tp_row = rows[0], rows[1]
        gpus, last = [], ""
        for g in gpu_row[2:]:
            last = g or last
            gpus.append(last)
        tps = [int(t) for t in tp_row[2:]]
        for cells in rows[3:]:
            if not cells[0]:
                continue
            isl, osl = (int(x) for x in cells[0].split(","))
            for gpu, tp, cell in zip(gpus, tps, cells[2:]):
                v = number(cell)
                if v is not None:
                    ctx.add(model, gpu, prec, dict(tp=tp, ep=1, dp=1, pp=1, note=""), tp, isl, osl, v)


HEADER_CELL = re.compile(r"^(?:\*\*(?P<n>\d+) GPUs\*\*)?(?P<gpu>[A-Z0-9 ]*)<br/>(?P<par>[A-Z0-9,]+) \((?P<prec>FP\d+)\)$")


def _v1(ctx: _Ctx) -> None:
    for heading, rows in tables(ctx.text):
        if heading == "num_requests":
            continue
        rtx = "RTX 6000 Pro" in heading
        model = heading.split(" - ")[0]
        cols = []
        for cell in rows[0][1:]:
            m = HEADER_CELL.match(cell)
            if not m:
                raise ValueError(f"{ctx.path.name}: bad column header {cell!r}")
            par = _parallel(m.group("par"))
            gpu = "RTX 6000 Pro" if rtx else m.group("gpu").strip()
            n = int(m.group("n")) if m.group("n") else par["tp"] * par["pp"]
            if n != par["tp"] * par["pp"]:
                raise ValueError(f"{ctx.path.name}: {cell!r}: GPU count {n} != tp×pp")
            cols.append((gpu, par, m.group("prec"), n))
        for cells in rows[1:]:
            isl, osl = (int(x) for x in cells[0].split("/"))
            for (gpu, par, prec, n), cell in zip(cols, cells[1:]):
                v = number(cell)
                if v is not None:
                    ctx.add(model, gpu, prec, par, n, isl, osl, v)


def import_file(path: Path) -> tuple[list[Row], dict[str, int]]:
    text = path.read_text()
    ctx = _Ctx(path, text, read_header(text))
    if path.name == "trtllm-perf-v0.17.md":
        _v017(ctx)
    elif path.name == "trtllm-perf-v0.20.md":
        _v020(ctx)
    else:
        _v1(ctx)
    return ctx.rows, ctx.skipped


FILES = tuple(sorted(VERSIONS))  # the raw files this importer reads, as build.py iterates them
