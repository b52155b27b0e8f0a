"""Importer for small tables transcribed one row per published number (data/public/raw/*.csv): `#` header lines
name the source (source_id, url, repo/commit or read date, published), then a CSV whose columns are the row
schema's own fields. Used where a source's table is too small or too irregular for a parser of its own."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from validate.public.common import join_notes, map_model, read_header
from validate.public.schema import Row, row

KIND = "transcribed"
FILES = ("amd-vllm-fp8-mi300x.csv", "oracle-mi300x-llama405b.csv")
INT_FIELDS = ("num_gpus", "tp", "isl", "osl", "num_requests", "max_num_seqs")


def import_file(path: Path) -> tuple[list[Row], dict[str, int]]:
    text = path.read_text()
    h = read_header(text)
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    rows: list[Row] = []
    for rec in csv.DictReader(io.StringIO(body)):
        model_id, model_note = map_model(rec["model_published"])
        fields = {k: v for k, v in rec.items() if v != ""}
        for k in INT_FIELDS:
            if k in fields:
                fields[k] = int(fields[k])
        kind = fields.pop("load_kind")
        load_value = fields.pop("load_value", None)
        if load_value is not None:
            fields[kind] = float(load_value) if kind == "rate" else int(load_value)
        fields["load"] = kind
        fields["value"] = float(fields["value"])
        note = join_notes(fields.pop("note", ""), model_note)
        rows.append(row(row_id=f"{h['source_id']}:{len(rows):04d}", source_id=h["source_id"], source_kind=KIND,
                        source_url=h["url"], source_commit=h.get("commit"), source_path=f"data/public/raw/{path.name}",
                        published=h.get("published") or "undated web page", read_on=h["read"],
                        model=model_id, note=note, **fields))
    return rows, {}
