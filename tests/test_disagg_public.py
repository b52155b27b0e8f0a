"""Issue 21's check of the disaggregated model against published measurements: the rows rebuild from the raw
files, every row parses and is either scored or refused with a reason, the generated doc sections match the code,
and the script's xPyD evaluation is the model's own (one_p_one_d at 1P1D, search's pricing of a layout)."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script():
    if "score_disagg" in sys.modules:
        return sys.modules["score_disagg"]
    spec = importlib.util.spec_from_file_location("score_disagg", ROOT / "scripts" / "score_disagg.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["score_disagg"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def sd():
    return _script()


@pytest.fixture(scope="module")
def scored(sd):
    rows = sd.load_rows(sd.ROWS)
    return rows, sd.score(rows)


def test_rows_rebuild_from_the_raw_files():
    from validate.public import disagg

    assert disagg.render(disagg.build()) == disagg.ROWS.read_text(), \
        "data/public/disagg_rows.jsonl differs from data/public/raw/disagg/: run python -m validate.public.disagg"


def test_every_row_parses_and_is_scored_or_refused(scored):
    from validate.public.disagg import DisaggRow

    rows, outcomes = scored
    lines = [line for line in (ROOT / "data/public/disagg_rows.jsonl").read_text().splitlines() if line.strip()]
    assert len(lines) == len(rows) == len(outcomes) > 0
    for line in lines:
        DisaggRow.model_validate_json(line)
    for o in outcomes:
        if o.refused is not None:
            assert o.predicted is None and len(o.refused) > 20, o.row.row_id
        else:
            assert o.predicted is not None and math.isfinite(o.predicted) and o.predicted > 0, o.row.row_id
    assert {o.row.row_id for o in outcomes} == {r.row_id for r in rows}
    assert any(o.predicted is not None for o in outcomes)


def test_refusals_name_what_the_model_cannot_express(scored):
    _, outcomes = scored
    by_id = {o.row.row_id: o for o in outcomes}
    for o in outcomes:
        r = o.row
        if r.speculative != "none" or any(p is not None and p.dp_attention for p in (r.prefill, r.decode)):
            assert o.refused, f"{r.row_id}: MTP or attention-DP rows must be refused"
    # every phase-alone row of the 96-H100 post is refused (wide EP with DP attention), none silently
    lmsys = [o for i, o in by_id.items() if i.startswith("lmsys-large-scale-ep:")]
    assert lmsys and all(o.refused for o in lmsys)


def test_generated_sections_match_the_code(sd, scored):
    rows, outcomes = scored
    d_old, a_old = sd.DISAGG_DOC.read_text(), sd.ACCURACY_DOC.read_text()
    assert sd.PUBLIC_START in a_old, ("docs/accuracy.md lost its disagg-public block (scripts/accuracy_report.py must "
                                      "keep it): run python scripts/score_disagg.py")
    d_new, a_new = sd.render(d_old, a_old, rows, outcomes, sd.context(rows, outcomes))
    assert d_new == d_old, "docs/disagg.md's disagg-check section drifted: run python scripts/score_disagg.py"
    assert a_new == a_old, "docs/accuracy.md's disagg-public block drifted: run python scripts/score_disagg.py"


@pytest.mark.parametrize("load,value", [("concurrency", 16), ("rate", 5.0)])
def test_xpyd_is_1p1d_scaled(load, value):
    """capacity.disagg.xpyd_point (the scorer's layout evaluation): k prefill and k decode instances at k times the
    load serve each pair exactly as one 1P1D pair serves the load alone."""
    from capacity.disagg import link_catalog, one_p_one_d, xpyd_point
    from capacity.estimate import Scenario

    s = Scenario(model="meta-llama/Llama-3.1-8B", gpu="h200-sxm", isl=1024, osl=128)
    link = link_catalog()["ib-ndr"]
    one = one_p_one_d(s, load, value, link, True, 1, 2)
    three = xpyd_point(s, load, 3 * value, link, 3, 3, 1, 2)
    assert three.requests_per_s == pytest.approx(3 * one.requests_per_s, rel=1e-6)
    assert (three.ttft_s, three.itl_s) == pytest.approx((one.ttft_s, one.itl_s), rel=1e-6)


def test_xpyd_prices_a_layout_as_search_does(sd):
    from capacity.disagg import search
    from capacity.estimate import Scenario

    s = Scenario(model="meta-llama/Llama-3.1-8B", gpu="h200-sxm", isl=1024, osl=128)
    rate = 50.0
    a = search(s, rate, 10.0, 1.0, [1, 2])
    layouts = [p for p in a.pareto_front if p.kind == "disaggregated"]
    assert layouts
    for p in layouts:
        link = sd.layout_link(s.gpu, p.num_gpus)
        assert link.id == p.link
        pt = sd.xpyd_point(s, "rate", rate, link, p.prefill_instances, p.decode_instances, p.prefill_tp, p.decode_tp)
        assert pt.ttft_s == pytest.approx(p.ttft_s, rel=1e-9)
        assert pt.itl_s == pytest.approx(p.itl_s, rel=1e-9)
        assert pt.kv_transfer_s == pytest.approx(p.kv_transfer_s, rel=1e-9)


def test_id_ranges_lists_every_id(sd):
    ids = ["a:0001", "a:0002", "a:0003", "a:0007", "b:0000"]
    assert sd.id_ranges(ids) == "a: 0001–0003, 0007; b: 0000"
