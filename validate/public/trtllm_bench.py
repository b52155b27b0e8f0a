"""Importer for trtllm-bench `PERFORMANCE OVERVIEW` blocks quoted in TensorRT-LLM blog posts
(data/public/raw/trtllm-*-blog.txt): each `[section ...]` restates the published configuration as key = value
lines, followed by the block's own `Name (unit): value` lines."""

from __future__ import annotations

import re
from pathlib import Path

from validate.public.common import join_notes, map_model, read_header
from validate.public.schema import Row, row

KIND = "trtllm_bench"
FILES = ("trtllm-dsr1-blog.txt",)

# block line -> (metric, statistic, scale to SI)
LINES = {
    "Request Throughput (req/sec)": ("requests_per_s", "aggregate", 1.0),
    "Total Output Throughput (tokens/sec)": ("output_tokens_per_s", "aggregate", 1.0),
    "Total Token Throughput (tokens/sec)": ("total_tokens_per_s", "aggregate", 1.0),
    "Average request latency (ms)": ("e2e_latency_s", "mean", 1e-3),
}
# Per-GPU output throughput is the total divided by the GPU count: not imported twice.


def _sections(text: str) -> list[tuple[str, dict[str, str], dict[str, float]]]:
    out = []
    name, conf, block = None, {}, {}
    for line in text.splitlines() + ["[section end]"]:
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        m = re.fullmatch(r"\[section (.+)\]", s)
        if m:
            if name is not None:
                out.append((name, conf, block))
            name, conf, block = m.group(1), {}, {}
            continue
        if " = " in s and not re.search(r"\):\s", s):
            k, _, v = s.partition(" = ")
            conf[k.strip()] = v.strip()
            continue
        k, _, v = s.rpartition(":")
        block[k.strip()] = float(v)
    return out


def import_file(path: Path) -> tuple[list[Row], dict[str, int]]:
    text = path.read_text()
    h = read_header(text)
    rows: list[Row] = []
    skipped: dict[str, int] = {}
    for name, c, block in _sections(text):
        model_id, model_note = map_model(c["model_published"])
        kv = c["kv_precision"]
        for line, value in block.items():
            if line not in LINES:
                skipped[f"{name}: {line} (derived or not scored)"] = 1
                continue
            metric, stat, scale = LINES[line]
            rows.append(row(
                row_id=f"{h['source_id']}:{len(rows):04d}", source_id=h["source_id"], source_kind=KIND,
                source_url=h["url"], source_commit=h["commit"], source_path=f"data/public/raw/{path.name}",
                published="TensorRT-LLM blog: best performance practice on DeepSeek-R1", read_on=h["read"],
                engine="trtllm", engine_version=c["engine_version"], gpu=c["gpu"], num_gpus=int(c["num_gpus"]),
                tp=int(c["tp"]), ep=int(c["ep"]), dp=int(c["tp"]) if c["attention_dp"] == "true" else 1, pp=1,
                model=model_id, model_published=c["model_published"], weight_precision=c["weight_precision"],
                kv_precision=kv, isl=int(c["isl"]), osl=int(c["osl"]), lengths="fixed", load="concurrency",
                concurrency=int(c["concurrency"]), num_requests=int(c["num_requests"]),
                max_num_seqs=int(c["max_batch_size"]) * int(c["tp"]) if c["attention_dp"] == "true" else int(c["max_batch_size"]),
                metric=metric, statistic=stat, value=value * scale,
                note=join_notes(f"section {name}", "trtllm-bench --concurrency (closed loop) with "
                                f"max_batch_size {c['max_batch_size']} per rank and max_num_tokens {c['max_num_tokens']}",
                                "attention data-parallel over the 8 ranks with expert parallel 8" if c["attention_dp"] == "true" else "",
                                model_note, "KV precision not stated for this section" if kv == "unstated" else "",
                                c.get("note", "")),
            ))
    return rows, skipped
