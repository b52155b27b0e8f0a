"""The public measured corpus: published LLM-serving measurements, normalized to one row schema.

`data/public/raw/` holds pinned copies of each source's tables (numbers only, with the source line on top);
one importer per source kind turns them into `Row`s, and `python -m validate.public.build` rewrites
`data/public/rows.jsonl` from them deterministically. Nothing here downloads anything.
"""
