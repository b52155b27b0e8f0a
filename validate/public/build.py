"""Rebuild data/public/rows.jsonl from the raw files, deterministically: `python -m validate.public.build`
(`--check` exits 1 if the committed file differs; `--out PATH` writes elsewhere)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from validate.public import amd_perf, inferencex, nim_tables, transcribed, trtllm_bench, trtllm_perf
from validate.public.common import RAW_DIR, ROWS_PATH
from validate.public.schema import Row

IMPORTERS = (trtllm_perf, trtllm_bench, amd_perf, nim_tables, inferencex, transcribed)


def build(raw_dir: Path = RAW_DIR) -> tuple[list[Row], dict[str, int]]:
    rows: list[Row] = []
    skipped: dict[str, int] = {}
    for imp in IMPORTERS:  # each importer reads its own raw files; skip counts are named by file
        for name in imp.FILES:
            r, s = imp.import_file(raw_dir / name)
            rows += r
            skipped.update({f"{name}: {k}": v for k, v in s.items()})
    ids = [r.row_id for r in rows]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate row ids")
    from capacity.model.architecture import catalog_ids
    from capacity.hardware import gpu_catalog
    models, gpus = {m.lower() for m in catalog_ids()}, set(gpu_catalog())
    bad = sorted({f"{r.row_id}: {r.model} on {r.gpu}" for r in rows if r.model.lower() not in models or r.gpu not in gpus})
    if bad:
        raise ValueError(f"rows whose model or GPU is not in the catalogs: {bad[:5]} …")
    used = {Path(r.source_path).name for r in rows}
    unread = sorted(p.name for p in raw_dir.iterdir() if p.is_file() and p.name not in used)
    if unread:
        raise ValueError(f"raw files no importer read: {unread}")
    return rows, skipped


def render(rows: list[Row]) -> str:
    return "".join(json.dumps(r.model_dump(mode="json"), ensure_ascii=False) + "\n" for r in rows)


def load_rows(path: Path = ROWS_PATH) -> list[Row]:
    return [Row.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=ROWS_PATH)
    ap.add_argument("--check", action="store_true", help="compare with the committed rows instead of writing")
    args = ap.parse_args(argv)
    rows, skipped = build()
    text = render(rows)
    if args.check:
        same = args.out.exists() and args.out.read_text() == text
        print("rows.jsonl is up to date" if same else "rows.jsonl differs from the raw files: rebuild it")
        return 0 if same else 1
    args.out.write_text(text)
    print(f"{len(rows)} rows from {len({r.source_id for r in rows})} sources -> {args.out}")
    for why, n in sorted(skipped.items()):
        print(f"  not imported: {n} × {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
