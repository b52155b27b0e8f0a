"""docs/load-model.md is generated from the committed measurements, predictions and shipped calibrations: it must
not drift from them (rerun `python scripts/simulator_accuracy.py --doc docs/load-model.md`)."""

from __future__ import annotations

import glob
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))


def test_load_model_doc_is_generated_from_committed_data():
    import simulator_accuracy as sa

    paths = sorted(str(Path(p).parent.relative_to(ROOT)) for p in glob.glob(str(ROOT / sa.DATA) + "/*/*/*/points.jsonl"))
    df = pd.DataFrame(sa.rows(paths))
    fresh = sa.render(df).splitlines()
    committed = (ROOT / "docs/load-model.md").read_text().splitlines()
    # the timing line depends on the machine; every other line is data
    keep = lambda lines: [x for x in lines if not x.startswith("Simulator time per point")]  # noqa: E731
    assert keep(committed) == keep(fresh)
