"""Numbers quoted in the README and docs/accuracy.md are what the committed data and calibrations give: the
accuracy tables are recomputed here (validate compare over data/measurements with the shipped calibrations, no
refit) and must equal the committed text. Regenerate both with `python scripts/accuracy_report.py`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import accuracy_report as report  # noqa: E402
from capacity.calibration import shipped_calibrations  # noqa: E402


@pytest.fixture(scope="module")
def comparisons():
    runs = report.vllm_runs()
    vllm_bf16 = shipped_calibrations()[("vllm", "h200-sxm", "bf16")]
    return report.vllm_comparison(runs), report.sglang_comparison(report.sglang_runs(), vllm_bf16)


def readme_region() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(report.README_START) + len(report.README_START)
    return text[start:text.index(report.README_END)].strip()


def test_readme_accuracy_table_is_generated(comparisons):
    df, sg = comparisons
    assert readme_region() == report.readme_table(df, sg), "rerun python scripts/accuracy_report.py"


def test_accuracy_doc_summaries_match_the_data(comparisons):
    df, sg = comparisons
    doc = (ROOT / "docs" / "accuracy.md").read_text()
    stale = "docs/accuracy.md is not what the committed data gives: rerun python scripts/accuracy_report.py"
    assert report.summary(df) in doc, stale
    assert report.summary(sg, report.SGLANG_MODES, ("fitted", "held out")) in doc, stale


def test_readme_rows_are_cells_of_the_doc_summary(comparisons):
    """Each README row is one (mode, split) row of docs/accuracy.md's summary, not a copy typed in."""
    df, sg = comparisons
    frames = {"vllm": df, "sglang": sg}
    for label, frame, mode, split in report.README_ROWS:
        s = report.summary_numbers(frames[frame], mode, split)
        label = report.readme_label(label, frames[frame], mode, split)
        line = next(row for row in readme_region().splitlines() if row.startswith(f"| {label} |"))
        assert line.endswith(f"| {s['ttft']} | {s['itl']} | {s['requests_per_s']} | {s['sync_itl_worst']} | "
                             f"{s['burst_worst']} |")
