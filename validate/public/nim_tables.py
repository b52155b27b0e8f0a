"""Importer for NVIDIA NIM benchmarking tables (data/public/raw/nim-*.md): headings give the model, the NIM
version, the GPUs ("2 x H100 80G"), precision and TP ("fp8 TP2") and the lengths ("5000 Input Tokens / 500
Output Tokens"); each table is a closed-loop concurrency sweep with TTFT (ms), ITL (ms) and throughput (tokens/s)."""

from __future__ import annotations

import re
from pathlib import Path

from validate.public.common import join_notes, map_gpu, map_model, read_header
from validate.public.schema import Row, row

KIND = "nim_tables"
FILES = ("nim-benchmarking-llm.md",)


def import_file(path: Path) -> tuple[list[Row], dict[str, int]]:
    text = path.read_text()
    h = read_header(text)
    rows: list[Row] = []
    ctx: dict[str, str] = {}
    for line in text.splitlines():
        s = line.strip()
        if m := re.fullmatch(r"## (.+) Results", s):
            ctx["model"] = m.group(1)
        elif m := re.fullmatch(r"### Version: (\S+)", s):
            ctx["version"] = m.group(1)
        elif m := re.fullmatch(r"#### (\d+) x (.+)", s):
            ctx["n"], ctx["gpu"] = m.group(1), m.group(2)
        elif m := re.fullmatch(r"#### (\w+) TP(\d+)", s):
            ctx["prec"], ctx["tp"] = m.group(1).lower(), m.group(2)
        elif m := re.fullmatch(r"#### (\d+) Input Tokens / (\d+) Output Tokens", s):
            ctx["isl"], ctx["osl"] = m.group(1), m.group(2)
        elif s.startswith("|") and re.match(r"\|\s*\d", s):
            conc, ttft, itl, tput = (c.strip() for c in s.strip("|").split("|"))
            model_id, model_note = map_model(ctx["model"])
            gpu_name = ctx["gpu"].replace(" 80G", "")
            common = dict(
                source_id=h["source_id"], source_kind=KIND, source_url=h["url"], source_commit=None,
                source_path=f"data/public/raw/{path.name}", published=f"NIM benchmarking guide, NIM {ctx['version']} table",
                read_on=h["read"], engine="nim", engine_version=f"NIM {ctx['version']} (backend not stated)",
                gpu=map_gpu(gpu_name), num_gpus=int(ctx["n"]), tp=int(ctx["tp"]), model=model_id,
                model_published=ctx["model"], weight_precision=ctx["prec"], kv_precision="unstated",
                isl=int(ctx["isl"]), osl=int(ctx["osl"]), lengths="unstated", load="concurrency",
                concurrency=int(conc))
            base = join_notes(model_note, "H100 80G taken as H100 SXM (the page's hardware section was not read)",
                              "NIM picks a TensorRT-LLM or vLLM profile; which one ran is not stated")
            for metric, stat, v, note in (
                ("ttft_s", "mean", float(ttft) / 1e3, "statistic not stated at the table (AIPerf reports averages); TTFT includes queueing at high concurrency"),
                ("itl_s", "mean", float(itl) / 1e3, "statistic not stated at the table; AIPerf ITL = (latency - TTFT)/(output tokens - 1)"),
                ("output_tokens_per_s", "aggregate", float(tput), "'Throughput (Tokens/s)' taken as AIPerf's output token throughput of the 2-GPU server"),
            ):
                rows.append(row(row_id=f"{h['source_id']}:{len(rows):04d}", metric=metric, statistic=stat, value=v,
                                note=join_notes(base, note), **common))
    return rows, {}
