"""Importer for AMD's ROCm "performance results" page (vLLM on Instinct GPUs), data/public/raw/amd-rocm-perf-results.md:
one `## edition <date> | docker <tag> | vllm <version> | mirror <url>` section per edition of the page, each with
its throughput table (offline: all prompts at once) and, where read, the first rows of its latency table
(vLLM benchmark_latency: one batch of B requests end to end)."""

from __future__ import annotations

import re
from pathlib import Path

from validate.public.common import join_notes, map_model, read_header, tables
from validate.public.schema import Row, row

KIND = "amd_perf"
FILES = ("amd-rocm-perf-results.md",)
EDITION = re.compile(r"edition (?P<date>[\d-]+) \| docker (?P<docker>\S+) \| vllm (?P<vllm>\S+) \| mirror (?P<url>\S+)")


def import_file(path: Path) -> tuple[list[Row], dict[str, int]]:
    text = path.read_text()
    h = read_header(text)
    rows: list[Row] = []
    for heading, table in tables(text):
        ed = EDITION.fullmatch(heading)
        if not ed:
            raise ValueError(f"{path.name}: table under unexpected heading {heading!r}")
        cols = table[0]
        for cells in table[1:]:
            rec = dict(zip(cols, cells))
            model_id, model_note = map_model(rec["Model"])
            prec = rec["Precision"].lower()
            common = dict(
                source_id=h["source_id"], source_kind=KIND, source_url=ed.group("url"), source_commit=None,
                source_path=f"data/public/raw/{path.name}", published=f"edition of {ed.group('date')}",
                read_on=h["read"], engine="vllm", engine_version=f"{ed.group('vllm')} (ROCm, {ed.group('docker')})",
                gpu="mi300x", num_gpus=8, tp=int(rec["TP Size"]), model=model_id, model_published=rec["Model"],
                weight_precision=prec, kv_precision="fp8", isl=int(rec["Input"]), osl=int(rec["Output"]),
                lengths="fixed")
            kv_note = "FP8 KV cache by the checkpoint's name (-FP8-KV)"
            if "Throughput (tokens/s)" in rec:
                rows.append(row(
                    row_id=f"{h['source_id']}:{len(rows):04d}", load="offline", num_requests=int(rec["Num Prompts"]),
                    max_num_seqs=int(rec["Max Num Seqs"]), metric="output_tokens_per_s", statistic="aggregate",
                    value=float(rec["Throughput (tokens/s)"]),
                    note=join_notes("the page says 'Throughput (tokens/s)' without saying output or total tokens; "
                                    "taken as output tokens/s of the 8-GPU server", model_note, kv_note,
                                    "lengths taken as fixed (vLLM's throughput benchmark with random prompts of the "
                                    "given lengths; the page does not say)"),
                    **common))
            else:
                b = int(rec["Batch Size"])
                rows.append(row(
                    row_id=f"{h['source_id']}:{len(rows):04d}", load="batch", batch=b, num_requests=b,
                    metric="e2e_latency_s", statistic="mean", value=float(rec["Latency (sec)"]),
                    note=join_notes("vLLM benchmark_latency: one batch processed end to end", model_note, kv_note),
                    **common))
    return rows, {}
